// The v2 recovery record: schema, digests, and the checks recovery makes before any Engine
// access (proved by a fake engine that counts connections).
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxDataset } from "../../../lib/docker/datasets/configuration.ts";
import { resourceNames } from "../../../lib/docker/names.ts";
import { RecoveryLog } from "../../../lib/docker/recovery/log.ts";
import { ownLockOwner } from "../../../lib/docker/recovery/lock.ts";
import { createFileRecoveryStore } from "../../../lib/docker/recovery/store.ts";
import {
  backendRevision,
  configurationDigest,
  type DockerSandboxRecoveryRecord,
  plannedRecord,
  RECOVERY_SCHEMA,
} from "../../../lib/docker/recovery/record.ts";
import { SandboxConfigurationError, SandboxConflictError, SandboxStateError } from "../../../lib/sandbox/errors.ts";
import { startFakeEngine } from "../_fake_engine.ts";

const image = `sha256:${"c".repeat(64)}`;
const reservationId = "0123456789abcdef0123456789abcdef";

async function withBackend(
  fn: (backend: DockerSandboxBackend, connections: () => number) => Promise<void>,
  datasets: readonly DockerSandboxDataset[] = [],
): Promise<void> {
  let connections = 0;
  const engine = await startFakeEngine((connection) => {
    connections += 1;
    connection.destroy();
    return Promise.resolve();
  });
  const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    const backend = createDockerSandboxBackend({
      profile: "linux-x64-cgroupfs",
      endpoint: `unix://${engine.socketPath}`,
      namespace: "unit",
      spillDirectory: spill,
      imageDigest: image,
      user: { uid: 1000, gid: 1000 },
      datasets,
    });
    await fn(backend, () => connections);
  } finally {
    await engine.close();
    await rm(spill, { recursive: true, force: true });
  }
}

function recordFor(backend: DockerSandboxBackend, change: Record<string, unknown> = {}): DockerSandboxRecoveryRecord {
  const { settings } = backend;
  return plannedRecord({
    reservationId,
    revision: backendRevision(settings.profile.name),
    profile: settings.profile.name,
    endpoint: settings.endpoint,
    namespace: settings.namespace,
    daemonId: "daemon-1",
    imageDigest: settings.imageDigest,
    user: settings.user,
    keeperUser: settings.keeperUser,
    names: resourceNames(settings.namespace, reservationId),
    nonce: "f".repeat(32),
    configurationDigest: configurationDigest(settings),
    policyDigest: "a".repeat(64),
    ...change,
  } as never, ["volume", "keeper"]);
}

const port = { record: () => Promise.resolve() };

test("backend.recover refuses a record of another schema version before any Engine access", async () => {
  await withBackend(async (backend, connections) => {
    const v1 = { ...recordFor(backend), schema: "agentcell.docker-sandbox-recovery.v1" };
    await assert.rejects(backend.recover(v1, port), (error) =>
      error instanceof SandboxConflictError && error.code === "conflict" &&
      error.message === `Cannot recover sandbox: the record's schema is "agentcell.docker-sandbox-recovery.v1", and this backend reads only ${RECOVERY_SCHEMA}; nothing was touched, keep the record`);
    await assert.rejects(backend.recover({ schema: "someone.else.v9" }, port), SandboxConflictError);
    assert.equal(connections(), 0, "no request was made");
  });
});

test("backend.recover refuses another profile, namespace, endpoint, image or user before any Engine access, listing each", async () => {
  await withBackend(async (backend, connections) => {
    const other = recordFor(backend, {
      profile: "linux-x64",
      revision: backendRevision("linux-x64"),
      namespace: "other",
      endpoint: "unix:///elsewhere.sock",
      imageDigest: `sha256:${"d".repeat(64)}`,
      user: { uid: 1001, gid: 1000 },
    });
    await assert.rejects(backend.recover(other, port), (error) => {
      assert.ok(error instanceof SandboxConflictError && error.code === "conflict");
      for (const field of ["revision", "profile", "endpoint", "namespace", "image", "user \"1001:1000\""]) {
        assert.ok(error.message.includes(field), `${field} in ${error.message}`);
      }
      assert.match(error.message, /^Cannot recover sandbox: the record belongs to another backend configuration: /);
      return true;
    });
    assert.equal(connections(), 0, "no request was made");
  });
});

