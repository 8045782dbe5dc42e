import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { admitDaemon, unmetDaemonRequirements } from "../../../lib/docker/admission/daemon.ts";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import { DOCKER_SANDBOX_PROFILES, GVISOR_MINIMUM_PIDS } from "../../../lib/docker/profiles.ts";
import { keeperCreateBody } from "../../../lib/docker/keeper/spec.ts";
import { normalizePolicy } from "../../../lib/sandbox/policy.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";
import { engineInfoSchema, engineVersionSchema } from "../../../lib/engine/system.ts";

const read = (file: string) => JSON.parse(readFileSync(new URL(`../../fixtures/engine/${file}`, import.meta.url), "utf8"));
const version = engineVersionSchema.parse(read("linux-cgroupfs-v1.version.json"));
// The recorded engine with the runtimes a stock daemon lists.
const info = engineInfoSchema.parse({ ...read("linux-cgroupfs-v1.info.json"), Runtimes: { "io.containerd.runc.v2": { path: "runc" }, runc: { path: "runc" } } });
const withRunsc = engineInfoSchema.parse({
  ...info,
  Runtimes: { ...info.Runtimes, runsc: { path: "/usr/bin/runsc", runtimeArgs: ["--network=none"] } },
});
const gvisor = DOCKER_SANDBOX_PROFILES["linux-x64-gvisor"];

test("admitDaemon refuses linux-x64-gvisor on a daemon without runsc, naming the daemon config fix", () => {
  assert.throws(() => admitDaemon(gvisor, version, info), (error) => {
    assert.ok(error instanceof SandboxUnsupportedError);
    assert.equal(error.code, "unsupported");
    assert.equal(
      error.message,
      `Cannot admit the Docker daemon for profile linux-x64-gvisor: it needs the gVisor runtime "runsc" registered with the daemon (GET /info Runtimes lists "io.containerd.runc.v2", "runc"): install runsc (Debian: apt-get install runsc) and add "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}} to the daemon config, then restart dockerd`,
    );
    return true;
  });
});

test("admitDaemon admits linux-x64-gvisor once runsc is listed, and never offers a runc profile as its fix (nor the other way round)", () => {
  assert.deepEqual(unmetDaemonRequirements(gvisor, version, withRunsc), []);
  assert.throws(
    () => admitDaemon(DOCKER_SANDBOX_PROFILES["linux-x64"], version, withRunsc),
    (error) => error instanceof SandboxUnsupportedError && error.message.endsWith('admits this daemon: set config.profile to "linux-x64-cgroupfs"') &&
      !error.message.includes("gvisor"),
  );
});

test("keeperCreateBody requests the profile's runtime", () => {
  const body = keeperCreateBody({
    imageDigest: `sha256:${"a".repeat(64)}`,
    user: { uid: 65534, gid: 65534 },
    keeperUser: { uid: 65533, gid: 65533 },
    policy: normalizePolicy({ resources: { cpus: 1, memoryBytes: 256 << 20, pids: 256 } }),
    mounts: [],
    networkName: undefined,
    labels: {},
    appArmorProfile: "",
    runtime: gvisor.runtime,
  }) as { HostConfig: { Runtime: string; Sysctls: unknown } };
  assert.equal(body.HostConfig.Runtime, "runsc");
  // gVisor's netstack ignores the socket buffer sysctls (lib/docker/keeper/socket_buffers.ts): none are sent.
  assert.deepEqual(body.HostConfig.Sysctls, {});
});

test("reserve() under linux-x64-gvisor rejects a PID limit below the profile's minimum of 256, and outbound or allowlist networking", () => {
  const backend = createDockerSandboxBackend({
    profile: "linux-x64-gvisor",
    endpoint: "unix:///var/run/docker.sock",
    namespace: "app-1",
    spillDirectory: "/var/lib/app/spill",
    imageDigest: `sha256:${"a".repeat(64)}`,
    user: { uid: 65534, gid: 65534 },
  });
  const port = { record: () => Promise.resolve() };
  assert.equal(GVISOR_MINIMUM_PIDS, 256);
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 << 20, pids: 255 } } }, port),
    (error) =>
      error instanceof SandboxConfigurationError && error.code === "configuration" &&
      error.message ===
        "Cannot reserve sandbox: policy.resources.pids is 255, below the minimum of 256 for profile linux-x64-gvisor (gVisor's sentry threads count against the PID limit): set policy.resources.pids to at least 256",
  );
  assert.equal(backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 << 20, pids: 256 } } }, port).policy.resources.pids, 256);
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 << 20, pids: 256 }, network: "outbound" } }, port),
    (error) =>
      error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
      error.message ===
        'Cannot reserve sandbox: policy.network "outbound" is not available under profile linux-x64-gvisor (runsc runs with --network=none, so the guest has only loopback): use network "isolated", or a runc profile for network access',
  );
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 << 20, pids: 256 }, network: { kind: "allowlist", hosts: ["example.com"] } } }, port),
    (error) => error instanceof SandboxUnsupportedError && error.message.startsWith("Cannot reserve sandbox: policy.network an allowlist is not available under profile linux-x64-gvisor"),
  );
});
