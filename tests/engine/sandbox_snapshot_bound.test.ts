// The byte bound of a snapshot's and a fork's copy (docs/snapshots.md#limits-and-what-is-not-covered):
// the tree's regular files at apparent size (a sparse file at its full length) are measured
// before the copy writes anything; past the bound the snapshot or fork is refused with the
// exact quota message and nothing is left (no volume, no copier, no live record, no listing);
// at the bound it works and the fork sees the tree.
import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxQuotaError } from "../../lib/sandbox/errors.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerWorkspaceSnapshot } from "../../lib/docker/snapshots/snapshot.ts";
import { engineTest } from "./_engine.ts";
import { assertGone, assertNamesAbsent, testPolicy } from "./_sandbox.ts";
import { assertRecordsHoldNothing, withWorld } from "./_recovery.ts";

const sh = async (sandbox: DockerSandbox, script: string) => (await sandbox.run("/bin/sh", ["-c", script])).stdoutText;

/** The backend's default bound (`config.defaultExportQuota.bytes`): 1 GiB. */
const DEFAULT_BOUND = 1024 * 1024 * 1024;
/** The small tree: a 32 MiB sparse file (no block written) and five bytes. */
const SMALL = 32 * 1024 * 1024 + 5;

const isQuota = (message: string) => (error: unknown) => error instanceof SandboxQuotaError && error.code === "quota" && error.message === message;

engineTest("DockerSandbox snapshot and fork past their byte bound (a sparse file at its apparent size) are refused with the exact message and leave nothing; at the bound they work", async (engine) => {
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandboxes: DockerSandbox[] = [];
    const snapshots: DockerWorkspaceSnapshot[] = [];
    try {
      const source = await backend.reserve({ policy: testPolicy }, store).start();
      sandboxes.push(source);
      // 2 GiB of apparent size in no block at all: the hostile probe.
      assert.equal(await sh(source, "truncate -s 2147483648 huge && printf hello > a && du -k huge | cut -f1 && stat -c %s huge"), "0\n2147483648\n");
      await assert.rejects(
        source.snapshot(),
        isQuota(
          `Cannot take a snapshot: the tree of /workspace/work would take its files past ${DEFAULT_BOUND} bytes (config.defaultExportQuota.bytes, which applies when options.maxBytes is not set); pass a larger options.maxBytes`,
        ),
      );
      assert.equal(source.state, "running", "the source resumes after a refused snapshot");
      assert.equal(await sh(source, "echo alive"), "alive\n");
      assert.deepEqual(await backend.snapshots(store), [], "a refused snapshot is not listed");
      assert.equal(await assertRecordsHoldNothing(engine, world.store, [source.id]), 1, "the refused snapshot's record names nothing that exists");

      await sh(source, "truncate -s 33554432 huge");
      await assert.rejects(
        source.snapshot({ maxBytes: SMALL - 1 }),
        isQuota(`Cannot take a snapshot: the tree of /workspace/work would take its files past ${SMALL - 1} bytes (options.maxBytes); pass a larger options.maxBytes`),
      );
      await assert.rejects(
        source.snapshot({ maxBytes: -1 }),
        (error) => error instanceof SandboxConfigurationError && error.message === "Cannot take a snapshot: options.maxBytes must be a non-negative safe integer (bytes); got -1",
      );
      assert.equal(await assertRecordsHoldNothing(engine, world.store, [source.id]), 2);

      // At the bound: taken; the default bound (1 GiB) takes it too.
      const snapshot = await source.snapshot({ maxBytes: SMALL });
      snapshots.push(snapshot);
      snapshots.push(await source.snapshot());
      assert.deepEqual((await backend.snapshots(store)).map((listed) => listed.id).sort(), snapshots.map((s) => s.id).sort());

      // A fork past its bound: refused before its keeper starts, and its start undone.
      assert.throws(
        () => backend.reserve({ policy: testPolicy, workspace: { from: snapshot, maxBytes: 1.5 } }, store),
        (error) => error instanceof SandboxConfigurationError && error.message === "Cannot reserve sandbox: request.workspace.maxBytes must be a non-negative safe integer (bytes); got 1.5",
      );
      const refused = backend.reserve({ policy: testPolicy, workspace: { from: snapshot, maxBytes: SMALL - 1 } }, store);
      await assert.rejects(
        refused.start(),
        isQuota(`Cannot start sandbox: snapshot ${snapshot.id} would take its files past ${SMALL - 1} bytes (request.workspace.maxBytes); pass a larger request.workspace.maxBytes`),
      );
      await assertNamesAbsent(engine, refused.names);
      const kept = [source.id, ...snapshots.map((s) => s.id)];
      assert.equal(await assertRecordsHoldNothing(engine, world.store, kept), 3, "the refused fork's record names nothing that exists");

      const fork = await backend.reserve({ policy: testPolicy, workspace: { from: snapshot, maxBytes: SMALL } }, store).start();
      sandboxes.push(fork);
      assert.equal(await sh(fork, "stat -c '%s %u' huge a && cat a"), "33554432 65534\n5 65534\nhello");
    } finally {
      for (const sandbox of sandboxes) {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      for (const snapshot of snapshots) await backend.removeSnapshot(snapshot);
      await assertRecordsHoldNothing(engine, world.store, []);
    }
  }, undefined, undefined, { defaultExportQuota: { bytes: DEFAULT_BOUND } });
});

engineTest("DockerSandbox fork of a snapshot past the config's default bound is refused naming config.defaultExportQuota.bytes", async (engine) => {
  // The snapshot is taken by a backend without a bound; the fork's backend has a 16-byte default.
  await withWorld(async (world) => {
    const source = await world.backend.reserve({ policy: testPolicy }, world.store).start();
    let snapshot: DockerWorkspaceSnapshot | undefined;
    try {
      await sh(source, "printf 0123456789abcdefg > f");
      snapshot = await source.snapshot();
      await withWorld(async (bounded) => {
        const refused = bounded.backend.reserve({ policy: testPolicy, workspace: { from: snapshot! } }, bounded.store);
        await assert.rejects(
          refused.start(),
          isQuota(
            `Cannot start sandbox: snapshot ${snapshot!.id} would take its files past 16 bytes (config.defaultExportQuota.bytes, which applies when request.workspace.maxBytes is not set); pass a larger request.workspace.maxBytes`,
          ),
        );
        await assertNamesAbsent(engine, refused.names);
        assert.equal(await assertRecordsHoldNothing(engine, bounded.store, []), 1);
      }, undefined, undefined, { defaultExportQuota: { bytes: 16 } });
    } finally {
      await source.destroy();
      await assertGone(engine, source);
      if (snapshot !== undefined) await world.backend.removeSnapshot(snapshot);
      await assertRecordsHoldNothing(engine, world.store, []);
    }
  });
});
