/**
 * Sandbox startup: admission (host, spill directory, daemon, workload image, and for
 * datasets the Engine API 1.48 floor and each dataset image), then the exact resources in
 * order (volume, network, for an allowlist the egress bridge and the proxy, keeper), each
 * recorded before it is created, checked after (the
 * create's warnings, the readback), and removed again if startup fails or is cancelled.
 *
 * Cancellation joins in-flight acquisition: an Engine create that was dispatched is allowed
 * to finish (bounded by the startup deadline) so its outcome is known and the resource can
 * be removed by ID; the signal is honoured between steps.
 *
 * @module
 */
import process from "node:process";
import type { SandboxRecoveryPort } from "../sandbox/backend.ts";
import { SandboxAbortedError, SandboxConflictError, SandboxDeadlineError } from "../sandbox/errors.ts";
import type { SandboxPolicy } from "../sandbox/policy.ts";
import type { DockerEngine } from "../engine/client.ts";
import type { EngineVersion } from "../engine/system.ts";
import { createContainer, inspectContainer, startContainer } from "../engine/containers.ts";
import { inspectImage } from "../engine/images.ts";
import { createNetwork, inspectNetwork } from "../engine/networks.ts";
import { createVolume, inspectVolume } from "../engine/volumes.ts";
import { admitDaemon, admitForwarding, admitHost, admitResources } from "./admission/daemon.ts";
import { combinedLease, type ControllerLease, startControllerLease, startProxyLease } from "./keeper/guards.ts";
import type { DockerSandboxBackendSettings } from "./config.ts";
import { admitImage } from "./admission/image.ts";
import { labelsMatch, resourceLabels, type SandboxResourceNames, type SandboxResourceRole } from "./names.ts";
import { portLocks } from "./recovery/lock.ts";
import { RecoveryLog } from "./recovery/log.ts";
import {
  backendIdentity,
  newNonce,
  plannedRecord,
  policyDigest,
  type RecoveryIdentity,
} from "./recovery/record.ts";
import { createRecorded, isOwned, removeAllRecorded, RESOURCE_TABLE } from "./recovery/resources.ts";
import { verifySpillDirectory } from "./admission/spill_directory.ts";
import { asSandboxError, rephrased } from "./_engine_errors.ts";
import { verifyWorkload, type WorkloadSpec, keeperCreateBody } from "./keeper/spec.ts";
import { imageMountCount, keeperMounts } from "./keeper/mounts.ts";
import { admitDatasetEngine, admitDatasetImages } from "./datasets/admission.ts";
import { missingSubpathError } from "./datasets/missing_subpath.ts";
import { assertCreateWarnings } from "./datasets/warnings.ts";
import { createWorkDirectory } from "./keeper/work_directory.ts";
import { type AcquiredEgress, acquireEgress } from "./egress/acquire_egress.ts";
import { admitEgress } from "./egress/admission.ts";
import { egressGuestEnv } from "./egress/guest_env.ts";
import { foreignHolders, type GuestUser } from "./user_range.ts";
import type { DockerWorkspaceSnapshot } from "./snapshots/snapshot.ts";
import { admitSnapshot } from "./snapshots/admit_snapshot.ts";
import { copyTree } from "./snapshots/copier.ts";
import { copyBound, type SnapshotByteBound } from "./snapshots/byte_bound.ts";
import { WORK_DIRECTORY } from "./guest_paths.ts";

/** What startup produced: the exact resources of a running sandbox. */
export interface AcquiredSandbox {
  /** Keeper container ID. */
  readonly keeperId: string;
  /** Volume name (volumes are identified by name). */
  readonly volumeName: string;
  /** Network ID (`outbound`, `allowlist`), else `undefined`. */
  readonly networkId: string | undefined;
  /** The egress proxy, its bridge and its decisions (`allowlist`), else `undefined`. */
  readonly egress: AcquiredEgress | undefined;
  /** The workload spec, reused for the export accessor. */
  readonly spec: WorkloadSpec;
  /** The recovery log, continued by the sandbox. */
  readonly log: RecoveryLog;
  /** The controller lease (`policy.controllerLoss: "stop"`), released once compute is removed. */
  readonly lease: ControllerLease | undefined;
  /** Releases a `config.userRange` uid once compute is removed (set by the backend). */
  releaseUser?: () => void;
}

