// Deno permission denials (`NotCapable`) surface as `configuration` errors naming the
// `--allow-*` flag that grants the access: each case runs a child `deno run` with real,
// restricted permissions (from any runtime: the child is always the pinned Deno).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const repository = fileURLToPath(new URL("../../../", import.meta.url));
const deno = join(repository, "node_modules/.bin/deno");
const child = fileURLToPath(new URL("./_deno_permission_child.ts", import.meta.url));

interface Outcome {
  readonly name: string;
  readonly code?: string;
  readonly message?: string;
}

function runChild(flags: readonly string[], args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    execFile(
      deno,
      ["run", "--no-prompt", "--quiet", `--config=${join(repository, "deno.json")}`, ...flags, child, ...args],
      { encoding: "utf8", timeout: 120_000 },
      (error, stdout, stderr) => {
        const line = stdout.trim().split("\n").at(-1) ?? "";
        try {
          resolve(JSON.parse(line));
        } catch {
          reject(new Error(`the child printed no outcome (${error?.message ?? "exit 0"}): ${stdout} ${stderr}`));
        }
      },
    );
  });
}

async function withDirectory(fn: (directory: string) => Promise<void>): Promise<void> {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-deno-perm-")));
  try {
    await fn(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function assertDenied(outcome: Outcome, action: string, kind: string, target: string): void {
  assert.equal(outcome.name, "SandboxConfigurationError", JSON.stringify(outcome));
  assert.equal(outcome.code, "configuration");
  assert.ok(
    outcome.message?.startsWith(`Cannot ${action}`) &&
      outcome.message.includes(`Deno denied ${kind} access to ${JSON.stringify(target)}; run deno with --allow-${kind}=${target} (see the README's "Deno permissions")`),
    outcome.message,
  );
  assert.equal(outcome.message?.match(/Cannot/g)?.length, 1, outcome.message);
}

test("DockerSandboxReservation.start under Deno names each missing --allow flag in turn, then reaches the socket", async () => {
  await withDirectory(async (directory) => {
    const spill = join(directory, "spill");
    await mkdir(spill);
    const socket = join(directory, "docker.sock");
    const args = ["start", socket, spill];
    assertDenied(await runChild([], args), "use spill directory", "read", spill);
    assertDenied(await runChild([`--allow-read=${spill}`], args), "use spill directory", "sys", "uid");
    const read = `--allow-read=${spill},${socket}`;
    assertDenied(await runChild([`--allow-read=${spill}`, "--allow-sys=uid"], args), "start sandbox", "read", socket);
    assertDenied(await runChild([read, "--allow-sys=uid"], args), "start sandbox", "write", socket);
    assertDenied(await runChild([read, `--allow-write=${socket}`, "--allow-sys=uid"], args), "start sandbox", "net", `unix:${socket}`);
    // With the documented flags nothing is denied: the start reaches the (missing) socket.
    const granted = await runChild([read, `--allow-write=${socket}`, `--allow-net=unix:${socket}`, "--allow-sys=uid"], args);
    assert.equal(granted.name, "SandboxEngineError", JSON.stringify(granted));
    assert.match(granted.message ?? "", /ENOENT.*check config\.endpoint/);
  });
});

test("importDirectory, exportToDirectory and createFileRecoveryStore under Deno name the missing --allow-read / --allow-write flag", async () => {
  await withDirectory(async (directory) => {
    const source = join(directory, "project");
    await mkdir(source);
    assertDenied(await runChild([], ["import", source]), "import directory", "read", source);
    const target = join(directory, "out");
    assertDenied(await runChild([`--allow-read=${directory}`], ["export", target]), "export to directory", "write", directory);
    const records = join(directory, "records");
    assertDenied(await runChild([`--allow-read=${directory}`], ["store", records]), "open the recovery store", "write", records);
  });
});

test("forwardPort under Deno names --allow-net=<hostname> for its listener, and listens with it", async () => {
  assertDenied(await runChild([], ["forward"]), "forward port 80 of the sandbox", "net", "127.0.0.1");
  const granted = await runChild(["--allow-net=127.0.0.1"], ["forward"]);
  assert.equal(granted.name, "none", JSON.stringify(granted));
});
