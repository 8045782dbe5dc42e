/**
 * The port relay container of a sandbox: its create body (hardened like the egress proxy,
 * joined to the keeper's network namespace) and the readback that checks the Engine applied
 * every part of it.
 *
 * It runs the backend's helper image (`config.proxyImageDigest`, Node.js ≥ 23.6) as the
 * keeper's user with `node --input-type=module-typescript -e <relay_program.ts> agentcell-relay`
 * — the program's text on the command line, read back byte for byte, as the proxy's
 * (`egress/proxy_container.ts`) — with `NetworkMode: container:<keeper ID>`: its only network
 * is the sandbox's own namespace, where `127.0.0.1` is the guest's loopback. It has no
 * network of its own, no published or exposed port, no mount, a read-only root, no
 * capabilities; stdin is open (`OpenStdin`, `StdinOnce`: it ends when the controller's
 * attach ends). Its `HostConfig.Sysctls` is empty: the namespace is the keeper's, whose
 * socket buffer caps already apply (the Engine refuses `net.*` sysctls in a joined namespace).
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { ContainerInspect } from "../../engine/containers.ts";
import { nodeProgramCreateBody, nodeProgramMismatches, type NodeProgramContainer } from "../_node_program_container.ts";
import { containerNetworks } from "../egress/proxy_container.ts";
import { RELAY_ARGUMENT } from "./relay_program.ts";

/**
 * The relay container's fixed limits: 1 CPU (it carries every byte of the sandbox's
 * connections), 192 MiB of memory (Node's ~50 MiB plus one 1 MiB window per connection
 * towards the guest, at most 64), 64 PIDs and 4,096 open files (`RLIMIT_NOFILE`, soft = hard,
 * with `core` 0).
 */
export const RELAY_LIMITS: { readonly cpus: number; readonly memoryBytes: number; readonly pids: number; readonly nofile: number } = Object.freeze({
  cpus: 1,
  memoryBytes: 192 * 1024 * 1024,
  pids: 64,
  nofile: 4096,
});

/** Everything the relay's create body depends on. */
export interface RelaySpec {
  /** Exact image ID (with `node` on its `PATH`). */
  readonly imageDigest: string;
  /** The container's user (the backend's `keeperUser`). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The program's text. */
  readonly program: string;
  /** The keeper's full container ID (the namespace joined). */
  readonly keeperId: string;
  /** Exact labels. */
  readonly labels: Readonly<Record<string, string>>;
}

/** The relay as a helper container of ours. */
function helper(spec: RelaySpec): NodeProgramContainer {
  return {
    imageDigest: spec.imageDigest,
    user: spec.user,
    args: ["-e", spec.program, RELAY_ARGUMENT],
    env: [],
    labels: spec.labels,
    limits: RELAY_LIMITS,
    networkMode: `container:${spec.keeperId}`,
    // The namespace is the keeper's: its socket buffer caps already hold (see the module doc).
    sysctls: {},
    stdin: true,
  };
}

/** The `POST /containers/create` body of the relay (Engine API v1.44+): no network of its own. */
export function relayCreateBody(spec: RelaySpec): Record<string, unknown> {
  return nodeProgramCreateBody(helper(spec));
}

/**
 * Compare the relay's `GET /containers/{id}/json` with its spec: what every helper container
 * shares (hardening, image, user, command, environment, stdin open) and that it is on no
 * network of its own.
 *
 * @param running whether it must be running (after start) or merely created
 * @returns one sentence per mismatch (empty when everything matches)
 */
export function relayMismatches(inspect: ContainerInspect, spec: RelaySpec, running: boolean): string[] {
  const problems = nodeProgramMismatches(inspect, helper(spec), running, "relay");
  const networks = Object.keys(containerNetworks(inspect));
  if (networks.length > 0) problems.push(`networks are ${JSON.stringify(networks)}`);
  return problems;
}

/**
 * Throw when the readback differs from the spec.
 *
 * @throws {SandboxUnsupportedError} listing every mismatch
 */
export function verifyRelay(inspect: ContainerInspect, spec: RelaySpec, running: boolean): void {
  const problems = relayMismatches(inspect, spec, running);
  if (problems.length > 0) {
    throw new SandboxUnsupportedError(`Cannot connect: the port relay container reads back differently: ${problems.join("; ")}`);
  }
}
