import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../../lib/docker/config.ts";
import { LABELS } from "../../../lib/docker/names.ts";
import { checkRecoveryRecord } from "../../../lib/docker/recovery/recover.ts";
import { backendRevision, configurationDigest, newNonce, plannedRecord, policyDigest } from "../../../lib/docker/recovery/record.ts";
import { resourceLabels, resourceNames } from "../../../lib/docker/names.ts";
import { UserRangeAllocator } from "../../../lib/docker/user_range.ts";
import { SandboxConfigurationError, SandboxConflictError, SandboxQuotaError } from "../../../lib/sandbox/errors.ts";

const base = {
  endpoint: "unix:///var/run/docker.sock",
  namespace: "app-1",
  spillDirectory: "/var/lib/app/spill",
  imageDigest: `sha256:${"a".repeat(64)}`,
};
const ranged: DockerSandboxBackendConfig = { ...base, userRange: { first: 100_000, count: 3 } };
const policy = { resources: { cpus: 1, memoryBytes: 256 << 20, pids: 64 } };
const port = { record: () => Promise.resolve() };

function refuses(config: unknown, message: string): void {
  assert.throws(
    () => createDockerSandboxBackend(config as DockerSandboxBackendConfig),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === message,
  );
}

test("createDockerSandboxBackend userRange needs exactly one of user and userRange", () => {
  refuses(
    { ...ranged, user: { uid: 65534, gid: 65534 } },
    "Cannot create Docker sandbox backend: config.user and config.userRange are both set: give one (user for a fixed identity, userRange for one per sandbox)",
  );
  refuses(base, "Cannot create Docker sandbox backend: config.user is required: give the guest identity ({ uid, gid }), or config.userRange to draw one per sandbox");
});

test("createDockerSandboxBackend userRange rejects a count below 1, a range past 262143 and one holding the keeper's uid or gid", () => {
  refuses({ ...base, userRange: { first: 100_000, count: 0 } }, "Cannot create Docker sandbox backend: config.userRange.count must be at least 1 (the number of uids to draw from)");
  refuses({ ...base, userRange: { first: 100_000, count: 1.5 } }, "Cannot create Docker sandbox backend: config.userRange.count must be an integer of at least 1");
  refuses(
    { ...base, userRange: { first: 0, count: 10 } },
    "Cannot create Docker sandbox backend: config.userRange.first must be a non-root ID from 1 to 262143 (0 is root): use an unprivileged ID such as 65534",
  );
  assert.equal(createDockerSandboxBackend({ ...base, userRange: { first: 262_000, count: 144 } }).settings.userRange?.count, 144);
  refuses(
    { ...base, userRange: { first: 262_000, count: 145 } },
    "Cannot create Docker sandbox backend: config.userRange ends at uid 262144, above 262143 (the ownership range the backend writes into archives): lower first or count",
  );
  refuses(
    { ...base, userRange: { first: 65_000, count: 1000 } },
    "Cannot create Docker sandbox backend: config.userRange 65000 … 65999 contains config.keeperUser.uid 65533 (the default): the agent must not share an identity with its keeper; move the range or set config.keeperUser outside it",
  );
  refuses(
    { ...base, userRange: { first: 70_000, count: 10 }, keeperUser: { uid: 60_000, gid: 70_005 } },
    "Cannot create Docker sandbox backend: config.userRange 70000 … 70009 contains config.keeperUser.gid 70005: the agent must not share an identity with its keeper; move the range or set config.keeperUser outside it",
  );
  const backend = createDockerSandboxBackend({ ...base, userRange: { first: 65_000, count: 1000 }, keeperUser: { uid: 60_000, gid: 60_000 } });
  assert.deepEqual(backend.settings.userRange, { first: 65_000, count: 1000 });
  assert.equal(backend.settings.user, undefined);
});

