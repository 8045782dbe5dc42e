/**
 * Startup of an allowlist sandbox's egress side, after its internal network exists and
 * before its keeper is created: the egress bridge, then the proxy container (attached to
 * both networks, its output attached before it starts), each recorded before it is created
 * and read back after; then the proxy's address on the internal network, which the guest's
 * `HTTP_PROXY` / `HTTPS_PROXY` name.
 *
 * @module
 */
import { networkInterfaces } from "node:os";
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxConflictError,
  SandboxDeadlineError,
  SandboxError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import type { SandboxAllowlistNetworkSettings } from "../../sandbox/network_allowlist.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { attachContainerOutput, attachContainerStdio } from "../../engine/container_attach.ts";
import { createContainer, inspectContainer, startContainer } from "../../engine/containers.ts";
import type { EngineUpgrade } from "../../engine/http/mod.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import { createNetwork, inspectNetwork } from "../../engine/networks.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import type { SandboxResourceNames, SandboxResourceRole } from "../names.ts";
import type { RecoveryLog } from "../recovery/log.ts";
import { isOwned, RESOURCE_TABLE } from "../recovery/resources.ts";
import { assertCreateWarnings } from "../datasets/warnings.ts";
import { DockerEgressEvents } from "./events.ts";
import { proxyProgramSource } from "./program_source.ts";
import { PROXY_PORT, proxyConfig, proxyCreateBody, containerNetworks, type ProxySpec, verifyProxy } from "./proxy_container.ts";

/** The fix when the proxy image cannot run the program. */
const NEEDS_NODE = "config.proxyImageDigest must name an image with Node.js 23.6 or newer as node on its PATH";

/** What the egress side of a started sandbox is. */
export interface AcquiredEgress {
  /** The proxy container's ID. */
  readonly proxyId: string;
  /** The egress bridge's ID. */
  readonly egressId: string;
  /** `http://<proxy address on the internal network>:3128`. */
  readonly proxyUrl: string;
  /** The proxy's decisions. */
  readonly events: DockerEgressEvents;
  /** The attach connection the decisions come through (closed when the sandbox stops). */
  readonly attach: EngineUpgrade;
}

/** Everything the egress startup needs from the sandbox's startup. */
export interface EgressContext {
  readonly engine: DockerEngine;
  readonly log: RecoveryLog;
  readonly names: SandboxResourceNames;
  readonly allowlist: SandboxAllowlistNetworkSettings;
  /** The routes' secrets, written to the proxy's stdin once it started (never in its configuration). */
  readonly secrets: Readonly<Record<string, string>>;
  readonly imageDigest: string;
  readonly user: { readonly uid: number; readonly gid: number };
  readonly platform: string | undefined;
  readonly labels: (role: SandboxResourceRole) => Readonly<Record<string, string>>;
  /** A recorded create (see `createRecorded`). */
  readonly create: (role: SandboxResourceRole, action: string, dispatch: () => Promise<string>) => Promise<string>;
  /** Deadline and signal of an observation; throws once startup's deadline passed or it aborted. */
  readonly checkpoint: () => { timeoutMs: number; signal?: AbortSignal };
  /** Milliseconds left of startup's deadline (throws when none). */
  readonly remaining: () => number;
}

/**
 * The host's own addresses (every interface's), which the proxy refuses unless allowed.
 *
 * @throws {SandboxConfigurationError} when Deno denies reading them (the message names `--allow-sys=networkInterfaces`)
 * @throws {SandboxUnsupportedError} when the runtime cannot list them
 */
function hostAddresses(): string[] {
  try {
    return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address));
  } catch (error) {
    const denial = denoPermissionDenial(error);
    const action = "Cannot start sandbox: the host's own addresses cannot be read for the egress proxy";
    if (denial) throw new SandboxConfigurationError(`${action}: ${denialReason(denial)}`, { cause: error });
    throw new SandboxUnsupportedError(`${action} (${(error as Error).message})`, { cause: error });
  }
}

/**
 * Write the secrets line (with the proxy's internal address, the only one its routes serve) to
 * the proxy's stdin and end it (the container's `StdinOnce` closes
 * its stdin then; the output side of the attach stays open). A failure says what failed,
 * never what was written.
 *
 * @throws {SandboxUnsupportedError} when the write fails
 */
async function writeSecrets(attach: EngineUpgrade, secrets: Readonly<Record<string, string>>, routeAddress: string): Promise<void> {
  const writer = attach.writable.getWriter();
  try {
    await writer.write(new TextEncoder().encode(`${JSON.stringify({ secrets, routeAddress })}\n`));
    await writer.close();
  } catch (error) {
    throw new SandboxUnsupportedError(`Cannot start sandbox: the routes' secrets cannot be written to the egress proxy's stdin (${(error as Error).name})`);
  } finally {
    writer.releaseLock();
  }
}

