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

test("createDockerSandboxBackend shows the corrected endpoint when it is clear", () => {
  const cases: [string, string][] = [
    ["/var/run/docker.sock", 'config.endpoint must be unix:// followed by the absolute socket path ("/var/run/docker.sock" is not): use "unix:///var/run/docker.sock"'],
    ["unix:/run/engine.sock", 'config.endpoint must be unix:// followed by the absolute socket path ("unix:/run/engine.sock" is not): use "unix:///run/engine.sock"'],
    ["unix://var/run/docker.sock", 'config.endpoint must name an absolute socket path after unix:// (three slashes): did you mean "unix:///var/run/docker.sock"?'],
    ["unix:////var/run/docker.sock", 'config.endpoint must not start the socket path with "//": use "unix:///var/run/docker.sock"'],
    [
      "tcp://127.0.0.1:2375",
      'config.endpoint must be unix:// followed by the absolute socket path ("tcp://127.0.0.1:2375" is not; tcp, ssh, npipe and http endpoints are not supported): a local daemon\'s socket is usually "unix:///var/run/docker.sock"',
    ],
  ];
  for (const [endpoint, reason] of cases) {
    assert.throws(
      () => createDockerSandboxBackend({ ...valid, endpoint }),
      (error) =>
        error instanceof SandboxConfigurationError && error.message === `Cannot create Docker sandbox backend: ${reason}`,
      endpoint,
    );
  }
});

test("createDockerSandboxBackend says a uid or gid of 0 must be non-root, and lists the profiles", () => {
  for (const field of ["uid", "gid"] as const) {
    assert.throws(
      () => createDockerSandboxBackend({ ...valid, user: { uid: 1, gid: 1, [field]: 0 } }),
      (error) =>
        error instanceof SandboxConfigurationError &&
        error.message ===
          `Cannot create Docker sandbox backend: config.user.${field} must be a non-root ID from 1 to 262143 (0 is root): use an unprivileged ID such as 65534`,
    );
  }
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, profile: "linux" as never }),
    (error) =>
      error instanceof SandboxConfigurationError &&
      error.message ===
        'Cannot create Docker sandbox backend: config.profile must be one of "linux-x64", "linux-x64-cgroupfs", "desktop-apple-virtualization-native-arm64", "desktop-apple-virtualization-rosetta-amd64" (see the README\'s Profiles)',
  );
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, imageDigest: "busybox:latest" }),
    (error) => error instanceof SandboxConfigurationError && /config\.imageDigest .*names and tags are not accepted; list IDs with docker image ls --no-trunc\)$/.test(error.message),
  );
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
