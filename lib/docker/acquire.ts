/**
 * Sandbox startup: admission, then the exact resources in order (volume, network, keeper),
 * each recorded before it is created, checked after, and removed again if startup fails or
 * is cancelled.
 *
 * Cancellation joins in-flight acquisition: an Engine create that was dispatched is allowed
 * to finish (bounded by the startup deadline) so its outcome is known and the resource can
 * be removed by ID; the signal is honoured between steps.
 *
 * @module
 */
import process from "node:process";
import type { SandboxRecoveryPort } from "../sandbox/backend.ts";
import { SandboxAbortedError, SandboxConflictError, SandboxDeadlineError, SandboxError } from "../sandbox/errors.ts";
import type { SandboxPolicy } from "../sandbox/policy.ts";
import type { DockerEngine } from "../engine/client.ts";
import { createContainer, inspectContainer, removeContainer, startContainer } from "../engine/containers.ts";
import { inspectImage } from "../engine/images.ts";
import { createNetwork, inspectNetwork, removeNetwork } from "../engine/networks.ts";
import { createVolume, inspectVolume, removeVolume } from "../engine/volumes.ts";
import { admitDaemon, admitHost } from "./admission.ts";
import type { DockerSandboxBackendSettings } from "./config.ts";
import { admitImage } from "./image_admission.ts";
import { labelsMatch, resourceLabels, type SandboxResourceNames, type SandboxResourceRole } from "./names.ts";
import { RecoveryLog } from "./recovery_log.ts";
import { verifySpillDirectory } from "./spill_directory.ts";
import { asSandboxError } from "./_engine_errors.ts";
import { verifyWorkload, type WorkloadSpec, keeperCreateBody } from "./workload.ts";
import { createWorkDirectory } from "./work_directory.ts";

/** What startup produced: the exact resources of a running sandbox. */
export interface AcquiredSandbox {
  /** Keeper container ID. */
  readonly keeperId: string;
  /** Volume name (volumes are identified by name). */
  readonly volumeName: string;
  /** Network ID (`outbound`), else `undefined`. */
  readonly networkId: string | undefined;
  /** The workload spec, reused for the export accessor. */
  readonly spec: WorkloadSpec;
  /** The recovery log, continued by the sandbox. */
  readonly log: RecoveryLog;
}

/** Everything startup needs. */
export interface AcquireContext {
  readonly engine: DockerEngine;
  readonly settings: DockerSandboxBackendSettings;
  readonly policy: SandboxPolicy;
  readonly reservationId: string;
  readonly names: SandboxResourceNames;
  readonly recovery: SandboxRecoveryPort;
  readonly signal?: AbortSignal;
}

/** Backend revision recorded in labels and recovery records. */
export function backendRevision(profile: string): string {
  return `engine-1.52-v1-${profile}`;
}

/**
 * Start a sandbox: see the module doc.
 *
 * @throws {SandboxUnsupportedError} when the host, daemon, image or readback is not admitted
 * @throws {SandboxConfigurationError} when the spill directory is unusable
 * @throws {SandboxConflictError} when a resource name is already taken
 * @throws {SandboxAbortedError} when `signal` aborted (what was created is removed first)
 * @throws {SandboxDeadlineError} when `policy.deadlines.startupMs` elapsed
 * @throws {SandboxEngineError} when the Engine fails
 */
