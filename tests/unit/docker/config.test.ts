import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../../lib/docker/config.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const valid: DockerSandboxBackendConfig = {
  endpoint: "unix:///var/run/docker.sock",
  namespace: "app-1",
  spillDirectory: "/var/lib/app/spill",
  imageDigest: `sha256:${"a".repeat(64)}`,
  user: { uid: 65534, gid: 65534 },
};

function rejects(config: unknown, field: RegExp): void {
  assert.throws(
    () => createDockerSandboxBackend(config as DockerSandboxBackendConfig),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && field.test(error.message),
  );
}

test("createDockerSandboxBackend is inert and defaults the profile to linux-x64", () => {
  const backend = createDockerSandboxBackend(valid);
  assert.equal(backend.settings.profile.name, "linux-x64");
  assert.ok(Object.isFrozen(backend.settings));
});

test("createDockerSandboxBackend rejects bad endpoints, naming config.endpoint", () => {
  for (const endpoint of ["tcp://127.0.0.1:2375", "unix://relative.sock", "unix:////double", "unix:///a\nb", "/var/run/docker.sock", `unix:///${"x".repeat(120)}`]) {
    rejects({ ...valid, endpoint }, /^Cannot create Docker sandbox backend: config\.endpoint /);
  }
});

test("createDockerSandboxBackend rejects bad namespace, image, user and profile, naming the field", () => {
  rejects({ ...valid, namespace: "Upper" }, /config\.namespace/);
  rejects({ ...valid, namespace: "a".repeat(33) }, /config\.namespace/);
  rejects({ ...valid, imageDigest: "sha256:ABC" }, /config\.imageDigest/);
  rejects({ ...valid, imageDigest: `sha256:${"A".repeat(64)}` }, /config\.imageDigest/);
  rejects({ ...valid, user: { uid: 0, gid: 1 } }, /config\.user\.uid/);
  rejects({ ...valid, user: { uid: 1, gid: 262_144 } }, /config\.user\.gid/);
  rejects({ ...valid, user: { uid: 1.5, gid: 1 } }, /config\.user\.uid/);
  rejects({ ...valid, profile: "linux-arm64" }, /config\.profile/);
  rejects({ ...valid, extra: true }, /config\.extra/);
});

test("createDockerSandboxBackend requires an absolute canonical spill directory", () => {
  for (const spillDirectory of ["relative/dir", "/", "/a/", "/a//b", "/a/./b", "/a/../b"]) {
    rejects({ ...valid, spillDirectory }, /config\.spillDirectory/);
  }
});

test("DockerSandboxBackend.reserve is inert, derives every name, and rejects a required disk quota", () => {
  const backend = createDockerSandboxBackend(valid);
  let recorded = 0;
  const port = { record: () => Promise.resolve(void recorded++) };
  const reservation = backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 16 } } }, port);
  assert.match(reservation.id, /^[0-9a-f]{32}$/);
  assert.equal(reservation.names.volume, `agentcell-app-1-${reservation.id}-volume`);
  assert.equal(reservation.names.keeper, `agentcell-app-1-${reservation.id}-keeper`);
  assert.equal(recorded, 0);
  assert.throws(
    () =>
      backend.reserve({
        policy: {
          resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 16 },
          workspaceDiskQuota: { kind: "required", bytes: 1024, accounting: "allocated_blocks" },
        },
      }, port),
    (error) => error instanceof SandboxUnsupportedError && /quota/.test(error.message),
  );
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 1024, pids: 16 } } }, port),
    (error) => error instanceof SandboxConfigurationError && /policy\.resources\.memoryBytes/.test(error.message),
  );
});
