// Workspace snapshots and forks (docs/snapshots.md): sandbox.snapshot() → a volume and a
// record of its own; reserve({ workspace: { from } }) → forks that start as its tree and stay
// independent; removeSnapshot() leaves forks alone; a half-made snapshot is recovered.
import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxQuotaError, SandboxStateError, SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerWorkspaceSnapshot } from "../../lib/docker/snapshots/snapshot.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { engineTest } from "./_engine.ts";
import { assertGone, testPolicy } from "./_sandbox.ts";
import { assertNothingLeft, removeNamed, runChild, withWorld } from "./_recovery.ts";
import { DESCRIBE_TREE, PORTABLE_TREE } from "./_snapshot_tree.ts";

const sh = async (sandbox: DockerSandbox, script: string) => (await sandbox.run("/bin/sh", ["-c", script])).stdoutText;

const TREE = "mkdir -p d/empty d/sub && printf 'hello\\n' > d/a.txt && chmod 640 d/a.txt && ln -s a.txt d/link && printf x > d/sub/b && chmod 700 d/sub";
const LOOK = "cat d/a.txt; stat -c '%a %u %n' d/a.txt d/sub d/empty; readlink d/link; ls -A d/empty | wc -l; ls after.txt 2>&1 | grep -c 'No such'";

async function assertVolumeGone(engine: DockerEngine, name: string): Promise<void> {
  await assert.rejects(engine.request("GET", `/volumes/${name}`), (error) => error instanceof DockerEngineError && error.code === "not_found");
}

engineTest("DockerSandbox snapshot → fork ×3: each fork sees the snapshot, writes stay private, and removing the snapshot leaves the forks working", async (engine) => {
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandboxes: DockerSandbox[] = [];
    let snapshot: DockerWorkspaceSnapshot | undefined;
    try {
      const source = await backend.reserve({ policy: testPolicy }, store).start();
      sandboxes.push(source);
      await sh(source, TREE);
      snapshot = await source.snapshot();
      assert.equal(source.state, "running", "the source resumes after the copy");
      assert.equal((await inspectContainer(engine, source.resources.keeperId)).State.Paused, false);
      assert.equal(snapshot.sourceId, source.id);
      assert.match(snapshot.id, /^[0-9a-f]{32}$/u);
      assert.equal(snapshot.record.resources.volume?.state, "created");
      assert.equal(snapshot.record.resources.copier?.state, "removed");
      assert.deepEqual((await backend.snapshots(store)).map((listed) => listed.id), [snapshot.id]);
      // A write after the snapshot is not in it.
      await sh(source, "echo later > after.txt");

      const forks: DockerSandbox[] = [];
      for (let i = 0; i < 3; i++) {
        const fork = await backend.reserve({ policy: testPolicy, workspace: { from: snapshot } }, store).start();
        sandboxes.push(fork);
        forks.push(fork);
      }
      for (const [i, fork] of forks.entries()) {
        assert.equal(await sh(fork, LOOK), "hello\n640 65534 d/a.txt\n700 65534 d/sub\n755 65534 d/empty\na.txt\n0\n1\n");
        await sh(fork, `echo ${i} > mine.txt && echo changed > d/a.txt`);
      }
      for (const [i, fork] of forks.entries()) {
        assert.equal(await sh(fork, "cat mine.txt d/a.txt"), `${i}\nchanged\n`, "each fork keeps its own writes");
      }
      assert.equal(await sh(source, "cat d/a.txt; ls mine.txt 2>&1 | grep -c 'No such'"), "hello\n1\n", "the source sees no fork's write");

      // Removing the snapshot does not touch the forks.
      await backend.removeSnapshot(snapshot);
      await assertVolumeGone(engine, snapshot.volumeName);
      await backend.removeSnapshot(snapshot); // idempotent
      assert.deepEqual(await backend.snapshots(store), []);
      assert.equal(await sh(forks[0], "cat d/sub/b; echo more > d/new && cat d/new"), "xmore\n");
      await assert.rejects(
        backend.reserve({ policy: testPolicy, workspace: { from: snapshot } }, store).start(),
        (error) => error instanceof SandboxStateError && error.code === "invalid_state" && /snapshot [0-9a-f]{32} was removed/.test(error.message),
      );
    } finally {
      for (const sandbox of sandboxes) {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      if (snapshot !== undefined) await backend.removeSnapshot(snapshot);
    }
  });
});

