// What an export may do to the host: exportToDirectory never creates group- or
// world-writable files or directories unless told to (options.modeMask), and the backend's
// config.defaultExportQuota bounds every export that sets no quota of its own, counting a
// sparse guest file at its full length (the length it takes on the host).
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxQuotaError } from "../../lib/sandbox/errors.ts";
import { exportToDirectory } from "../../lib/docker/files/export_to_directory.ts";
import { engineTest } from "./_engine.ts";
import { readExport, runGuest } from "./_files.ts";
import { withSandbox } from "./_sandbox.ts";

const MIB = 1024 * 1024;

async function withHostDirectory(fn: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "agentcell-export-host-"));
  try {
    await fn(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

engineTest("exportToDirectory makes a guest's sticky 1777 directory 0755 and its 0666 file 0644 on the host; modeMask 0o777 keeps the write bits", async (engine) => {
  await withHostDirectory(async (root) => {
    await withSandbox(engine, async (sandbox) => {
      const modes = await runGuest(sandbox, "mkdir shared && chmod 1777 shared && printf x > shared/open && chmod 666 shared/open && stat -c '%a' shared shared/open");
      assert.equal(modes, "1777\n666\n", "the guest holds a sticky world-writable directory and a world-writable file");
      await sandbox.stop();
      const masked = join(root, "masked");
      await exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/shared" }), masked, { base: "work/shared" });
      assert.equal((await stat(masked)).mode & 0o7777, 0o755);
      assert.equal((await stat(join(masked, "open"))).mode & 0o7777, 0o644);
      const kept = join(root, "kept");
      await exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/shared" }), kept, { base: "work/shared", modeMask: 0o777 });
      assert.equal((await stat(kept)).mode & 0o7777, 0o777, "the opt-out keeps write bits; sticky is still dropped");
      assert.equal((await stat(join(kept, "open"))).mode & 0o7777, 0o666);
    });
  });
});

engineTest("config.defaultExportQuota.bytes bounds readFile and exportTree that set none (a sparse file counts at its length); a transfer's own bound wins", async (engine) => {
  await withHostDirectory(async (root) => {
    await withSandbox(engine, async (sandbox) => {
      const usage = await runGuest(sandbox, "head -c 2097152 /dev/zero > big && dd if=/dev/zero of=sparse bs=1 count=0 seek=8388608 2>/dev/null && ls -l sparse | awk '{print $5}' && du -k sparse | cut -f1");
      assert.equal(usage, "8388608\n0\n", "an 8 MiB file that takes no blocks in the guest");
      await assert.rejects(sandbox.readFile("work/big"), (error) =>
        error instanceof SandboxQuotaError && error.code === "quota" &&
        error.message ===
          "Cannot read file work/big: it holds more than 1048576 bytes (config.defaultExportQuota.bytes, which applies when options.maxBytes is not set); pass options.maxBytes (up to 1 GiB) or export it with exportTree after stop()");
      assert.equal((await sandbox.readFile("work/big", { maxBytes: 4 * MIB })).byteLength, 2 * MIB);
      await sandbox.stop();

      const target = join(root, "sparse");
      await assert.rejects(exportToDirectory(await sandbox.exportTree({ kind: "file", path: "work/sparse" }), target), (error) =>
        error instanceof SandboxQuotaError && error.code === "quota" &&
        error.message ===
          "Cannot export files: entry 'work/sparse' (8388608 bytes) would exceed the quota of 1048576 bytes (0 already admitted); the quota is config.defaultExportQuota.bytes, which applies when options.quota.bytes is not set: pass options.quota.bytes to set this transfer's own");
      assert.deepEqual(await readdir(root), [], "nothing was written on the host");

      const [exported] = await readExport(await sandbox.exportTree({ kind: "file", path: "work/sparse" }, { quota: { bytes: 8 * MIB } }));
      assert.equal(exported.size, 8 * MIB, "with its own quota the export takes the sparse file's full length");
    }, { config: { defaultExportQuota: { bytes: MIB } } });
  });
});
