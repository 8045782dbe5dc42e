/**
 * Daemon admission: compare `GET /version` and `GET /info` against a profile row and
 * report every unmet requirement at once.
 *
 * @module
 */
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { SandboxPolicy } from "../../sandbox/policy.ts";
import type { EngineInfo, EngineVersion } from "../../engine/system.ts";
import { DOCKER_SANDBOX_PROFILES, type DockerSandboxProfileRow } from "../profiles.ts";

/** What admission learned about the daemon, used later for workload readback. */
export interface DaemonAdmission {
  /** The AppArmor profile the workload must read back (`docker-default` or empty). */
  readonly appArmorProfile: "docker-default" | "";
  /** Daemon identity for recovery records: `GET /info` `ID`. */
  readonly daemonId: string;
}

function securityOptions(info: EngineInfo): Map<string, Map<string, string>> {
  const options = new Map<string, Map<string, string>>();
  for (const entry of info.SecurityOptions ?? []) {
    const fields = new Map<string, string>();
    for (const part of entry.split(",")) {
      const at = part.indexOf("=");
      if (at > 0) fields.set(part.slice(0, at), part.slice(at + 1));
    }
    const name = fields.get("name");
    if (name) options.set(name, fields);
  }
  return options;
}

function runtimeList(info: EngineInfo): string {
  const names = Object.keys(info.Runtimes ?? {});
  return names.length === 0 ? "none" : names.map((name) => JSON.stringify(name)).join(", ");
}

/**
 * List the requirements of `profile` that the daemon does not meet (empty when admitted).
 *
 * @param profile the selected profile row
 * @param version the daemon's `GET /version`
 * @param info the daemon's `GET /info`
 * @returns one sentence per unmet requirement
 */
export function unmetDaemonRequirements(profile: DockerSandboxProfileRow, version: EngineVersion, info: EngineInfo): string[] {
  const unmet: string[] = [];
  const security = securityOptions(info);
  if (info.OSType !== "linux" || version.Os !== "linux") unmet.push(`Linux containers (daemon OSType '${info.OSType}')`);
  if (info.Architecture !== profile.daemon.architecture) {
    unmet.push(`daemon architecture ${profile.daemon.architecture} (daemon reports '${info.Architecture}')`);
  }
  const desktop = info.OperatingSystem === "Docker Desktop";
  if (desktop !== profile.daemon.desktop) {
    unmet.push(
      profile.daemon.desktop
        ? `Docker Desktop (daemon OperatingSystem '${info.OperatingSystem}')`
        : "a daemon that is not Docker Desktop (daemon OperatingSystem 'Docker Desktop')",
    );
  }
  if (security.has("rootless")) unmet.push("a rootful daemon (daemon runs rootless)");
  if (security.has("userns")) unmet.push("no user-namespace remapping (daemon remaps user namespaces)");
  const seccomp = security.get("seccomp");
  if (!seccomp) unmet.push("seccomp (daemon has none)");
  else if (seccomp.get("profile") !== "builtin") unmet.push(`the builtin seccomp profile (daemon uses '${seccomp.get("profile") ?? "unknown"}')`);
  if (!profile.cgroup.versions.includes(info.CgroupVersion as "1" | "2")) {
    unmet.push(`cgroup v${profile.cgroup.versions.join(" or v")} (daemon uses v${info.CgroupVersion})`);
  }
  if (info.CgroupDriver !== profile.cgroup.driver) {
    unmet.push(`the ${profile.cgroup.driver} cgroup driver (daemon uses '${info.CgroupDriver}')`);
  }
  if (!info.CpuCfsQuota || !info.CpuCfsPeriod) unmet.push("the CPU controller (CFS quota and period)");
  if (!info.MemoryLimit) unmet.push("the memory controller");
  if (!info.SwapLimit) unmet.push("swap limit support");
  if (!info.PidsLimit) unmet.push("the PID controller");
  const appArmor = security.has("apparmor");
  if (profile.lsm === "apparmor" && !appArmor) unmet.push("AppArmor enabled on the daemon");
  if (profile.lsm === "none" && appArmor) unmet.push("no AppArmor on the daemon (daemon has AppArmor)");
  // runc is every Linux daemon's built-in runtime; only gVisor must be registered.
  if (profile.runtime === "runsc" && !Object.hasOwn(info.Runtimes ?? {}, "runsc")) {
    unmet.push(
      `the gVisor runtime "runsc" registered with the daemon (GET /info Runtimes lists ${runtimeList(info)}): install runsc (Debian: apt-get install runsc) and add "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}} to the daemon config, then restart dockerd`,
    );
  }
  return unmet;
}

/**
 * Admit a daemon for `profile` or throw one error listing every unmet requirement. When
 * another profile of the table with the same OCI runtime admits this daemon, the message
 * names it as the fix (a cgroupfs or cgroup v1 daemon refused by the default `linux-x64`:
 * "set config.profile to \"linux-x64-cgroupfs\""); a runc profile is never offered as the
 * fix of a gVisor one, nor the other way round.
 *
 * @throws {SandboxUnsupportedError} when any requirement is unmet; the message lists all
 */
export function admitDaemon(profile: DockerSandboxProfileRow, version: EngineVersion, info: EngineInfo): DaemonAdmission {
  const unmet = unmetDaemonRequirements(profile, version, info);
  if (unmet.length > 0) {
    const fitting = Object.values(DOCKER_SANDBOX_PROFILES).filter((row) =>
      row.name !== profile.name && row.runtime === profile.runtime && unmetDaemonRequirements(row, version, info).length === 0
    );
    const fix = fitting.length === 0
      ? ""
      : `; profile ${fitting.map((row) => row.name).join(" or ")} admits this daemon: set config.profile to ${JSON.stringify(fitting[0].name)}`;
    throw new SandboxUnsupportedError(
      `Cannot admit the Docker daemon for profile ${profile.name}: it needs ${unmet.join("; ")}${fix}`,
    );
  }
  const appArmor = securityOptions(info).has("apparmor");
  return { appArmorProfile: appArmor ? "docker-default" : "", daemonId: info.ID ?? "" };
}