test("createDockerSandboxBackend with userRange gives each live reservation its own uid, and refuses when all are held", () => {
  const backend = createDockerSandboxBackend(ranged);
  const users = [0, 1, 2].map(() => backend.reserve({ policy }, port).user);
  assert.deepEqual(users.map((user) => user.uid).sort(), [100_000, 100_001, 100_002]);
  for (const user of users) assert.equal(user.gid, user.uid);
  assert.throws(
    () => backend.reserve({ policy }, port),
    (error) =>
      error instanceof SandboxQuotaError && error.code === "quota" &&
      error.message ===
        "Cannot reserve sandbox: all 3 uids of config.userRange (100000 … 100002) are held by live sandboxes of this backend: destroy one, or widen config.userRange",
  );
  // A request refused before the draw holds nothing: the range is still full, not over-full.
  assert.throws(() => backend.reserve({ policy: { resources: { ...policy.resources, pids: 1 } } }, port), SandboxConfigurationError);
});

test("UserRangeAllocator draws every free uid, never a held one, and draws a released one again", () => {
  const allocator = new UserRangeAllocator({ first: 10, count: 4 });
  const drawn = [0, 1, 2, 3].map(() => allocator.draw().uid);
  assert.deepEqual([...drawn].sort((a, b) => a - b), [10, 11, 12, 13]);
  assert.throws(() => allocator.draw(), SandboxQuotaError);
  allocator.release(12);
  allocator.release(12);
  assert.deepEqual(allocator.draw(), { uid: 12, gid: 12 });
});

test("resourceLabels carry the uid and gid of an identity drawn from a range, and none for a fixed user", () => {
  const settings = createDockerSandboxBackend(ranged).settings;
  const record = plannedRecord({ ...identity(settings, { uid: 100_001, gid: 100_001 }), userRange: settings.userRange }, ["volume", "keeper"]);
  const labels = resourceLabels(record, "keeper");
  assert.equal(labels[LABELS.uid], "100001");
  assert.equal(labels[LABELS.gid], "100001");
  const fixed = createDockerSandboxBackend({ ...base, user: { uid: 65534, gid: 65534 } }).settings;
  const fixedLabels = resourceLabels(plannedRecord(identity(fixed, { uid: 65534, gid: 65534 }), ["volume", "keeper"]), "keeper");
  assert.equal(LABELS.uid in fixedLabels || LABELS.gid in fixedLabels, false, "the label set of earlier builds");
});

function identity(settings: ReturnType<typeof createDockerSandboxBackend>["settings"], user: { uid: number; gid: number }) {
  const reservationId = "0".repeat(32);
  return {
    reservationId,
    revision: backendRevision(settings.profile.name),
    profile: settings.profile.name,
    endpoint: settings.endpoint,
    namespace: settings.namespace,
    daemonId: "daemon",
    imageDigest: settings.imageDigest,
    user,
    keeperUser: settings.keeperUser,
    names: resourceNames(settings.namespace, reservationId),
    nonce: newNonce(),
    configurationDigest: configurationDigest(settings),
    policyDigest: policyDigest({} as never),
  };
}

test("checkRecoveryRecord with userRange accepts a record's uid inside the range and refuses one outside it or a fixed-user backend's", () => {
  const settings = createDockerSandboxBackend(ranged).settings;
  const inside = plannedRecord({ ...identity(settings, { uid: 100_002, gid: 100_002 }), userRange: settings.userRange }, ["volume", "keeper"]);
  assert.equal(checkRecoveryRecord(JSON.parse(JSON.stringify(inside)), settings).identity.user.uid, 100_002);
  const outside = plannedRecord({ ...identity(settings, { uid: 100_003, gid: 100_003 }), userRange: settings.userRange }, ["volume", "keeper"]);
  assert.throws(
    () => checkRecoveryRecord(JSON.parse(JSON.stringify(outside)), settings),
    (error) =>
      error instanceof SandboxConflictError && error.code === "conflict" &&
      error.message.includes('user "100003:100003" (this backend: "a uid:gid pair with gid = uid in 100000 … 100002")'),
  );
  const fixed = createDockerSandboxBackend({ ...base, user: { uid: 100_002, gid: 100_002 } }).settings;
  assert.notEqual(configurationDigest(fixed), configurationDigest(settings));
  assert.throws(() => checkRecoveryRecord(JSON.parse(JSON.stringify(inside)), fixed), (error) => error instanceof SandboxConflictError && /configuration/.test(error.message));
});
