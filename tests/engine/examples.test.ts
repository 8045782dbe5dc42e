// The examples a newcomer runs first, run as they would: failures print one line that
// says what to do (no stack trace), and the quick start leaves nothing in the temp directory
// however it ends.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { busyboxImage, endpoint, engineTest, runtimeCommand } from "./_engine.ts";

const repository = fileURLToPath(new URL("../../", import.meta.url));

interface Finished {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runExample(example: string, args: readonly string[], env: Record<string, string | undefined>): Promise<Finished> {
  const [command, base] = runtimeCommand(join(repository, "examples", example));
  return new Promise((resolve) => {
    execFile(command, [...base, ...args], { cwd: repository, env: { ...process.env, ...env }, encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ code: error ? (typeof code === "number" ? code : -1) : 0, stdout, stderr });
    });
  });
}

/** A fresh temporary directory for the child's TMPDIR, and whether it is empty afterwards. */
async function withTemp(fn: (directory: string) => Promise<void>): Promise<void> {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-example-tmp-")));
  try {
    await fn(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

const noStack = (text: string) => assert.doesNotMatch(text, /^\s+at /m, `a stack trace was printed:\n${text}`);

engineTest("examples/quickstart.ts without an image says what to set and makes nothing", async () => {
  await withTemp(async (temp) => {
    const result = await runExample("quickstart.ts", [], { AGENTCELL_ENGINE: endpoint, AGENTCELL_IMAGE: undefined, TMPDIR: temp });
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stderr, "Cannot run the quick start: set AGENTCELL_IMAGE to a local image ID (sha256:…); examples/prepare-image.ts makes one\n");
    assert.deepEqual(await readdir(temp), []);
  });
});

engineTest("examples/quickstart.ts with an invalid image prints the typed error in one line and removes its scratch directory", async () => {
  await withTemp(async (temp) => {
    const result = await runExample("quickstart.ts", [], { AGENTCELL_ENGINE: endpoint, AGENTCELL_IMAGE: "busybox:latest", TMPDIR: temp });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^SandboxConfigurationError \[configuration\]: Cannot create Docker sandbox backend: config\.imageDigest must be sha256: /);
    assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    noStack(result.stderr);
    assert.deepEqual(await readdir(temp), [], "the agentcell-quickstart-* scratch directory was removed");
  });
});

engineTest("examples/quickstart.ts runs to zero leftovers and removes its scratch directory", async () => {
  await withTemp(async (temp) => {
    const result = await runExample("quickstart.ts", [], { AGENTCELL_ENGINE: endpoint, AGENTCELL_IMAGE: busyboxImage, TMPDIR: temp });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^state destroyed; \d+ recovery records written; leftovers: 0$/m);
    assert.deepEqual(await readdir(temp), []);
  });
}, { timeout: 180_000 });

engineTest("examples/prepare-image.ts with an absent source says how to get it, in one line", async () => {
  const result = await runExample("prepare-image.ts", [endpoint!, "agentcell-absent-image:never"], {});
  assert.equal(result.code, 1, result.stderr);
  assert.equal(
    result.stderr,
    `Cannot prepare an image from agentcell-absent-image:never: it is not a local image of this engine (No such image: agentcell-absent-image:never); ` +
      `pull or load it first (docker -H ${endpoint} pull agentcell-absent-image:never), or list local images with docker -H ${endpoint} image ls\n`,
  );
  assert.equal(result.stdout, "");
});
