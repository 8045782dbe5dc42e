// A portable snapshot across engines (docs/snapshots.md#portable-snapshots): a snapshot taken
// on the main engine is exported, imported on the API 1.45 engine, and a fork there sees the
// same tree — byte-exact contents, modes (set-group-ID included), empty directories, mtimes.
// A snapshot holding a symlink is refused in the export stream (only regular files and
// directories travel) and the importing engine keeps nothing. Cleanup on both engines.
//
// Environment: as tests/compat/api_floor.test.ts (AGENTCELL_TEST_ENGINE is the compat engine,
// AGENTCELL_TEST_MAIN_ENGINE / AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE the main one).
import assert from "node:assert/strict";
import process from "node:process";
import { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerWorkspaceSnapshot } from "../../lib/docker/snapshots/snapshot.ts";
import { SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { engineTest } from "../engine/_engine.ts";
import { assertGone, testPolicy } from "../engine/_sandbox.ts";
import { assertRecordsHoldNothing, withWorld, type World } from "../engine/_recovery.ts";
import { DESCRIBE_TREE, PORTABLE_TREE } from "../engine/_snapshot_tree.ts";

const sh = async (sandbox: DockerSandbox, script: string) => (await sandbox.run("/bin/sh", ["-c", script])).stdoutText;

engineTest("DockerWorkspaceSnapshot taken on the main engine, exported, imported on the API 1.45 engine: a fork there sees the same tree; a symlink is refused and the importer keeps nothing", async (engine) => {
  const main = process.env.AGENTCELL_TEST_MAIN_ENGINE ?? "";
  const mainImage = process.env.AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE ?? "";
  assert.ok(main && mainImage, "set AGENTCELL_TEST_MAIN_ENGINE and AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE (npm test does)");
  const mainEngine = new DockerEngine(main);
  assert.notEqual((await mainEngine.info()).ID, (await engine.info()).ID, "two engines");
  await withWorld(async (origin) => {
    await withWorld(async (there) => {
      const sandboxes: [DockerEngine, DockerSandbox][] = [];
      const snapshots: [World, DockerWorkspaceSnapshot][] = [];
      try {
        const source = await origin.backend.reserve({ policy: testPolicy }, origin.store).start();
        sandboxes.push([mainEngine, source]);
        await sh(source, PORTABLE_TREE);
        const expected = await sh(source, DESCRIBE_TREE);
        assert.match(expected, /^t\/deep\/er\/est 2755 65534 \d+ \d+ directory$/mu);
        assert.match(expected, /^t\/nested\/empty 1777 65534 \d+ \d+ directory$/mu);
        assert.match(expected, /^t\/empty 755 65534 \d+ \d+ directory$/mu);
        assert.match(expected, /^t\/bin 600 65534 5 \d+ regular file$/mu);
        assert.match(expected, /^t\/zero 444 65534 0 \d+ regular empty file$/mu);
        const snapshot = await source.snapshot();
        snapshots.push([origin, snapshot]);

        const imported = await there.backend.importSnapshot(await snapshot.export(), there.store);
        snapshots.push([there, imported]);
        assert.equal(imported.sourceId, undefined);
        assert.deepEqual((await there.backend.snapshots(there.store)).map((listed) => listed.id), [imported.id]);
        const fork = await there.backend.reserve({ policy: testPolicy, workspace: { from: imported } }, there.store).start();
        sandboxes.push([engine, fork]);
        assert.equal(await sh(fork, DESCRIBE_TREE), expected, "the fork on the API 1.45 engine sees the same tree");
        assert.equal(await sh(fork, "./t/deep/run.sh && echo mine > t/empty/new && cat t/empty/new"), "run\nmine\n");
        assert.equal(await sh(source, "ls -A t/empty | wc -l"), "0\n", "the fork's write stays on its engine");

        // A symlink does not travel: the export stream fails, and the compat engine keeps nothing.
        await sh(source, "ln -s bin t/link");
        const linked = await source.snapshot();
        snapshots.push([origin, linked]);
        await assert.rejects(
          there.backend.importSnapshot(await linked.export(), there.store),
          (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /symlink/u.test(error.message),
        );
        assert.deepEqual((await there.backend.snapshots(there.store)).map((listed) => listed.id), [imported.id], "the refused import left no snapshot");
        assert.equal(linked.record.resources.copier?.state, "removed", "the export's holder is gone");
      } finally {
        for (const [on, sandbox] of sandboxes) {
          await sandbox.destroy();
          await assertGone(on, sandbox);
        }
        for (const [world, snapshot] of snapshots) await world.backend.removeSnapshot(snapshot);
        await assertRecordsHoldNothing(mainEngine, origin.store);
        await assertRecordsHoldNothing(engine, there.store);
      }
    });
  }, main, undefined, { imageDigest: mainImage });
});