/**
 * Create the egress bridge and the proxy, start the proxy and wait until it listens.
 *
 * @throws {SandboxConflictError} when a name is taken or a resource reads back as not ours
 * @throws {SandboxUnsupportedError} when the proxy reads back differently or never listens
 */
export async function acquireEgress(context: EgressContext): Promise<AcquiredEgress> {
  const { engine, log, names, checkpoint, remaining } = context;
  if (await inspectNetwork(engine, names.egress, checkpoint())) {
    throw new SandboxConflictError(`Cannot start sandbox: network ${names.egress} already exists and was not created by this sandbox`);
  }
  const egressId = await context.create("egress", "create egress network", () =>
    createNetwork(engine, names.egress, context.labels("egress"), { timeoutMs: remaining() }));
  const egress = await RESOURCE_TABLE.egress.inspect(engine, log.record, egressId, checkpoint());
  if (!egress || !isOwned(log.record, "egress", egress)) {
    throw new SandboxConflictError(`Cannot start sandbox: network ${names.egress} reads back differently than created`);
  }
  const gateways = ((await inspectNetwork(engine, egressId, checkpoint()))?.IPAM?.Config ?? []).flatMap((config) => config.Gateway ? [config.Gateway] : []);
  const spec: ProxySpec = {
    imageDigest: context.imageDigest,
    user: context.user,
    program: await proxyProgramSource(),
    config: proxyConfig(context.allowlist, [...gateways, ...hostAddresses()]),
    internalNetwork: names.network,
    egressNetwork: names.egress,
    labels: context.labels("proxy"),
  };
  checkpoint();
  let warnings: readonly string[] = [];
  const proxyId = await context.create("proxy", "create egress proxy container", async () => {
    const created = await createContainer(engine, names.proxy, proxyCreateBody(spec), { timeoutMs: remaining(), platform: context.platform });
    warnings = created.warnings;
    return created.id;
  });
  assertCreateWarnings(warnings, 0, "start sandbox: creating the egress proxy");
  const created = await inspectContainer(engine, proxyId, checkpoint());
  const owned = await RESOURCE_TABLE.proxy.inspect(engine, log.record, proxyId, checkpoint());
  if (!owned || !isOwned(log.record, "proxy", owned)) {
    throw new SandboxConflictError(`Cannot start sandbox: container ${names.proxy} reads back with another name, labels, image or user`);
  }
  verifyProxy(created, spec, false);
  // Attached before the start, so not one decision line is missed; with routes, stdin too.
  const withSecrets = spec.config.routes.length > 0;
  const attach = await (withSecrets ? attachContainerStdio : attachContainerOutput)(engine, proxyId, {
    connectTimeoutMs: remaining(),
    headerTimeoutMs: remaining(),
    signal: checkpoint().signal,
  });
  const events = new DockerEgressEvents(attach.readable);
  try {
    await startContainer(engine, proxyId, checkpoint()).catch((error) => {
      // 400: the runtime could not exec the entrypoint (no `node` in the image).
      if (!(error instanceof DockerEngineError && error.status === 400)) throw error;
      throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy cannot start (${error.message}); ${NEEDS_NODE}`, { cause: error });
    });
    const running = await inspectContainer(engine, proxyId, checkpoint());
    verifyProxy(running, spec, true);
    const address = containerNetworks(running)[names.network]?.IPAddress;
    if (!address) throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy has no address on ${names.network}`);
    // With routes the proxy waits for this line before it listens.
    if (withSecrets) await writeSecrets(attach, context.secrets, address);
    const { timeoutMs, signal } = checkpoint();
    await raceDeadline(events.listening, {
      timeoutMs,
      signal,
      onTimeout: () => new SandboxDeadlineError("Cannot start sandbox: the egress proxy did not listen within the startup deadline"),
      onAbort: (reason) => new SandboxAbortedError("Cannot start sandbox: aborted", { cause: reason }),
    }).catch((error) => {
      if (error instanceof SandboxError) throw error;
      throw new SandboxUnsupportedError(
        `Cannot start sandbox: the egress proxy exited before it listened; ${NEEDS_NODE}`,
        { cause: error },
      );
    });
    return { proxyId, egressId, proxyUrl: `http://${address}:${PROXY_PORT}`, events, attach };
  } catch (error) {
    attach.abort(error);
    throw error;
  }
}