engineTest("DockerSandbox snapshot of a paused sandbox stays paused; of a stopped one works; a destroyed one is invalid_state; workspace.from must be a snapshot", async (engine) => {
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandbox = await backend.reserve({ policy: testPolicy }, store).start();
    const snapshots: DockerWorkspaceSnapshot[] = [];
    try {
      await sh(sandbox, "echo one > f");
      await sandbox.pause();
      snapshots.push(await sandbox.snapshot());
      assert.equal(sandbox.state, "paused");
      await sandbox.resume();
      await sh(sandbox, "echo two > f");
      await sandbox.stop();
      snapshots.push(await sandbox.snapshot());
      const fork = await backend.reserve({ policy: testPolicy, workspace: { from: snapshots[1] } }, store).start();
      try {
        assert.equal(await sh(fork, "cat f"), "two\n");
      } finally {
        await fork.destroy();
      }
      await sandbox.destroy();
      await assert.rejects(sandbox.snapshot(), (error) => error instanceof SandboxStateError && error.code === "invalid_state" && /destroyed/.test(error.message));
      assert.throws(
        () => backend.reserve({ policy: testPolicy, workspace: { from: { id: "x" } as unknown as DockerWorkspaceSnapshot } }, store),
        (error) => error instanceof SandboxConfigurationError && /request\.workspace\.from must be a DockerWorkspaceSnapshot/.test(error.message),
      );
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
      for (const snapshot of snapshots) {
        await backend.removeSnapshot(snapshot);
        await assertVolumeGone(engine, snapshot.volumeName);
      }
    }
  });
});

/**
 * Run the controller child to `killAt` and hand its records (every one readable) to
 * `check`, which returns them in recovery order; each is then recovered by a fresh
 * controller and must leave nothing, its copier included. Whatever a failure left is
 * removed by exact name.
 */
async function afterChildDied(
  engine: DockerEngine,
  killAt: string,
  check: (records: DockerSandboxRecoveryRecord[]) => DockerSandboxRecoveryRecord[],
): Promise<void> {
  await withWorld(async (world) => {
    const records: DockerSandboxRecoveryRecord[] = [];
    try {
      await runChild(world, killAt, { ...testPolicy, controllerLoss: "stop" });
      for (const entry of await world.store.list()) {
        assert.ok(entry.kind === "record", `a record: ${entry.kind}`);
        records.push(entry.record as unknown as DockerSandboxRecoveryRecord);
      }
      for (const record of check(records)) {
        const recovery = await world.fresh().recover(record, world.store);
        assert.equal((await recovery.cleanup()).complete, true);
        await world.store.remove(record.reservationId);
        await assertNothingLeft(engine, record);
        await assert.rejects(
          engine.request("GET", `/containers/${record.identity.names.copier}/json`),
          (error) => error instanceof DockerEngineError && error.code === "not_found",
        );
      }
    } finally {
      for (const record of records) {
        await removeNamed(engine, record);
        await engine.request("DELETE", `/containers/${record.identity.names.copier}`, { query: { force: true } }).catch(() => {});
      }
    }
  });
}

engineTest("DockerSandbox snapshot half-made when its controller died: recover() reclaims the snapshot's volume and copier, and the paused sandbox", async (engine) => {
  await afterChildDied(engine, "snapshot-copier", (records) => {
    assert.equal(records.length, 2, "the sandbox's record and the snapshot's");
    const snapshotRecord = records.find((record) => record.identity.snapshot !== undefined)!;
    assert.equal(snapshotRecord.resources.volume?.state, "created");
    assert.equal(snapshotRecord.resources.copier?.state, "created");
    assert.equal(snapshotRecord.resources.keeper?.state, "planned", "a snapshot never computes");
    // The snapshot's first: its copier holds the sandbox's volume (docs/snapshots.md).
    return [snapshotRecord, ...records.filter((record) => record !== snapshotRecord)];
  });
});

