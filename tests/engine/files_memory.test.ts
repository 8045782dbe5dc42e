// Unbounded trees in bounded memory on a real Engine: a 2 GiB export in a child process
// with flat peak RSS, and duplicate checks past the in-memory bound spilling to the spill
// directory, which is empty again afterwards.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { engineTest, runtimeCommand } from "./_engine.ts";
import { readExport, runGuest } from "./_files.ts";
import { assertGone, recordingPort, testPolicy, withBackend } from "./_sandbox.ts";

const CHILD = fileURLToPath(new URL("./_files_export_child.ts", import.meta.url));
const TWO_GIB = 2 * 1024 * 1024 * 1024;
const PEAK_LIMIT_KIB = 256 * 1024;

engineTest("DockerSandbox exportTree streams a 2 GiB file with flat memory (child process peak RSS)", async () => {
  const output = await new Promise<string>((resolve, reject) => {
    const [command, args] = runtimeCommand(CHILD);
    execFile(command, args, {
      env: { ...process.env, AGENTCELL_CHILD_EXPORT_BYTES: String(TWO_GIB) },
      maxBuffer: 1024 * 1024,
      timeout: 150_000,
    }, (error, stdout, stderr) => (error ? reject(new Error(`child failed: ${error.message}\n${stderr}`)) : resolve(stdout)));
  });
  const result = JSON.parse(output.trim().split("\n").at(-1)!);
  assert.deepEqual(result.exit, { kind: "exited", code: 0 });
  assert.equal(result.bytes, TWO_GIB);
  assert.equal(result.gone, true, "the child's sandbox is gone");
  assert.ok(result.peakKiB > 0 && result.peakKiB < PEAK_LIMIT_KIB, `peak RSS ${result.peakKiB} KiB (before the export ${result.rssBeforeKiB} KiB)`);
  console.log(`2 GiB export: ${result.exportMs} ms, RSS before ${result.rssBeforeKiB} KiB, peak ${result.peakKiB} KiB (peak reset: ${result.peakReset})`);
}, { timeout: 180_000 });

engineTest("DockerSandbox exportTree spills path checks past maxInMemoryPaths and leaves the spill directory empty", async (engine) => {
  await withBackend(async (backend, spillDirectory) => {
    const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    try {
      await runGuest(sandbox, "mkdir -p a b && i=0; while [ $i -lt 150 ]; do : > a/f$i; : > b/f$i; i=$((i+1)); done");
      await sandbox.stop();
      const runs = async () => (await readdir(spillDirectory)).filter((name) => /^agentcell-tar-paths-.*\.run$/.test(name));

      // Read half of it, look at the spill directory, finish.
      const entries = await sandbox.exportTree({ kind: "workspace" }, { maxInMemoryPaths: 40 });
      const reader = entries.getReader();
      let count = 0;
      for (; count < 200; count++) {
        const { value } = await reader.read();
        await value!.body.cancel();
      }
      assert.ok((await runs()).length > 0, "sorted runs were spilled");
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        await value.body.cancel();
        count++;
      }
      assert.equal(count, 1 + 2 + 300);
      assert.deepEqual(await runs(), [], "spill files are removed when the export ends");

      // Cancelling midway removes them too; a complete read with a small bound still sees everything.
      const cancelled = await sandbox.exportTree({ kind: "workspace" }, { maxInMemoryPaths: 40 });
      const partial = cancelled.getReader();
      for (let i = 0; i < 150; i++) await (await partial.read()).value!.body.cancel();
      await partial.cancel();
      assert.deepEqual(await runs(), []);
      assert.equal((await readExport(await sandbox.exportTree({ kind: "subtree", path: "work/b" }, { maxInMemoryPaths: 10 }))).length, 151);
      assert.deepEqual(await runs(), []);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  });
});
