/**
 * `@agentcell/docker/egress`: the egress allowlist's events and facts. An allowlist sandbox's
 * `sandbox.egress` is a {@linkcode DockerEgressEvents} queue of the proxy's decisions
 * ({@linkcode EgressEvent}: allowed, denied, closed); the proxy's container limits, port and
 * the guest's `NO_PROXY` value are here too, and the `start()` options that carry the routes'
 * secrets ({@linkcode DockerSandboxStartOptions}). The allowlist policy itself
 * (`policy.network: { kind: "allowlist", … }`) is part of the main entry's policy types.
 *
 * @example
 * ```ts
 * import { PROXY_PORT } from "./mod.ts";
 *
 * console.log(`the guest's HTTP_PROXY points at port ${PROXY_PORT}`);
 * ```
 *
 * @module
 */
export { DEFAULT_EGRESS_EVENT_CAPACITY, DockerEgressEvents, type EgressEvent, MAX_EGRESS_LINE_LENGTH } from "./events.ts";
export { EGRESS_ALLOWLIST_API_VERSION } from "./admission.ts";
export { PROXY_LIMITS, PROXY_PORT } from "./proxy_container.ts";
export { EGRESS_NO_PROXY } from "./guest_env.ts";
export { type DockerSandboxSecrets, type DockerSandboxStartOptions, MAX_SECRET_LENGTH } from "./secrets.ts";
