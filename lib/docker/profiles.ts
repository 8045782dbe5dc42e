/**
 * The execution profiles: which controller host, daemon, image architecture, cgroup setup,
 * Linux security module and OCI runtime a sandbox may run on. A table of data; admission
 * (`./admission.ts`) checks a daemon against one row.
 *
 * @module
 */

/** Names of the admitted profiles. */
export type DockerSandboxProfile =
  | "linux-x64"
  | "linux-x64-cgroupfs"
  | "linux-x64-gvisor"
  | "desktop-apple-virtualization-native-arm64"
  | "desktop-apple-virtualization-rosetta-amd64";

/** One row of the profile table. */
export interface DockerSandboxProfileRow {
  /** Profile name. */
  readonly name: DockerSandboxProfile;
  /** Controller host: `process.platform` and `process.arch` of the program using this library. */
  readonly host: { readonly platform: "linux" | "darwin"; readonly arch: "x64" | "arm64" };
  /** Daemon: `GET /info` `Architecture`, and whether `OperatingSystem` is `Docker Desktop`. */
  readonly daemon: { readonly architecture: "x86_64" | "aarch64"; readonly desktop: boolean };
  /** Image architecture (`GET /images/{id}/json` `Architecture`) and create platform. */
  readonly image: { readonly architecture: "amd64" | "arm64"; readonly platform: "linux/amd64" | "linux/arm64" };
  /** Admitted `CgroupVersion` values and the required `CgroupDriver`. */
  readonly cgroup: { readonly versions: readonly ("1" | "2")[]; readonly driver: "systemd" | "cgroupfs" };
  /**
   * Linux security module: `apparmor` requires the daemon's AppArmor and reads back the
   * workload profile `docker-default`; `none` requires no AppArmor and reads back an empty
   * profile; `optional` accepts either and reads back what the daemon implies.
   */
  readonly lsm: "apparmor" | "none" | "optional";
  /**
   * OCI runtime of the containers (`HostConfig.Runtime`, read back after create): `runc`,
   * or `runsc` (gVisor), which the daemon must list in `GET /info` `Runtimes`.
   */
  readonly runtime: "runc" | "runsc";
  /**
   * Smallest `policy.resources.pids` this profile admits (checked by `reserve()`): under
   * gVisor the sentry's own threads count against the container's PID limit.
   */
  readonly minimumPids: number;
}

/**
 * Smallest `policy.resources.pids` of the `linux-x64-gvisor` profile. gVisor's sentry (Go)
 * threads count against the container's PID limit; measured with Debian 12's runsc
 * 2022-12-19 under Engine 28.5 on a 2-core machine: a limit of 32 fails to boot ("cannot
 * create sandbox"; 24: "seccomp probe failed: resource temporarily unavailable"), 40 boots a
 * shell, 256 boots and runs the test suite's node workloads. The sentry starts more threads
 * on hosts with more cores, hence the margin.
 */
export const GVISOR_MINIMUM_PIDS = 256;

/**
 * The profile table. Every row also requires: a rootful daemon without user-namespace
 * remapping, CPU/memory/swap/PID controllers, the builtin default seccomp profile, Linux
 * containers, and private cgroup namespaces for the workload.
 *
 * | profile | controller | daemon | image | cgroup | LSM | runtime (min. PIDs) |
 * | --- | --- | --- | --- | --- | --- | --- |
 * | `linux-x64` (default) | Linux x64 | amd64 | amd64 | v2, systemd | AppArmor, `docker-default` | runc (8) |
 * | `linux-x64-cgroupfs` | Linux x64 | amd64 | amd64 | v1 or v2, cgroupfs | none required | runc (8) |
 * | `linux-x64-gvisor` | Linux x64 | amd64 | amd64 | v1 or v2, cgroupfs | none required | runsc, listed in `/info` `Runtimes` (256) |
 * | `desktop-apple-virtualization-native-arm64` | macOS arm64 | arm64 Docker Desktop | arm64 | v2, cgroupfs | none | runc (8) |
 * | `desktop-apple-virtualization-rosetta-amd64` | macOS arm64 | arm64 Docker Desktop | amd64 | v2, cgroupfs | none | runc (8) |
 */
export const DOCKER_SANDBOX_PROFILES: Readonly<Record<DockerSandboxProfile, DockerSandboxProfileRow>> = Object.freeze({
  "linux-x64": {
    name: "linux-x64",
    host: { platform: "linux", arch: "x64" },
    daemon: { architecture: "x86_64", desktop: false },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["2"], driver: "systemd" },
    lsm: "apparmor",
    runtime: "runc",
    minimumPids: 8,
  },
  "linux-x64-cgroupfs": {
    name: "linux-x64-cgroupfs",
    host: { platform: "linux", arch: "x64" },
    daemon: { architecture: "x86_64", desktop: false },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["1", "2"], driver: "cgroupfs" },
    lsm: "optional",
    runtime: "runc",
    minimumPids: 8,
  },
  "linux-x64-gvisor": {
    name: "linux-x64-gvisor",
    host: { platform: "linux", arch: "x64" },
    daemon: { architecture: "x86_64", desktop: false },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["1", "2"], driver: "cgroupfs" },
    lsm: "optional",
    runtime: "runsc",
    minimumPids: GVISOR_MINIMUM_PIDS,
  },
  "desktop-apple-virtualization-native-arm64": {
    name: "desktop-apple-virtualization-native-arm64",
    host: { platform: "darwin", arch: "arm64" },
    daemon: { architecture: "aarch64", desktop: true },
    image: { architecture: "arm64", platform: "linux/arm64" },
    cgroup: { versions: ["2"], driver: "cgroupfs" },
    lsm: "none",
    runtime: "runc",
    minimumPids: 8,
  },
  "desktop-apple-virtualization-rosetta-amd64": {
    name: "desktop-apple-virtualization-rosetta-amd64",
    host: { platform: "darwin", arch: "arm64" },
    daemon: { architecture: "aarch64", desktop: true },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["2"], driver: "cgroupfs" },
    lsm: "none",
    runtime: "runc",
    minimumPids: 8,
  },
});