/**
 * Check the controller host for profiles that name one platform; Desktop rows run only on
 * an Apple Silicon Mac. Runs before any spill-directory or Engine access.
 *
 * @param profile the selected profile row
 * @param host `process.platform` and `process.arch` of this program
 * @throws {SandboxUnsupportedError} on another host
 */
export function admitHost(profile: DockerSandboxProfileRow, host: { platform: string; arch: string }): void {
  if (host.platform !== profile.host.platform || host.arch !== profile.host.arch) {
    throw new SandboxUnsupportedError(
      `Cannot use profile ${profile.name}: it needs a ${profile.host.platform} ${profile.host.arch} controller host, this is ${host.platform} ${host.arch}`,
    );
  }
}

/**
 * Check a request's policy against what the profile needs, at `reserve()` (no I/O): under
 * `linux-x64-gvisor` the sentry's threads count against the PID limit, so
 * `policy.resources.pids` must be at least the profile's `minimumPids` (256), and runsc runs
 * with `--network=none` (the guest has only loopback), so any network but `isolated` is refused.
 *
 * @param profile the selected profile row
 * @param policy the normalised request policy
 * @throws {SandboxConfigurationError} when `policy.resources.pids` is below the profile's minimum
 * @throws {SandboxUnsupportedError} for `network: "outbound"` or an allowlist under gVisor
 */
export function admitPolicy(profile: DockerSandboxProfileRow, policy: SandboxPolicy): void {
  if (profile.runtime === "runsc" && policy.network !== "isolated") {
    const network = policy.network === "outbound" ? '"outbound"' : "an allowlist";
    throw new SandboxUnsupportedError(
      `Cannot reserve sandbox: policy.network ${network} is not available under profile ${profile.name} (runsc runs with --network=none, so the guest has only loopback): use network "isolated", or a runc profile for network access`,
    );
  }
  if (policy.resources.pids < profile.minimumPids) {
    throw new SandboxConfigurationError(
      `Cannot reserve sandbox: policy.resources.pids is ${policy.resources.pids}, below the minimum of ${profile.minimumPids} for profile ${profile.name}` +
        (profile.runtime === "runsc" ? " (gVisor's sentry threads count against the PID limit)" : "") +
        `: set policy.resources.pids to at least ${profile.minimumPids}`,
    );
  }
}

/**
 * The fix for a daemon that started with IPv4 forwarding off, named by every refusal of it
 * (admission and the create-warning check): the daemon reads `net.ipv4.ip_forward` once when
 * it starts, so turning it on afterwards is not enough (measured on Engine 28.5.2, 2026-12-02).
 */
export const IPV4_FORWARDING_FIX =
  "turn IPv4 forwarding on where the daemon runs (sysctl -w net.ipv4.ip_forward=1, and net.ipv4.ip_forward=1 in /etc/sysctl.d/ to keep it after a reboot), then restart the daemon: it reads the setting only when it starts";

/**
 * Check that the daemon can give `policy.network` a bridge network, before anything is
 * created: `outbound` and an allowlist need IPv4 forwarding (`GET /info` `IPv4Forwarding`;
 * a daemon that does not report it is not refused here). `isolated` needs none.
 *
 * @param policy the normalised request policy
 * @param info the daemon's `GET /info`
 * @throws {SandboxUnsupportedError} naming the cause and {@linkcode IPV4_FORWARDING_FIX}
 */
export function admitForwarding(policy: SandboxPolicy, info: EngineInfo): void {
  if (policy.network === "isolated" || info.IPv4Forwarding !== false) return;
  const network = policy.network === "outbound" ? 'policy.network "outbound"' : "a policy.network allowlist";
  throw new SandboxUnsupportedError(
    `Cannot start sandbox: ${network} needs a bridge network, and the Docker daemon started with IPv4 forwarding off (GET /info IPv4Forwarding: false), so networking would not work: ${IPV4_FORWARDING_FIX}; network "isolated" needs no forwarding`,
  );
}

/**
 * Check `policy.resources` against the daemon's host (`GET /info` `NCPU`, `MemTotal`), before
 * anything is created: a CPU limit above the host's CPUs is refused by the Engine at create
 * (HTTP 400), and a memory limit above the host's memory is no limit at all. A figure the
 * daemon does not report is not checked.
 *
 * @param policy the normalised request policy
 * @param info the daemon's `GET /info`
 * @throws {SandboxConfigurationError} naming the field, the daemon's figure and the fix
 */
export function admitResources(policy: SandboxPolicy, info: EngineInfo): void {
  const { cpus, memoryBytes } = policy.resources;
  if (info.NCPU !== undefined && info.NCPU > 0 && cpus > info.NCPU) {
    throw new SandboxConfigurationError(
      `Cannot start sandbox: policy.resources.cpus is ${cpus}, more than the ${info.NCPU} CPUs of the daemon's host (GET /info NCPU): set policy.resources.cpus to at most ${info.NCPU}`,
    );
  }
  if (info.MemTotal !== undefined && info.MemTotal > 0 && memoryBytes > info.MemTotal) {
    throw new SandboxConfigurationError(
      `Cannot start sandbox: policy.resources.memoryBytes is ${memoryBytes}, more than the ${info.MemTotal} bytes of memory of the daemon's host (GET /info MemTotal), so it would be no limit: set policy.resources.memoryBytes to at most ${info.MemTotal}`,
    );
  }
}
