/**
 * The egress proxy container of an allowlist sandbox: its create body (hardened like the
 * keeper) and the readback that checks the Engine applied every part of it.
 *
 * How the program gets in (measured on Engine 28.5, runc): `PUT /containers/{id}/archive`
 * cannot write into a read-only root file system (the Engine refuses unless the target is
 * a volume mount), and a copy into a tmpfs of a created, not yet started container does not
 * land in the tmpfs the started container sees. So the program's text is passed on the
 * command line, `node --input-type=module-typescript -e <text>` (Node ≥ 23.6 strips the
 * types), and read back byte for byte from `Config.Cmd` before the container starts: no
 * writable path, no volume, nothing the guest can reach. Its configuration is JSON in the
 * `AGENTCELL_EGRESS_CONFIG` environment variable, read back the same way. With routes, the
 * routes' secrets are not in either: the container keeps stdin open (`OpenStdin`, `StdinOnce`)
 * and the controller writes them as one line through the Engine's attach, then ends it
 * (`acquire_egress.ts`); inspect shows only that stdin is open.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { SandboxAllowlistNetworkSettings } from "../../sandbox/network_allowlist.ts";
import type { ContainerInspect } from "../../engine/containers.ts";
import type { EgressProxyConfig } from "./proxy_program.ts";
import { socketBufferSysctls } from "../keeper/socket_buffers.ts";
import { nodeProgramCreateBody, nodeProgramMismatches, type NodeProgramContainer } from "../_node_program_container.ts";

/** TCP port the proxy listens on inside its container. */
export const PROXY_PORT = 3128;

/**
 * The proxy container's fixed limits: 0.5 CPU, 128 MiB of memory (no swap; Node's resident
 * set is ~50 MiB, and on cgroup v1 the `node` binary's file pages are charged too), 64 PIDs
 * (Node's threads: main, libuv pool of 4, V8 workers), and 4,096 open files
 * (`RLIMIT_NOFILE`, soft = hard, sent as `HostConfig.Ulimits` with `core` 0): the program
 * holds at most `maxConnections` (≤ 1,024) guest connections with one upstream each plus as
 * many refused ones lingering, 3,072 descriptors, and Node needs a few dozen of its own.
 */
export const PROXY_LIMITS: { readonly cpus: number; readonly memoryBytes: number; readonly pids: number; readonly nofile: number } = Object.freeze({
  cpus: 0.5,
  memoryBytes: 128 * 1024 * 1024,
  pids: 64,
  nofile: 4096,
});

/** Everything the proxy's create body depends on. */
export interface ProxySpec {
  /** Exact image ID (with `node` on its `PATH`). */
  readonly imageDigest: string;
  /** The container's user (the backend's `keeperUser`). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The program's text. */
  readonly program: string;
  /** What the program enforces. */
  readonly config: EgressProxyConfig;
  /** The sandbox's internal network name (the container's `NetworkMode`). */
  readonly internalNetwork: string;
  /** The egress bridge's name. */
  readonly egressNetwork: string;
  /** Exact labels. */
  readonly labels: Readonly<Record<string, string>>;
}

/** The program's configuration for an allowlist policy. */
export function proxyConfig(allowlist: SandboxAllowlistNetworkSettings, hostAddresses: readonly string[]): EgressProxyConfig {
  return {
    port: PROXY_PORT,
    hosts: allowlist.hosts,
    addresses: allowlist.addresses,
    hostAddresses,
    resolve: allowlist.resolve,
    maxConnections: allowlist.maxConnections,
    headersTimeoutMs: allowlist.headersTimeoutMs,
    idleTimeoutMs: allowlist.idleTimeoutMs,
    maxBytesPerConnection: allowlist.maxBytesPerConnection,
    routes: allowlist.routes.map((route) => {
      const url = new URL(route.upstream);
      return {
        name: route.name,
        host: url.hostname,
        port: Number(url.port || 443),
        basePath: url.pathname === "/" ? "" : url.pathname,
        headers: route.headers,
      };
    }),
    upstreamCaCertificates: allowlist.upstreamCaCertificates,
  };
}

/** Whether the proxy takes secrets on its stdin (it has routes). */
function takesSecrets(spec: ProxySpec): boolean {
  return spec.config.routes.length > 0;
}

/** The proxy as a helper container of ours. */
function helper(spec: ProxySpec): NodeProgramContainer {
  return {
    imageDigest: spec.imageDigest,
    user: spec.user,
    args: ["-e", spec.program],
    env: [`AGENTCELL_EGRESS_CONFIG=${JSON.stringify(spec.config)}`],
    labels: spec.labels,
    limits: PROXY_LIMITS,
    networkMode: spec.internalNetwork,
    // The socket buffer caps apply only under runc, which the helper body names.
    sysctls: socketBufferSysctls("runc"),
    // With routes, stdin carries the secrets line once, then ends (StdinOnce closes it when
    // the controller's attach ends its side).
    stdin: takesSecrets(spec),
  };
}

/** The `POST /containers/create` body of the proxy (Engine API v1.44+: two endpoints at create). */
export function proxyCreateBody(spec: ProxySpec): Record<string, unknown> {
  return {
    ...nodeProgramCreateBody(helper(spec)),
    NetworkingConfig: { EndpointsConfig: { [spec.internalNetwork]: {}, [spec.egressNetwork]: {} } },
  };
}

const networksSchema = z.looseObject({
  NetworkSettings: z.looseObject({
    Networks: z.record(z.string(), z.looseObject({ IPAddress: z.string(), NetworkID: z.string() })).nullable(),
  }),
});

/** A container's networks by name, as inspect shows them (`{}` when absent). */
export function containerNetworks(inspect: ContainerInspect): Readonly<Record<string, { readonly IPAddress: string; readonly NetworkID: string }>> {
  const parsed = networksSchema.safeParse(inspect);
  return parsed.success ? parsed.data.NetworkSettings.Networks ?? {} : {};
}

/**
 * Compare the proxy's `GET /containers/{id}/json` with its spec: every hardening field of
 * `HostConfig` against the create body itself (one source for what is sent and what is
 * checked), then the image, user, command, environment, attachments and networks.
 *
 * @param running whether it must be running (after start) or merely created
 * @returns one sentence per mismatch (empty when everything matches)
 */
export function proxyMismatches(inspect: ContainerInspect, spec: ProxySpec, running: boolean): string[] {
  const problems = nodeProgramMismatches(inspect, helper(spec), false, "proxy");
  const networks = Object.keys(containerNetworks(inspect)).sort();
  if (!isDeepStrictEqual(networks, [spec.internalNetwork, spec.egressNetwork].sort())) problems.push(`networks are ${JSON.stringify(networks)}`);
  if (running && !inspect.State.Running) problems.push(`state is ${inspect.State.Status}`);
  return problems;
}

/**
 * Throw when the readback differs from the spec.
 *
 * @throws {SandboxUnsupportedError} listing every mismatch
 */
export function verifyProxy(inspect: ContainerInspect, spec: ProxySpec, running: boolean): void {
  const problems = proxyMismatches(inspect, spec, running);
  if (problems.length > 0) {
    throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy container reads back differently: ${problems.join("; ")}`);
  }
}