/**
 * The daemon's `GET /version` as last seen by one backend, with the daemon ID (`GET /info`
 * `ID`) it belongs to. The facts admission reads from it (OS, API version) are the daemon
 * build's and change only with a restart into another daemon; `/info` is still fetched on
 * every start (controllers, security options and the ID can change with a restart), and a
 * different ID fetches `/version` again.
 */
export interface DaemonVersionMemo {
  /** Set by the first start; replaced when the daemon ID changes. */
  current?: { readonly daemonId: string; readonly version: EngineVersion };
}

/** Everything startup needs. */
export interface AcquireContext {
  readonly engine: DockerEngine;
  readonly settings: DockerSandboxBackendSettings;
  readonly policy: SandboxPolicy;
  readonly reservationId: string;
  readonly names: SandboxResourceNames;
  /** The agent's identity: `settings.user`, or the uid drawn from `settings.userRange`. */
  readonly user: GuestUser;
  readonly recovery: SandboxRecoveryPort;
  readonly signal?: AbortSignal;
  /** The backend's memo of `/version`; without it every start fetches it. */
  readonly daemonVersion?: DaemonVersionMemo;
  /** A fork: the snapshot `/workspace/work` starts as a copy of (`request.workspace.from`). */
  readonly from?: DockerWorkspaceSnapshot;
  /** The bound of a fork's copy (`request.workspace.maxBytes`, else the config's default). */
  readonly fromBound?: SnapshotByteBound;
  /** The routes' secrets (checked), for the egress proxy's stdin only. */
  readonly secrets?: Readonly<Record<string, string>>;
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
  const { engine, settings, policy, names, reservationId, signal, user } = context;
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
  const allowlist = typeof policy.network === "object" ? policy.network : undefined;
  const outbound = policy.network === "outbound";
  const networked = outbound || allowlist !== undefined;
  const roles: SandboxResourceRole[] = allowlist
    ? ["volume", "network", "egress", "proxy", "keeper"]
    : outbound
    ? ["volume", "network", "keeper"]
    : ["volume", "keeper"];
  // reserve() refuses an allowlist without it.
  const proxyImageDigest = allowlist ? settings.proxyImageDigest! : undefined;
  let egress: AcquiredEgress | undefined;
  let log: RecoveryLog | undefined;
  const cleanupMs = policy.deadlines.cleanupMs;

