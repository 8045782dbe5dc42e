// The newcomer's path, straight from the docs: the hello-world block (README.md) and the
// Ctrl-C block (docs/recovery.md) are cut out of the pages themselves, written into a scratch directory outside the repository, linked
// to this checkout the way Install says, and run with the README's own command line on
// this lane's runtime (Node, Deno with exactly the documented flags, or Bun) against the
// lane's engine. README and test cannot drift apart: change one and the other follows or
// this fails.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { busyboxImage, endpoint, engineTest, eventually } from "./_engine.ts";
import { resourcesOf } from "./_namespace.ts";
import { DEFAULT_OPEN_NAMESPACE } from "../../lib/docker/open_sandbox.ts";

const repository = await realpath(fileURLToPath(new URL("../../", import.meta.url)));
// The hello world is in the README, the Ctrl-C program in the recovery page.
const readme = await readFile(join(repository, "README.md"), "utf8") + await readFile(join(repository, "docs", "recovery.md"), "utf8");
const runtime = (globalThis as { Deno?: unknown }).Deno !== undefined
  ? "deno"
  : (globalThis as { Bun?: unknown }).Bun !== undefined
  ? "bun"
  : "node";

/** The fenced block right after `<!-- newcomer-test: name -->` in README.md or docs/recovery.md. */
function block(name: string): string {
  const match = new RegExp(`<!-- newcomer-test: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\`\\n`, "u").exec(readme);
  assert.ok(match, `README.md and docs/recovery.md have no block marked newcomer-test: ${name}`);
  return match[1];
}

/** The README command line of `block` that starts with `prefix`, with this checkout and socket put in. */
function commandLine(name: string, prefix: string): string[] {
  const line = block(name).split("\n").find((candidate) => candidate.startsWith(`${prefix} `));
  assert.ok(line, `README.md block ${name} has no line starting with "${prefix} "`);
  const socket = endpoint!.slice("unix://".length);
  return line.replaceAll("/path/to/checkout", repository).replaceAll("/var/run/docker.sock", socket).split(" ").filter(Boolean);
}

interface Finished {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: readonly string[], cwd: string): Promise<Finished> {
  const [file, ...args] = command;
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: programEnv(), encoding: "utf8", timeout: 180_000 }, (error, stdout, stderr) => {
      const failure = error as (Error & { code?: unknown; signal?: string }) | null;
      resolve({ code: failure ? (typeof failure.code === "number" ? failure.code : -1) : 0, signal: failure?.signal ?? null, stdout, stderr });
    });
  });
}

/** What the README tells the reader to export, and nothing of this repository's. */
function programEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TMPDIR", "LANG", "DENO_DIR", "XDG_CACHE_HOME"]) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return { ...env, AGENTCELL_ENGINE: endpoint!, AGENTCELL_IMAGE: busyboxImage };
}

/** The README's run command for this lane's runtime, run with this very runtime binary. */
function runCommand(name: string, prefix: string): string[] {
  const [, ...rest] = commandLine(name, prefix);
  return [process.execPath, ...rest];
}

/** A scratch project outside the repository, linked to this checkout as Install says. */
async function withProject(fn: (directory: string) => Promise<void>): Promise<void> {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-newcomer-")));
  assert.ok(relative(repository, directory).startsWith(".."), `${directory} is outside ${repository}`);
  try {
    await writeFile(join(directory, "package.json"), JSON.stringify({ name: "newcomer", private: true, type: "module" }));
    if (runtime === "node") {
      const installed = await run(commandLine("checkout", "npm install").concat("--no-audit", "--no-fund"), directory);
      assert.equal(installed.code, 0, installed.stderr);
    } else if (runtime === "bun") {
      const [, ...rest] = commandLine("checkout", "bun add");
      const installed = await run([process.execPath, ...rest], directory);
      assert.equal(installed.code, 0, installed.stderr);
    }
    await fn(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

engineTest(`README hello world runs from a scratch project on ${runtime} with the documented setup`, async (engine) => {
  await withProject(async (directory) => {
    await writeFile(join(directory, "hello.ts"), block("hello"));
    const before = new Set(await resourcesOf(engine, DEFAULT_OPEN_NAMESPACE));
    const result = await run(runCommand("run", runtime), directory);
    assert.equal(result.code, 0, `exit ${result.code} ${result.signal ?? ""}\n${result.stdout}\n${result.stderr}`);
    assert.equal(result.stdout, 'hello from uid 65534 {"kind":"exited","code":0}\n');
    // Nothing of this run is left: anything new under the namespace belongs to a concurrent
    // run of this test and goes away on its own; ours would stay.
    await eventually("no new resources of the hello world on the engine", async () => {
      const left = (await resourcesOf(engine, DEFAULT_OPEN_NAMESPACE)).filter((name) => !before.has(name));
      return left.length === 0 ? true : undefined;
    });
  });
}, { timeout: 300_000 });

engineTest(`the ACP entry point @agentcell/docker/acp resolves from a scratch project on ${runtime} with the documented setup`, async () => {
  await withProject(async (directory) => {
    await writeFile(join(directory, "acp.ts"), 'import { startAcpSession } from "@agentcell/docker/acp";\nconsole.log(typeof startAcpSession);\n');
    const result = await run(runCommand("run", runtime).map((part) => part === "hello.ts" ? "acp.ts" : part), directory);
    assert.equal(result.code, 0, `exit ${result.code} ${result.signal ?? ""}\n${result.stdout}\n${result.stderr}`);
    assert.equal(result.stdout, "function\n");
  });
}, { timeout: 300_000 });

engineTest(`README Ctrl-C block cleans up on SIGINT on ${runtime}`, async (engine) => {
  await withProject(async (directory) => {
    await writeFile(join(directory, "host.ts"), block("ctrl-c"));
    const [file, ...args] = runCommand("run", runtime).map((part) => part === "hello.ts" ? "host.ts" : part);
    const child = spawn(file, args, { cwd: directory, env: programEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const running = await eventually("the host to report its running sandbox", () => /^running (\S+) (\S+);/m.exec(stdout) ?? undefined, { deadlineMs: 120_000 })
      .catch((error) => {
        child.kill("SIGKILL");
        throw new Error(`${(error as Error).message}\n${stdout}\n${stderr}`);
      });
    const [, keeperId, volumeName] = running;
    assert.equal((await engine.fetch(`/containers/${keeperId}/json`)).status, 200, "the keeper runs before the signal");
    // Sent as Ctrl-C would be, from outside (Deno's `child.kill` reports the child as
    // signalled even when it handled the signal and exited with its own code).
    process.kill(child.pid!, "SIGINT");
    assert.equal(await exited, 130, `${stdout}\n${stderr}`);
    assert.match(stdout, /^SIGINT: cleaned up$/m);
    const keeper = await engine.fetch(`/containers/${keeperId}/json`);
    const volume = await engine.fetch(`/volumes/${volumeName}`);
    await Promise.all([keeper.body?.cancel(), volume.body?.cancel()]);
    assert.deepEqual([keeper.status, volume.status], [404, 404], "the keeper and its volume are gone");
  });
}, { timeout: 300_000 });
