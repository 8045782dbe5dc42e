/**
 * `@agentcell/docker/admission`: the profile table and the daemon checks behind it, for a
 * host that wants to know before it starts anything whether a daemon admits a profile.
 * {@linkcode DOCKER_SANDBOX_PROFILES} lists each profile's host, daemon, cgroup and runtime
 * requirements; {@linkcode unmetDaemonRequirements} says which a daemon's `GET /version` and
 * `GET /info` do not meet, and {@linkcode admitDaemon} refuses with one error naming them all.
 *
 * @example
 * ```ts
 * import { DOCKER_SANDBOX_PROFILES } from "./mod.ts";
 *
 * console.log(DOCKER_SANDBOX_PROFILES["linux-x64-gvisor"].runtime); // "runsc"
 * ```
 *
 * @module
 */
export { DOCKER_SANDBOX_PROFILES, type DockerSandboxProfileRow } from "../profiles.ts";
export { admitDaemon, admitHost, type DaemonAdmission, unmetDaemonRequirements } from "./daemon.ts";
export { IMAGE_MOUNT_ADVISORY } from "../datasets/warnings.ts";
export { IMAGE_MOUNT_API_VERSION } from "../datasets/admission.ts";