export async function acquireSandbox(context: AcquireContext): Promise<AcquiredSandbox> {
  const { engine, settings, policy, names, reservationId, signal } = context;
  const startedAt = Date.now();
  const remaining = () => {
    const left = policy.deadlines.startupMs - (Date.now() - startedAt);
    if (left <= 0) throw new SandboxDeadlineError(`Cannot start sandbox: the startup deadline of ${policy.deadlines.startupMs} ms elapsed`);
    return left;
  };
  // Observations (inspect, version, info) take the caller's signal and end at once when it
  // aborts; creates take only the deadline, so a dispatched create is joined and its
  // outcome known before cleanup.
  const checkpoint = () => {
    if (signal?.aborted) throw new SandboxAbortedError("Cannot start sandbox: aborted", { cause: signal.reason });
    return { timeoutMs: remaining(), signal };
  };
  const revision = backendRevision(settings.profile.name);
  const labels = (role: SandboxResourceRole) => resourceLabels(settings.namespace, reservationId, role, revision);
  const outbound = policy.network === "outbound";
  const log = new RecoveryLog(
    context.recovery,
    { revision, reservationId, namespace: settings.namespace, imageDigest: settings.imageDigest },
    names,
    outbound ? ["volume", "network", "keeper"] : ["volume", "keeper"],
  );
  const created: { volume?: string; network?: string; keeper?: string } = {};
  const cleanupMs = policy.deadlines.cleanupMs;
  log.bound(() => ({ timeoutMs: remaining(), signal }));

  try {
    admitHost(settings.profile, { platform: process.platform, arch: process.arch });
    checkpoint();
    await verifySpillDirectory(settings.spillDirectory);
    const [version, info] = await Promise.all([engine.version(checkpoint()), engine.info(checkpoint())]);
    const admission = admitDaemon(settings.profile, version, info);
    admitImage(settings.imageDigest, await inspectImage(engine, settings.imageDigest, checkpoint()), settings.profile);
    await log.update({ daemonId: admission.daemonId });

    // Volume. A create of an existing name answers 201 with the existing volume, so the
    // name must be absent first and the labels ours after.
    checkpoint();
    if (await inspectVolume(engine, names.volume, checkpoint())) {
      throw new SandboxConflictError(`Cannot start sandbox: volume ${names.volume} already exists and was not created by this sandbox`);
    }
    await log.mark("volume", "creating");
    const volume = await createVolume(engine, names.volume, labels("volume"), { timeoutMs: remaining() });
    if (!labelsMatch(volume.Labels, labels("volume"))) {
      throw new SandboxConflictError(`Cannot start sandbox: volume ${names.volume} exists with foreign labels; it is left alone`);
    }
    created.volume = names.volume;
    await log.mark("volume", "created", names.volume);

    let networkId: string | undefined;
    if (outbound) {
      checkpoint();
      if (await inspectNetwork(engine, names.network, checkpoint())) {
        throw new SandboxConflictError(`Cannot start sandbox: network ${names.network} already exists and was not created by this sandbox`);
      }
      await log.mark("network", "creating");
      networkId = await createNetwork(engine, names.network, labels("network"), { timeoutMs: remaining() });
      created.network = networkId;
      const network = await inspectNetwork(engine, networkId, { timeoutMs: remaining() });
      if (!network || network.Name !== names.network || !labelsMatch(network.Labels, labels("network")) || network.Driver !== "bridge" || network.Internal) {
        throw new SandboxConflictError(`Cannot start sandbox: network ${names.network} reads back differently than created`);
      }
      await log.mark("network", "created", networkId);
    }

    const spec: WorkloadSpec = {
      imageDigest: settings.imageDigest,
      user: settings.user,
      policy,
      volumeName: names.volume,
      networkName: outbound ? names.network : undefined,
      labels: labels("keeper"),
      appArmorProfile: admission.appArmorProfile,
    };
    checkpoint();
    await log.mark("keeper", "creating");
    const keeper = await createContainer(engine, names.keeper, keeperCreateBody(spec), {
      timeoutMs: remaining(),
      platform: settings.profile.image.platform,
    });
    created.keeper = keeper.id;
    await log.mark("keeper", "created", keeper.id);
    const createdInspect = await inspectContainer(engine, keeper.id, checkpoint());
    if (!labelsMatch(createdInspect.Config.Labels, labels("keeper")) || createdInspect.Name !== `/${names.keeper}`) {
      throw new SandboxConflictError(`Cannot start sandbox: container ${names.keeper} reads back with another name or labels`);
    }
    verifyWorkload(createdInspect, spec, false);
    await createWorkDirectory(engine, keeper.id, settings.user, checkpoint());
    await startContainer(engine, keeper.id, checkpoint());
    verifyWorkload(await inspectContainer(engine, keeper.id, checkpoint()), spec, true);
    checkpoint();
    return { keeperId: keeper.id, volumeName: names.volume, networkId, spec, log };
  } catch (error) {
    const failure = asSandboxError(error, "start sandbox");
    log.bound(() => ({ timeoutMs: cleanupMs }));
    const cleanup: unknown[] = [];
    const attempt = async (role: SandboxResourceRole, remove: () => Promise<unknown>) => {
      try {
        await remove();
        await log.mark(role, "removed");
      } catch (cause) {
        cleanup.push(cause);
      }
    };
    // A create whose reply was lost may still have happened: the owner looks up its own
    // reserved name once and removes it by ID only when it carries this reservation's labels.
    const resolveUncertain = async (role: "keeper" | "network" | "volume") => {
      if (created[role] || log.record.resources[role]?.state !== "creating") return;
      try {
        if (role === "keeper") {
          const found = await inspectContainer(engine, names.keeper, { timeoutMs: cleanupMs }).catch(() => undefined);
          if (found && labelsMatch(found.Config.Labels, labels("keeper"))) created.keeper = found.Id;
        } else if (role === "network") {
          const found = await inspectNetwork(engine, names.network, { timeoutMs: cleanupMs });
          if (found && labelsMatch(found.Labels, labels("network"))) created.network = found.Id;
        } else {
          const found = await inspectVolume(engine, names.volume, { timeoutMs: cleanupMs });
          if (found && labelsMatch(found.Labels, labels("volume"))) created.volume = found.Name;
        }
      } catch (cause) {
        cleanup.push(cause);
      }
    };
    await resolveUncertain("keeper");
    await resolveUncertain("network");
    await resolveUncertain("volume");
    if (created.keeper) await attempt("keeper", () => removeContainer(engine, created.keeper!, { timeoutMs: cleanupMs }));
    if (created.network) await attempt("network", () => removeNetwork(engine, created.network!, { timeoutMs: cleanupMs }));
    if (created.volume) await attempt("volume", () => removeVolume(engine, created.volume!, { timeoutMs: cleanupMs }));
    if (cleanup.length > 0) {
      throw new SandboxError(failure.code, `${failure.message}; cleanup also failed (the recovery record names what remains)`, {
        cause: new AggregateError([failure, ...cleanup]),
      });
    }
    throw failure;
  }
}
