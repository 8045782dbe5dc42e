// One export at a time per sandbox on a real Engine: a second export is refused at once
// while one is open, a failing exportToDirectory releases its stream, and a guest name that
// is not UTF-8 is unsupported.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxConfigurationError, SandboxConflictError, SandboxStateError, SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { exportToDirectory } from "../../lib/docker/files/export_to_directory.ts";
import { engineTest } from "./_engine.ts";
import { readExport, runGuest } from "./_files.ts";
import { withSandbox } from "./_sandbox.ts";

/** Rejects when `promise` takes longer than `ms` milliseconds: a hang on the container lock (a bound far above any machine's time). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const busy = (error: unknown) =>
  error instanceof SandboxStateError && error.code === "invalid_state" &&
  /another export of this sandbox is still open; read it to the end or cancel it/.test(error.message);

engineTest("DockerSandbox exportTree refuses a second export at once while one is open, and exports again after it ends", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await runGuest(sandbox, "mkdir -p out && printf one > out/a && printf two > out/b");
    await sandbox.stop();

    const first = await sandbox.exportTree({ kind: "subtree", path: "work/out" });
    // Refused, not queued: were it waiting for the slot, this would never settle while the
    // first export stays open and unread.
    await assert.rejects(sandbox.exportTree({ kind: "workspace" }), busy);

    // Partly read, then cancelled: the slot is free again.
    const reader = first.getReader();
    assert.equal((await reader.read()).value?.path, "work/out");
    await reader.cancel();
    reader.releaseLock();
    const second = await within(sandbox.exportTree({ kind: "subtree", path: "work/out" }), 30_000, "the export after a cancel");
    await assert.rejects(sandbox.exportTree({ kind: "file", path: "work/out/a" }), busy);

    // Read to its end: free again.
    assert.deepEqual((await readExport(second)).map((e) => e.path), ["work/out", "work/out/a", "work/out/b"]);
    const third = await within(readExport(await sandbox.exportTree({ kind: "file", path: "work/out/a" })), 30_000, "the export after a full read");
    assert.equal(third[0].size, 3);

    // A failed opening (missing path) does not keep the slot.
    await assert.rejects(sandbox.exportTree({ kind: "file", path: "work/out/none" }), SandboxConfigurationError);
    await within(readExport(await sandbox.exportTree({ kind: "file", path: "work/out/b" })), 30_000, "the export after a failed opening");
  });
});

engineTest("exportToDirectory failing its checks (existing target, missing parent) cancels the export so the next one completes promptly", async (engine) => {
  const root = await mkdtemp(join(tmpdir(), "agentcell-files-slot-"));
  try {
    await withSandbox(engine, async (sandbox) => {
      await runGuest(sandbox, "mkdir -p out && printf data > out/f");
      await sandbox.stop();
      const existing = join(root, "existing");
      await mkdir(existing);
      await assert.rejects(
        exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/out" }), existing, { base: "work/out" }),
        (error) => error instanceof SandboxConflictError && error.code === "conflict",
      );
      await assert.rejects(
        exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/out" }), join(root, "missing/target")),
        (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /parent of .* is missing or not a directory/.test(error.message),
      );
      const target = join(root, "copy");
      const written = await within(
        (async () => exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/out" }), target, { base: "work/out" }))(),
        30_000,
        "the export after failed exportToDirectory calls",
      );
      assert.deepEqual(written, { files: 2, bytes: 4 });
      assert.deepEqual((await readdir(root)).sort(), ["copy", "existing"], "no temporary sibling is left");
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

engineTest("DockerSandbox exportTree reports a guest file name that is not UTF-8 as unsupported", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await runGuest(sandbox, "mkdir -p odd && printf x > \"odd/bad$(printf '\\377')name\"");
    await sandbox.stop();
    await assert.rejects(
      readExport(await sandbox.exportTree({ kind: "subtree", path: "work/odd" })),
      (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /UTF-8/.test(error.message),
    );
  });
});