  try {
    admitHost(settings.profile, { platform: process.platform, arch: process.arch });
    checkpoint();
    await verifySpillDirectory(settings.spillDirectory);
    // Every observation before the first effect goes out at once: daemon admission (`/info`
    // on every start; `/version` once per daemon ID, see DaemonVersionMemo), the image, the
    // dataset images, and the volume name that must still be free. They are judged in this
    // order afterwards.
    const memo = context.daemonVersion;
    const seen = memo?.current;
    const [info, fetchedVersion, image, datasetImages, existingVolume, proxyImage, snapshotVolume] = await Promise.all([
      engine.info(checkpoint()),
      seen === undefined ? engine.version(checkpoint()) : undefined,
      inspectImage(engine, settings.imageDigest, checkpoint()),
      Promise.all(settings.datasets.map((dataset) => inspectImage(engine, dataset.imageDigest, checkpoint()))),
      inspectVolume(engine, names.volume, checkpoint()),
      proxyImageDigest === undefined ? undefined : inspectImage(engine, proxyImageDigest, checkpoint()),
      context.from === undefined ? undefined : inspectVolume(engine, context.from.volumeName, checkpoint()),
    ]);
    const version = fetchedVersion ?? (seen?.daemonId === info.ID ? seen!.version : await engine.version(checkpoint()));
    const admission = admitDaemon(settings.profile, version, info);
    if (memo !== undefined) memo.current = { daemonId: info.ID ?? "", version };
    admitForwarding(policy, info);
    admitResources(policy, info);
    admitImage(settings.imageDigest, image, settings.profile);
    admitDatasetEngine(settings.datasets, version);
    admitDatasetImages(settings.datasets, datasetImages);
    if (proxyImageDigest !== undefined) admitEgress(version, proxyImageDigest, proxyImage, settings.profile);
    if (context.from !== undefined) admitSnapshot(context.from, snapshotVolume, "start sandbox");
    if (existingVolume) {
      throw new SandboxConflictError(`Cannot start sandbox: volume ${names.volume} already exists and was not created by this sandbox`);
    }

    // The planned record, persisted before any resource effect.
    const identity: RecoveryIdentity = {
      reservationId,
      ...backendIdentity(settings),
      daemonId: admission.daemonId,
      ...(proxyImageDigest === undefined ? {} : { proxyImageDigest }),
      ...(settings.proxyImageDigest === undefined ? {} : { relayImageDigest: settings.proxyImageDigest }),
      user,
      names,
      nonce: newNonce(),
      policyDigest: policyDigest(policy),
    };
    log = new RecoveryLog(context.recovery, plannedRecord(identity, roles));
    log.bound(() => ({ timeoutMs: remaining(), signal }));
    await log.persist();
    const labels = (role: SandboxResourceRole) => resourceLabels(log!.record, role);
    // Creates take only the deadline (a dispatched create is joined so its outcome is
    // known); the lookup after an unknown outcome is bounded by the cleanup deadline.
    const create = (role: SandboxResourceRole, action: string, dispatch: () => Promise<string>) =>
      createRecorded(engine, log!, role, action, dispatch, { timeoutMs: cleanupMs });

    // Volume. A create of an existing name answers 201 with the existing volume, so the
    // name must be absent first (checked with the observations above) and the labels ours after.
    checkpoint();
    await create("volume", "create volume", async () => {
      const volume = await createVolume(engine, names.volume, labels("volume"), { timeoutMs: remaining() });
      // 201 with someone else's volume of this name: a definite answer, nothing of ours.
      if (!labelsMatch(volume.Labels, labels("volume"))) {
        throw new SandboxConflictError(`Cannot start sandbox: volume ${names.volume} exists with foreign labels; it is left alone`);
      }
      return volume.Name;
    });

    let networkId: string | undefined;
    if (networked) {
      checkpoint();
      if (await inspectNetwork(engine, names.network, checkpoint())) {
        throw new SandboxConflictError(`Cannot start sandbox: network ${names.network} already exists and was not created by this sandbox`);
      }
      // An allowlist's own network is internal with an isolated gateway: no route out and no
      // address of the host on it (see GATEWAY_MODE_OPTION); only the proxy is reachable.
      networkId = await create("network", "create network", () =>
        createNetwork(engine, names.network, labels("network"), { timeoutMs: remaining(), internal: allowlist !== undefined }));
      const network = await RESOURCE_TABLE.network.inspect(engine, log.record, networkId, { timeoutMs: remaining() });
      if (!network || !isOwned(log.record, "network", network)) {
        throw new SandboxConflictError(`Cannot start sandbox: network ${names.network} reads back differently than created`);
      }
    }
    if (allowlist !== undefined) {
      checkpoint();
      egress = await acquireEgress({
        engine,
        log,
        names,
        allowlist,
        secrets: context.secrets ?? {},
        imageDigest: proxyImageDigest!,
        user: settings.keeperUser,
        platform: settings.profile.image.platform,
        labels,
        create,
        checkpoint,
        remaining,
      });
    }

    const spec: WorkloadSpec = {
      imageDigest: settings.imageDigest,
      user,
      keeperUser: settings.keeperUser,
      policy,
      mounts: keeperMounts(names.volume, settings.datasets),
      networkName: networked ? names.network : undefined,
      labels: labels("keeper"),
      appArmorProfile: admission.appArmorProfile,
      ...(egress ? { extraEnv: egressGuestEnv(egress.proxyUrl, allowlist!.routes) } : {}),
      runtime: settings.profile.runtime,
    };
    checkpoint();
    let warnings: readonly string[] = [];
    const keeperId = await create("keeper", "create keeper container", async () => {
      const created = await createContainer(engine, names.keeper, keeperCreateBody(spec), {
        timeoutMs: remaining(),
        platform: settings.profile.image.platform,
      });
      warnings = created.warnings;
      return created.id;
    });
    assertCreateWarnings(warnings, imageMountCount(spec.mounts), "start sandbox");
    const createdInspect = await inspectContainer(engine, keeperId, checkpoint());
    if (!labelsMatch(createdInspect.Config.Labels, labels("keeper")) || createdInspect.Name !== `/${names.keeper}`) {
      throw new SandboxConflictError(`Cannot start sandbox: container ${names.keeper} reads back with another name or labels`);
    }
    verifyWorkload(createdInspect, spec, false);
    if (settings.userRange !== undefined) {
      // Our keeper exists (labelled with its uid) before we look: of two overlapping starts
      // with one uid, the later look always sees the earlier keeper (see user_range.ts).
      const holders = await foreignHolders(engine, user.uid, reservationId, checkpoint());
      if (holders.length > 0) {
        throw new SandboxConflictError(
          `Cannot start sandbox: uid ${user.uid} of config.userRange is already held by the keeper of reservation ${holders[0]} (another backend or controller on this daemon): reserve again to draw another uid`,
        );
      }
    }
    // The first calls that mount the keeper's file systems: a dataset subpath missing from
    // its image fails here.
    const explained = (error: unknown) => {
      throw missingSubpathError(error, settings.datasets) ?? error;
    };
    await createWorkDirectory(engine, keeperId, user, checkpoint()).catch(explained);
    if (context.from !== undefined) {
      // A fork: the snapshot's tree into /workspace/work, given to this sandbox's user,
      // before anything runs (the copier is this record's own, removed after the copy).
      checkpoint();
      await copyTree({
        engine,
        log,
        imageDigest: settings.imageDigest,
        platform: settings.profile.image.platform,
        runtime: settings.profile.runtime,
        from: { volume: context.from.volumeName, path: "" },
        to: { volume: names.volume, path: WORK_DIRECTORY },
        owner: user,
        bound: copyBound(context.fromBound, "start sandbox", `snapshot ${context.from.id}`),
        timeoutMs: remaining(),
      });
    }
    await startContainer(engine, keeperId, checkpoint()).catch(explained);
    verifyWorkload(await inspectContainer(engine, keeperId, checkpoint()), spec, true);
    // The lease covers every container that computes: the keeper, and the egress proxy.
    const leases: ControllerLease[] = [];
    let lease: ControllerLease | undefined;
    try {
      if (policy.controllerLoss === "stop") {
        leases.push(await startControllerLease({ engine, keeperId, user: settings.keeperUser, ...checkpoint() }));
        if (egress) leases.push(await startProxyLease({ engine, keeperId: egress.proxyId, user: settings.keeperUser, ...checkpoint() }));
        lease = combinedLease(leases as [ControllerLease, ...ControllerLease[]]);
      }
      checkpoint();
    } catch (error) {
      for (const started of leases) started.release();
      throw error;
    }
    return { keeperId, volumeName: names.volume, networkId, egress, spec, log, lease };
  } catch (error) {
    const failure = asSandboxError(error, "start sandbox");
    egress?.attach.abort(failure);
    if (log === undefined) throw failure;
    log.bound(() => ({ timeoutMs: cleanupMs }));
    const report = await removeAllRecorded(engine, log, { timeoutMs: cleanupMs });
    // This start is over (a reservation starts once): its record, if it still names
    // something, is for recovery now, so this process no longer holds its controller lock.
    await portLocks(context.recovery)?.release(reservationId).catch(() => {});
    if (report.failures.length > 0) {
      throw rephrased(
        failure,
        `${failure.message}; cleanup also failed (the recovery record names what remains)`,
        new AggregateError([failure, ...report.failures.map((f) => f.error)]),
      );
    }
    throw failure;
  }
}