engineTest("DockerWorkspaceSnapshot export → importSnapshot → fork sees the same tree (bytes, modes, mtimes, empty directories); a symlink is refused in the stream, a bad archive on import", async (engine) => {
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandboxes: DockerSandbox[] = [];
    const snapshots: DockerWorkspaceSnapshot[] = [];
    try {
      const source = await backend.reserve({ policy: testPolicy }, store).start();
      sandboxes.push(source);
      await sh(source, PORTABLE_TREE);
      const expected = await sh(source, DESCRIBE_TREE);
      assert.match(expected, /^t\/deep\/er\/est 2755 65534 /mu);
      assert.match(expected, /^t\/empty 755 65534 /mu);
      assert.match(expected, /^t\/bin 600 65534 5 /mu);
      const snapshot = await source.snapshot();
      snapshots.push(snapshot);
      // The same engine stands in for another: a fresh backend with its own store is the importer.
      const imported = await world.fresh().importSnapshot(await snapshot.export(), store);
      snapshots.push(imported);
      assert.equal(imported.sourceId, undefined);
      assert.notEqual(imported.volumeName, snapshot.volumeName);
      const fork = await backend.reserve({ policy: testPolicy, workspace: { from: imported } }, store).start();
      sandboxes.push(fork);
      assert.equal(await sh(fork, DESCRIBE_TREE), expected);
      assert.equal(await sh(fork, "./t/deep/run.sh"), "run\n");
      // Two exports of one snapshot run one after the other; a cancelled one frees the turn.
      const first = await snapshot.export();
      await first.cancel();
      const again = new Uint8Array(await new Response(await snapshot.export()).arrayBuffer());
      assert.ok(again.length > 300 * 1024);
      assert.equal(snapshot.record.resources.copier?.state, "removed");
      // A byte bound on each side (a sparse file travels at its full length).
      await assert.rejects(
        new Response(await snapshot.export({ maxBytes: 1024 })).arrayBuffer(),
        (error) => error instanceof SandboxQuotaError && /^Cannot export snapshot: \S+ would take its files past 1024 bytes \(options\.maxBytes\); pass a larger options\.maxBytes$/u.test(error.message),
      );
      await assert.rejects(snapshot.export({ maxBytes: -1 }), (error) => error instanceof SandboxConfigurationError && /options\.maxBytes must be a non-negative safe integer/u.test(error.message));
      await assert.rejects(
        world.fresh().importSnapshot(await snapshot.export(), store, { maxBytes: 1024 }),
        (error) => error instanceof SandboxQuotaError && /^Cannot import snapshot: \S+ would take its files past 1024 bytes/u.test(error.message),
      );

      await sh(source, "ln -s bin t/link");
      const linked = await source.snapshot();
      snapshots.push(linked);
      await assert.rejects(
        new Response(await linked.export()).arrayBuffer(),
        (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /symlink/.test(error.message),
      );
      await assert.rejects(
        backend.importSnapshot(new Blob([new Uint8Array(1024).fill(7)]).stream(), store),
        (error) => error instanceof SandboxConfigurationError && /^Cannot import snapshot: the archive is not acceptable/.test(error.message),
      );
      assert.deepEqual((await backend.snapshots(store)).map((listed) => listed.id).sort(), snapshots.map((s) => s.id).sort(), "the refused import left no snapshot");
    } finally {
      for (const sandbox of sandboxes) {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      for (const snapshot of snapshots) {
        await backend.removeSnapshot(snapshot);
        await assertVolumeGone(engine, snapshot.volumeName);
      }
    }
  });
});

engineTest("DockerSandbox fork half-made when its controller died: recover() of the fork, the snapshot and the source leaves nothing", async (engine) => {
  await afterChildDied(engine, "fork-copier", (records) => {
    assert.equal(records.length, 3, "the source's record, the snapshot's and the fork's");
    const snapshotRecord = records.find((record) => record.identity.snapshot !== undefined)!;
    const fork = records.find((record) => record.identity.snapshot === undefined && record.resources.copier !== undefined)!;
    const source = records.find((record) => record !== snapshotRecord && record !== fork)!;
    assert.equal(fork.resources.copier?.state, "created");
    assert.equal(fork.resources.keeper?.state, "created");
    assert.equal(snapshotRecord.resources.copier?.state, "removed", "the snapshot was complete");
    // The fork's first (its copier holds the snapshot's volume), then the snapshot, then the source.
    return [fork, snapshotRecord, source];
  });
});

engineTest("DockerSandbox destroy() during a snapshot waits for its copy, and the snapshot survives the sandbox", async (engine) => {
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandbox = await backend.reserve({ policy: testPolicy }, store).start();
    let snapshot: DockerWorkspaceSnapshot | undefined;
    try {
      await sh(sandbox, "echo kept > f");
      const taking = sandbox.snapshot();
      const destroying = sandbox.destroy();
      snapshot = await taking;
      await destroying;
      await assertGone(engine, sandbox);
      const fork = await backend.reserve({ policy: testPolicy, workspace: { from: snapshot } }, store).start();
      try {
        assert.equal(await sh(fork, "cat f"), "kept\n");
      } finally {
        await fork.destroy();
      }
    } finally {
      await sandbox.destroy();
      if (snapshot !== undefined) await backend.removeSnapshot(snapshot);
    }
  });
});
