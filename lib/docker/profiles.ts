/**
 * The execution profiles: which controller host, daemon, image architecture, cgroup setup
 * and Linux security module a sandbox may run on. A table of data; admission
 * (`./admission.ts`) checks a daemon against one row.
 *
 * @module
 */

/** Names of the admitted profiles. */
export type DockerSandboxProfile =
  | "linux-x64"
  | "linux-x64-cgroupfs"
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
}

/**
 * The profile table. Every row also requires: a rootful daemon without user-namespace
 * remapping, CPU/memory/swap/PID controllers, the builtin default seccomp profile, Linux
 * containers, and private cgroup namespaces for the workload.
 *
 * | profile | controller | daemon | image | cgroup | LSM |
 * | --- | --- | --- | --- | --- | --- |
 * | `linux-x64` (default) | Linux x64 | amd64 | amd64 | v2, systemd | AppArmor, `docker-default` |
 * | `linux-x64-cgroupfs` | Linux x64 | amd64 | amd64 | v1 or v2, cgroupfs | none required |
 * | `desktop-apple-virtualization-native-arm64` | macOS arm64 | arm64 Docker Desktop | arm64 | v2, cgroupfs | none |
 * | `desktop-apple-virtualization-rosetta-amd64` | macOS arm64 | arm64 Docker Desktop | amd64 | v2, cgroupfs | none |
 */
export const DOCKER_SANDBOX_PROFILES: Readonly<Record<DockerSandboxProfile, DockerSandboxProfileRow>> = Object.freeze({
  "linux-x64": {
    name: "linux-x64",
    host: { platform: "linux", arch: "x64" },
    daemon: { architecture: "x86_64", desktop: false },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["2"], driver: "systemd" },
    lsm: "apparmor",
  },
  "linux-x64-cgroupfs": {
    name: "linux-x64-cgroupfs",
    host: { platform: "linux", arch: "x64" },
    daemon: { architecture: "x86_64", desktop: false },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["1", "2"], driver: "cgroupfs" },
    lsm: "optional",
  },
  "desktop-apple-virtualization-native-arm64": {
    name: "desktop-apple-virtualization-native-arm64",
    host: { platform: "darwin", arch: "arm64" },
    daemon: { architecture: "aarch64", desktop: true },
    image: { architecture: "arm64", platform: "linux/arm64" },
    cgroup: { versions: ["2"], driver: "cgroupfs" },
    lsm: "none",
  },
  "desktop-apple-virtualization-rosetta-amd64": {
    name: "desktop-apple-virtualization-rosetta-amd64",
    host: { platform: "darwin", arch: "arm64" },
    daemon: { architecture: "aarch64", desktop: true },
    image: { architecture: "amd64", platform: "linux/amd64" },
    cgroup: { versions: ["2"], driver: "cgroupfs" },
    lsm: "none",
  },
});