test("backend.recover refuses a record of a backend with another dataset list before any Engine access", async () => {
  const corpus = { name: "corpus", imageDigest: `sha256:${"e".repeat(64)}`, subpath: "docs" };
  const notes = { name: "notes", imageDigest: `sha256:${"f".repeat(64)}` };
  // The record's writer: the same backend configuration with the datasets [notes, corpus].
  const writtenBy = (backend: DockerSandboxBackend) => {
    const { profile, endpoint, namespace, spillDirectory, imageDigest, user } = backend.settings;
    return createDockerSandboxBackend({ profile: profile.name, endpoint, namespace, spillDirectory, imageDigest, user, datasets: [notes, corpus] });
  };
  const others: DockerSandboxDataset[][] = [[], [notes], [{ ...corpus, subpath: "docs/a" }, notes], [{ name: corpus.name, imageDigest: corpus.imageDigest }, notes], [
    corpus,
    { ...notes, imageDigest: `sha256:${"0".repeat(64)}` },
  ]];
  for (const datasets of others) {
    await withBackend(async (backend, connections) => {
      const record = recordFor(writtenBy(backend));
      await assert.rejects(backend.recover(record, port), (error) => {
        assert.ok(error instanceof SandboxConflictError && error.code === "conflict", String(error));
        assert.equal(
          error.message,
          `Cannot recover sandbox: the record belongs to another backend configuration: configuration "${record.identity.configurationDigest}" (this backend: "${
            configurationDigest(backend.settings)
          }"); nothing was touched, keep the record`,
        );
        return true;
      });
      assert.equal(connections(), 0, `no request was made (${JSON.stringify(datasets)})`);
    }, datasets);
  }
  // The same list in another order is the same configuration: the checks pass, the Engine is asked.
  await withBackend(async (backend, connections) => {
    const record = recordFor(writtenBy(backend));
    assert.equal(configurationDigest(backend.settings), record.identity.configurationDigest);
    await assert.rejects(backend.recover(record, port));
    assert.ok(connections() > 0);
  }, [corpus, notes]);
});

test("backend.recover refuses a record whose identity was changed after it was written", async () => {
  await withBackend(async (backend, connections) => {
    const record = recordFor(backend);
    const tampered = { ...record, identity: { ...record.identity, nonce: "e".repeat(32) } };
    await assert.rejects(backend.recover(tampered, port), (error) =>
      error instanceof SandboxConflictError && /does not match its identityDigest/.test(error.message));
    const moved = { ...record, reservationId: "1".repeat(32) };
    await assert.rejects(backend.recover(moved, port), SandboxConflictError);
    assert.equal(connections(), 0);
  });
});

test("backend.recover names the malformed field of a record and refuses one over 64 KiB", async () => {
  await withBackend(async (backend, connections) => {
    const record = recordFor(backend);
    const bad = { ...record, resources: { volume: { name: record.identity.names.volume, state: "exploded" } } };
    await assert.rejects(backend.recover(bad, port), (error) =>
      error instanceof SandboxConfigurationError && error.code === "configuration" && /^Cannot recover sandbox: record\.resources\.volume\.state /.test(error.message));
    const noId = { ...record, resources: { volume: { name: record.identity.names.volume, state: "created" } } };
    await assert.rejects(backend.recover(noId, port), (error) =>
      error instanceof SandboxConfigurationError && /must carry an id exactly when created or removing/.test(error.message));
    const huge = { ...record, padding: "x".repeat(70_000) };
    await assert.rejects(backend.recover(huge, port), (error) =>
      error instanceof SandboxConfigurationError && /more than 65536/.test(error.message));
    await assert.rejects(backend.recover(record, {} as never), SandboxConfigurationError);
    assert.equal(connections(), 0);
  });
});

