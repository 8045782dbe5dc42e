// A workspace snapshot's record and the backend's snapshot calls, without an engine: the v2
// schema takes `identity.snapshot` (and refuses a malformed one), its resources carry the
// snapshot label, and removeSnapshot / importSnapshot / snapshots / reserve refuse what is
// not theirs before any Engine access.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import { LABELS, resourceLabels, resourceNames } from "../../../lib/docker/names.ts";
import { backendIdentity, plannedRecord, recoveryRecordSchema, type RecoveryIdentity } from "../../../lib/docker/recovery/record.ts";
import type { DockerWorkspaceSnapshot } from "../../../lib/docker/snapshots/snapshot.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

const reservationId = "0123456789abcdef0123456789abcdef";
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint: "unix:///nonexistent/agentcell-unit.sock",
  namespace: "unit",
  spillDirectory: "/tmp",
  imageDigest: `sha256:${"c".repeat(64)}`,
  user: { uid: 1000, gid: 1000 },
});

function identity(snapshot: unknown): RecoveryIdentity {
  return {
    reservationId,
    ...backendIdentity(backend.settings),
    daemonId: "daemon-1",
    user: { uid: 1000, gid: 1000 },
    names: resourceNames("unit", reservationId),
    nonce: "f".repeat(32),
    policyDigest: "a".repeat(64),
    snapshot,
  } as RecoveryIdentity;
}

test("recoveryRecordSchema takes a snapshot's identity and refuses a malformed identity.snapshot", () => {
  const record = plannedRecord(identity({ source: "a".repeat(32), createdAt: 1_700_000_000_000 }), ["volume", "keeper"]);
  assert.equal(recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(record))).success, true);
  const imported = plannedRecord(identity({ createdAt: 1 }), ["volume", "keeper"]);
  assert.equal(recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(imported))).success, true);
  for (const bad of [{ source: "not-hex", createdAt: 1 }, { createdAt: -1 }, { createdAt: 1, extra: true }]) {
    assert.equal(recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(plannedRecord(identity(bad), ["volume", "keeper"])))).success, false, JSON.stringify(bad));
  }
});

test("resourceLabels marks every resource of a snapshot's record, and only those", () => {
  const snapshot = plannedRecord(identity({ createdAt: 1 }), ["volume", "keeper"]);
  assert.equal(resourceLabels(snapshot, "volume")[LABELS.snapshot], "true");
  assert.equal(resourceLabels(snapshot, "copier")[LABELS.snapshot], "true");
  const sandbox = plannedRecord(identity(undefined), ["volume", "keeper"]);
  assert.equal(resourceLabels(sandbox, "volume")[LABELS.snapshot], undefined);
});

test("backend snapshot calls refuse what is not theirs before any Engine access", async () => {
  const notSnapshot = { id: "x", volumeName: "v" } as unknown as DockerWorkspaceSnapshot;
  await assert.rejects(backend.removeSnapshot(notSnapshot), (error) =>
    error instanceof SandboxConfigurationError && error.code === "configuration" && /^Cannot remove snapshot: snapshot must be a DockerWorkspaceSnapshot/.test(error.message));
  await assert.rejects(backend.importSnapshot("tar" as unknown as ReadableStream<Uint8Array>, { record: () => Promise.resolve() }), (error) =>
    error instanceof SandboxConfigurationError && /^Cannot import snapshot: tar must be a ReadableStream/.test(error.message));
  await assert.rejects(backend.importSnapshot(new Blob([]).stream(), {} as never), (error) =>
    error instanceof SandboxConfigurationError && /^Cannot import snapshot: recovery.record must be a function/.test(error.message));
  await assert.rejects(backend.snapshots({ record: () => Promise.resolve() } as never), (error) =>
    error instanceof SandboxConfigurationError && /^Cannot list snapshots: store must have list\(\) and record\(\)/.test(error.message));
  assert.throws(() => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 } }, workspace: { from: notSnapshot } }, { record: () => Promise.resolve() }), (error) =>
    error instanceof SandboxConfigurationError && /^Cannot reserve sandbox: request.workspace.from must be a DockerWorkspaceSnapshot/.test(error.message));
});
