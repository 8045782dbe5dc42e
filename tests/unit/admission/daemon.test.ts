import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { admitDaemon, admitForwarding, admitHost, admitResources, IPV4_FORWARDING_FIX, unmetDaemonRequirements } from "../../../lib/docker/admission/daemon.ts";
import { DOCKER_SANDBOX_PROFILES } from "../../../lib/docker/profiles.ts";
import { SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";
import { normalizePolicy } from "../../../lib/sandbox/policy.ts";
import { type EngineInfo, engineInfoSchema, type EngineVersion, engineVersionSchema } from "../../../lib/engine/system.ts";

function fixture(name: string): { version: EngineVersion; info: EngineInfo } {
  const read = (file: string) => JSON.parse(readFileSync(new URL(`../../fixtures/engine/${file}`, import.meta.url), "utf8"));
  const versionFile = name.startsWith("desktop") ? "desktop-arm64.version.json" : "linux-cgroupfs-v1.version.json";
  return { version: engineVersionSchema.parse(read(versionFile)), info: engineInfoSchema.parse(read(`${name}.info.json`)) };
}

const P = DOCKER_SANDBOX_PROFILES;

test("admitDaemon admits the recorded cgroupfs engine for linux-x64-cgroupfs", () => {
  const { version, info } = fixture("linux-cgroupfs-v1");
  assert.deepEqual(admitDaemon(P["linux-x64-cgroupfs"], version, info), { appArmorProfile: "", daemonId: info.ID });
});

test("admitDaemon lists every unmet linux-x64 requirement of the cgroupfs engine in one error", () => {
  const { version, info } = fixture("linux-cgroupfs-v1");
  assert.throws(() => admitDaemon(P["linux-x64"], version, info), (error) => {
    assert.ok(error instanceof SandboxUnsupportedError);
    assert.equal(error.code, "unsupported");
    assert.match(error.message, /cgroup v2 \(daemon uses v1\)/);
    assert.match(error.message, /the systemd cgroup driver \(daemon uses 'cgroupfs'\)/);
    assert.match(error.message, /AppArmor enabled on the daemon/);
    return true;
  });
});

test("admitDaemon names the profile that admits a daemon the selected one refuses", () => {
  const { version, info } = fixture("linux-cgroupfs-v1");
  assert.throws(
    () => admitDaemon(P["linux-x64"], version, info),
    (error) =>
      error instanceof SandboxUnsupportedError &&
      error.message.endsWith('; profile linux-x64-cgroupfs admits this daemon: set config.profile to "linux-x64-cgroupfs"'),
  );
  // A daemon no profile admits (rootless, no swap limit) gets no suggestion.
  const rootless = fixture("linux-rootless");
  assert.throws(
    () => admitDaemon(P["linux-x64"], rootless.version, rootless.info),
    (error) => error instanceof SandboxUnsupportedError && !error.message.includes("config.profile"),
  );
});

test("admitDaemon admits a systemd/cgroup v2/AppArmor daemon for linux-x64 and expects docker-default", () => {
  const { version, info } = fixture("linux-systemd-v2-apparmor");
  assert.equal(admitDaemon(P["linux-x64"], version, info).appArmorProfile, "docker-default");
  assert.equal(admitDaemon(P["linux-x64-cgroupfs"], version, { ...info, CgroupDriver: "cgroupfs" }).appArmorProfile, "docker-default");
});

test("admitDaemon rejects rootless and missing swap limit together", () => {
  const { version, info } = fixture("linux-rootless");
  const unmet = unmetDaemonRequirements(P["linux-x64"], version, info);
  assert.ok(unmet.some((line) => line.startsWith("a rootful daemon")));
  assert.ok(unmet.some((line) => line === "swap limit support"));
});

test("admitDaemon rejects user-namespace remapping, non-builtin seccomp and missing controllers", () => {
  const { version, info } = fixture("linux-cgroupfs-v1");
  const unmet = unmetDaemonRequirements(P["linux-x64-cgroupfs"], version, {
    ...info,
    SecurityOptions: ["name=seccomp,profile=/etc/custom.json", "name=userns"],
    MemoryLimit: false,
    PidsLimit: false,
    CpuCfsQuota: false,
  });
  assert.deepEqual(unmet, [
    "no user-namespace remapping (daemon remaps user namespaces)",
    "the builtin seccomp profile (daemon uses '/etc/custom.json')",
    "the CPU controller (CFS quota and period)",
    "the memory controller",
    "the PID controller",
  ]);
  assert.deepEqual(unmetDaemonRequirements(P["linux-x64-cgroupfs"], version, { ...info, SecurityOptions: null }), ["seccomp (daemon has none)"]);
});

test("admitDaemon admits the Docker Desktop reply for both Apple Silicon rows", () => {
  const { version, info } = fixture("desktop-arm64");
  for (const name of ["desktop-apple-virtualization-native-arm64", "desktop-apple-virtualization-rosetta-amd64"] as const) {
    assert.deepEqual(admitDaemon(P[name], version, info), { appArmorProfile: "", daemonId: info.ID });
  }
});

test("admitDaemon rejects Desktop/non-Desktop and architecture mismatches", () => {
  const desktop = fixture("desktop-arm64");
  const linux = fixture("linux-cgroupfs-v1");
  assert.throws(
    () => admitDaemon(P["linux-x64-cgroupfs"], desktop.version, desktop.info),
    (error) =>
      error instanceof SandboxUnsupportedError && /daemon architecture x86_64 \(daemon reports 'aarch64'\)/.test(error.message) &&
      /a daemon that is not Docker Desktop/.test(error.message),
  );
  assert.throws(
    () => admitDaemon(P["desktop-apple-virtualization-native-arm64"], linux.version, { ...linux.info, CgroupVersion: "2" }),
    (error) =>
      error instanceof SandboxUnsupportedError && /Docker Desktop \(daemon OperatingSystem 'Debian/.test(error.message) &&
      /daemon architecture aarch64/.test(error.message),
  );
  assert.throws(
    () => admitDaemon(P["desktop-apple-virtualization-native-arm64"], desktop.version, { ...desktop.info, SecurityOptions: ["name=apparmor", "name=seccomp,profile=builtin"] }),
    (error) => error instanceof SandboxUnsupportedError && /no AppArmor on the daemon/.test(error.message),
  );
});

test("admitHost accepts the matching host and rejects Desktop rows on Linux", () => {
  admitHost(P["linux-x64"], { platform: "linux", arch: "x64" });
  admitHost(P["desktop-apple-virtualization-rosetta-amd64"], { platform: "darwin", arch: "arm64" });
  for (const host of [{ platform: "linux", arch: "x64" }, { platform: "darwin", arch: "x64" }, { platform: "win32", arch: "x64" }]) {
    assert.throws(
      () => admitHost(P["desktop-apple-virtualization-native-arm64"], host),
      (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported",
    );
  }
});

test("admitForwarding refuses outbound and allowlist on a daemon started with forwarding off, naming the fix; isolated and an unreported state pass", () => {
  const { info } = fixture("linux-cgroupfs-v1");
  const resources = { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 };
  const off = { ...info, IPv4Forwarding: false };
  for (const network of ["outbound", { kind: "allowlist", hosts: ["example.com"] }] as const) {
    assert.throws(() => admitForwarding(normalizePolicy({ resources, network }), off), (error) => {
      assert.ok(error instanceof SandboxUnsupportedError);
      assert.equal(error.code, "unsupported");
      assert.ok(error.message.includes("(GET /info IPv4Forwarding: false)"), error.message);
      assert.ok(error.message.includes(`: ${IPV4_FORWARDING_FIX}; network "isolated" needs no forwarding`), error.message);
      return true;
    });
    admitForwarding(normalizePolicy({ resources, network }), { ...info, IPv4Forwarding: true });
    admitForwarding(normalizePolicy({ resources, network }), { ...info, IPv4Forwarding: undefined });
  }
  admitForwarding(normalizePolicy({ resources }), off);
});

test("admitResources refuses cpus above NCPU and memoryBytes above MemTotal, naming the field, the daemon's figure and the fix", () => {
  const { info } = fixture("linux-cgroupfs-v1");
  const host = { ...info, NCPU: 2, MemTotal: 25_275_973_632 };
  const policy = (cpus: number, memoryBytes: number) => normalizePolicy({ resources: { cpus, memoryBytes, pids: 128 } });
  admitResources(policy(2, 25_275_973_632), host);
  assert.throws(() => admitResources(policy(2.5, 1 << 28), host), {
    name: "SandboxConfigurationError",
    code: "configuration",
    message: "Cannot start sandbox: policy.resources.cpus is 2.5, more than the 2 CPUs of the daemon's host (GET /info NCPU): set policy.resources.cpus to at most 2",
  });
  assert.throws(() => admitResources(policy(1, 2 ** 52), host), {
    name: "SandboxConfigurationError",
    code: "configuration",
    message: `Cannot start sandbox: policy.resources.memoryBytes is ${2 ** 52}, more than the 25275973632 bytes of memory of the daemon's host (GET /info MemTotal), so it would be no limit: set policy.resources.memoryBytes to at most 25275973632`,
  });
  // A daemon that reports neither figure is not checked.
  admitResources(policy(1024, 2 ** 52), { ...info, NCPU: undefined, MemTotal: undefined });
});