test("backend.recover of a well-formed record repeats daemon admission first (its first Engine access)", async () => {
  await withBackend(async (backend, connections) => {
    await assert.rejects(backend.recover(recordFor(backend), port));
    assert.ok(connections() > 0, "the checks passed and recovery asked the Engine");
  });
});

test("RecoveryLog.mark of a role the record does not hold is an error", async () => {
  await withBackend(async (backend) => {
    const log = new RecoveryLog(port, recordFor(backend));
    await assert.rejects(log.mark("network", "creating"), (error) =>
      error instanceof SandboxStateError && error.code === "invalid_state" && /holds no network resource/.test(error.message));
    await log.mark("volume", "creating");
    assert.equal(log.record.resources.volume?.state, "creating");
    assert.throws(() => log.replace("accessor", "created", "x"), SandboxStateError);
  });
});

test("backend.recover refuses a resource table edited to name something else, before any Engine access", async () => {
  await withBackend(async (backend, connections) => {
    const record = recordFor(backend);
    const { names } = record.identity;
    const edits: [string, unknown, RegExp][] = [
      ["a container name as the keeper ID", { ...record.resources, keeper: { name: names.keeper, state: "created", id: "someones-container" } }, /^Cannot recover sandbox: record\.resources\.keeper\.id must be a 64-hex-digit Engine ID$/],
      ["a path as the keeper ID", { ...record.resources, keeper: { name: names.keeper, state: "created", id: "../volumes/x" } }, /record\.resources\.keeper\.id /],
      ["another volume as the volume ID", { ...record.resources, volume: { name: names.volume, state: "created", id: "other-volume" } }, /record\.resources\.volume\.id must be the volume's name/],
      ["another keeper name", { ...record.resources, keeper: { name: "agentcell-unit-other-keeper", state: "planned" } }, /record\.resources\.keeper\.name must be the identity's keeper name/],
      ["no resources at all", {}, /record\.resources\.volume is required/],
      ["a relay without identity.relayImageDigest", { ...record.resources, relay: { name: names.relay, state: "planned" } }, /record\.resources\.relay must be absent when identity\.relayImageDigest is absent/],
    ];
    for (const [what, resources, message] of edits) {
      await assert.rejects(backend.recover({ ...record, resources }, port), (error) =>
        error instanceof SandboxConfigurationError && error.code === "configuration" && message.test(error.message), what);
    }
    assert.equal(connections(), 0, "no request was made");
  });
});

test("backend.recover refuses a record whose controller still runs (the file store's lock) before any Engine access; force or a stale lock goes on", async () => {
  await withBackend(async (backend, connections) => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-locked-")));
    try {
      const store = await createFileRecoveryStore(join(root, "records"));
      const planned = recordFor(backend);
      const record = { ...planned, resources: { ...planned.resources, volume: { name: planned.identity.names.volume, state: "created", id: planned.identity.names.volume } } };
      await store.record(record); // this process is the record's controller: it holds the lock
      const self = await ownLockOwner();
      await assert.rejects(backend.recover(record, store), (error) => {
        assert.ok(error instanceof SandboxConflictError && error.code === "conflict", String(error));
        assert.equal(
          error.message,
          `Cannot recover sandbox: record ${reservationId} is locked by its controller (pid ${process.pid}, started at tick ${self.startTime} after boot, this process), which still runs: stop that controller first (or let it destroy its sandbox), or pass { force: true } to recover() to take the record over anyway; nothing was touched, keep the record`,
        );
        return true;
      });
      assert.equal(connections(), 0, "no request was made");
      // With force the checks pass and recovery asks the Engine (which fails here).
      await assert.rejects(backend.recover(record, store, { force: true }));
      assert.ok(connections() > 0);
      // A lock of a process that is gone is stale: no force needed.
      const before = connections();
      await writeFile(join(store.directory, `${reservationId}.lock`), JSON.stringify({ ...self, pid: 4_194_304, token: "t" }));
      assert.deepEqual(await store.locks.inspect(reservationId), { kind: "stale", owner: { ...self, pid: 4_194_304 }, reason: "exited" });
      await assert.rejects(backend.recover(record, store));
      assert.ok(connections() > before, "a stale lock does not stop recovery");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
