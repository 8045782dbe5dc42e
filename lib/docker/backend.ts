/**
 * {@linkcode createDockerSandboxBackend}: the entry point of the Docker backend.
 *
 * @module
 */
import type { SandboxBackend, SandboxRecoveryPort, SandboxRecoveryRecord, SandboxRequest, SandboxReservation } from "../sandbox/backend.ts";
import { SandboxConfigurationError, SandboxStateError } from "../sandbox/errors.ts";
import { normalizePolicy, type SandboxPolicy } from "../sandbox/policy.ts";
import { assertSupportedDiskQuota } from "./admission/disk_quota.ts";
import { DockerEngine } from "../engine/client.ts";
import { acquireSandbox, type DaemonVersionMemo } from "./acquire.ts";
import { admitPolicy } from "./admission/daemon.ts";
import { type DockerSandboxBackendConfig, type DockerSandboxBackendSettings, normalizeBackendConfig } from "./config.ts";
import { newReservationId, resourceNames, type SandboxResourceNames } from "./names.ts";
import { type DockerSandboxRecoverOptions, type DockerSandboxRecovery, recoverSandbox } from "./recovery/recover.ts";
import { createDockerSandboxPool, type DockerSandboxPool, type DockerSandboxPoolOptions } from "./pool.ts";
import { DockerSandbox } from "./sandbox.ts";
import { assertEgressConfigured } from "./egress/configuration.ts";
import { type DockerSandboxStartOptions, resolveRouteSecrets } from "./egress/secrets.ts";
import { UserRangeAllocator } from "./user_range.ts";
import { DockerWorkspaceSnapshot } from "./snapshots/snapshot.ts";
import { type DockerRemoveSnapshotOptions, listSnapshots, removeSnapshot, type SnapshotListingStore } from "./snapshots/manage.ts";
import { newSnapshot } from "./snapshots/snapshot.ts";
import { type DockerSnapshotTransferOptions, importSnapshotTree } from "./snapshots/portable.ts";
import { snapshotByteBound } from "./snapshots/byte_bound.ts";

/**
 * A request for one Docker sandbox: the neutral request, and optionally where its
 * workspace starts from.
 */
export interface DockerSandboxRequest extends SandboxRequest {
  /**
   * `{ from: snapshot }`: a fork — `/workspace/work` starts as a copy of the snapshot's tree,
   * given to this sandbox's user, before anything runs. Forks are independent of each other
   * and of the snapshot (removing it later does not touch them).
   *
   * `maxBytes`: most bytes of regular-file content the fork's copy may write (a non-negative
   * safe integer), counted at apparent size (a sparse file at its full length: the copy
   * writes it whole), checked before the copy writes anything; past it `start()` fails with
   * `SandboxQuotaError` and removes what it made. Default `config.defaultExportQuota.bytes`,
   * or none when that is unset.
   * @default undefined (an empty `/workspace/work`)
   */
  readonly workspace?: { readonly from: DockerWorkspaceSnapshot; readonly maxBytes?: number };
}

/** A Docker sandbox backend (see {@linkcode createDockerSandboxBackend}). */
export interface DockerSandboxBackend extends SandboxBackend {
  /** The validated configuration. */
  readonly settings: DockerSandboxBackendSettings;
  /**
   * Reserve a sandbox. Synchronous and inert: validates the request, fixes the reservation
   * ID and every resource name, and does no I/O. `recovery.record()` is called during
   * `start()` before each resource effect.
   *
   * @throws {SandboxConfigurationError} for an invalid request (the message names the field:
   *   `request.workspace.maxBytes` that is not a non-negative safe integer, say),
   *   or `policy.resources.pids` below the profile's minimum (256 for `linux-x64-gvisor`)
   * @throws {SandboxUnsupportedError} for `policy.workspaceDiskQuota.kind === "required"`, or
   *   any `policy.network` but `"isolated"` under `linux-x64-gvisor`
   * @throws {SandboxConfigurationError} for an allowlist network without `config.proxyImageDigest`
   * @throws {SandboxQuotaError} with `config.userRange`, when every uid of the range is held
   *   by a live sandbox of this backend
   */
  reserve(request: DockerSandboxRequest, recovery: SandboxRecoveryPort): DockerSandboxReservation;
  /**
   * Remove a workspace snapshot (`sandbox.snapshot()`, `importSnapshot()`, `snapshots()`): its
   * volume by exact name, each step persisted through the snapshot's recovery port. Forks
   * keep their own copies. Idempotent.
   *
   * @throws {SandboxConfigurationError} when `snapshot` is not a `DockerWorkspaceSnapshot`
   * @throws {SandboxEngineError} when a removal fails (call again)
   */
  removeSnapshot(snapshot: DockerWorkspaceSnapshot, options?: DockerRemoveSnapshotOptions): Promise<void>;
  /**
   * The workspace snapshots a store holds for this backend's namespace (records with
   * `identity.snapshot` whose volume was created and not removed), oldest first.
   *
   * @param store a store with `list()` and `record()` (`createFileRecoveryStore`)
   * @throws {SandboxConfigurationError} when `store` lacks `list()` or `record()`
   */
  snapshots(store: SnapshotListingStore): Promise<DockerWorkspaceSnapshot[]>;
  /**
   * A new snapshot on this backend's engine from a tar stream (`snapshot.export()`, here or on
   * another engine): validated by the strict tar reader (regular files and directories only),
   * written into a volume of its own with a record of its own (through `recovery`), owned by
   * this backend's user. Fork it like any snapshot.
   *
   * @param tar the archive; read to its end
   * @param recovery where the snapshot's record is persisted
   * @throws {SandboxConfigurationError} when the archive is not acceptable (the reader's reason); nothing is kept
   * @throws {SandboxEngineError} when the Engine fails; nothing is kept
   */
  importSnapshot(tar: ReadableStream<Uint8Array>, recovery: SandboxRecoveryPort, options?: DockerSnapshotTransferOptions): Promise<DockerWorkspaceSnapshot>;
  /**
   * Regain cleanup ownership of a persisted recovery record after the controller that wrote
   * it is gone (crashed, killed): never a runnable sandbox. Checks the record against this
   * backend before any Engine access, repeats daemon admission, reconciles each resource by
   * exact name, labels and fingerprint, and returns a handle whose `cleanup()` removes
   * exactly those resources by ID (persisting each step through `recovery`). Call it only
   * once the previous controller and its operations are over: a port that keeps controller
   * locks (the file store) refuses a record whose controller still runs unless `force`.
   * Names someone else holds are left alone and reported (`squatted`).
   *
   * @param record a record as the port received it (for example from `FileRecoveryStore.list()`)
   * @param recovery where cleanup persists the record's progress (usually the same store)
   * @param options deadlines, signal, settling of uncertain creates, `force`
   * @throws {SandboxConflictError} for another schema version, backend configuration or
   *   daemon, a recorded ID that is not this record's, or a record whose controller lock
   *   names a process that still runs (without `force`; nothing touched)
   * @throws {SandboxConfigurationError} for a malformed record, or a lock whose process
   *   cannot be checked (Deno without `--allow-all`; without `force`)
   * @throws {SandboxEngineError} / {SandboxDeadlineError} when the Engine fails or is slow
   */
  recover(record: SandboxRecoveryRecord, recovery: SandboxRecoveryPort, options?: DockerSandboxRecoverOptions): Promise<DockerSandboxRecovery>;
  /**
   * Keep `options.size` started, never-used sandboxes of `options.request` ready, so that
   * `pool.take()` hands one out at once (a replacement starts in the background). Every
   * member is an ordinary sandbox of this backend, reserved with `options.recovery` and
   * recorded and cleaned up like any other; `pool.close()` destroys the members not taken.
   * Filling starts at once.
   *
   * @param options the request, the size (1 … 16) and the recovery port
   * @returns the pool; close it when done
   * @throws {SandboxConfigurationError} for invalid options or request (the message names the field)
   * @throws {SandboxUnsupportedError} for `policy.workspaceDiskQuota.kind === "required"`
   */
  pool(options: DockerSandboxPoolOptions): DockerSandboxPool;
}

/** A reserved sandbox; `start()` acquires it. */
export interface DockerSandboxReservation extends SandboxReservation {
  /** Resource names derived from the reservation, fixed before anything exists. */
  readonly names: SandboxResourceNames;
  /** The normalised policy. */
  readonly policy: SandboxPolicy;
  /**
   * The agent's identity: `config.user`, or the uid (gid = uid) drawn from `config.userRange`
   * for this reservation, held until its compute is removed or its start fails.
   */
  readonly user: { readonly uid: number; readonly gid: number };
  /**
   * Acquire the sandbox: verify host, spill directory, daemon, image and dataset images
   * (datasets and an allowlist network need Engine API 1.48), then create the volume, the
   * optional network (for an allowlist also the egress bridge and the proxy container) and
   * the keeper, reading each back. On failure or abort,
   * what was created is removed before the promise rejects. Callable once.
   *
   * @throws {SandboxStateError} when called twice
   * @throws {SandboxUnsupportedError} host/daemon/image/readback not admitted (one message lists every unmet requirement)
   * @throws {SandboxConfigurationError} unusable spill directory, a dataset `subpath`
   *   missing from its image (what was created is removed), or `options.secrets` that do not
   *   match the routes' names (before anything is created; the message quotes no value)
   * @throws {SandboxConflictError} a resource name is already taken, or (`config.userRange`)
   *   the drawn uid is held by another backend's or controller's keeper on this daemon
   * @throws {SandboxQuotaError} a fork whose snapshot's files add up past its byte bound
   *   (`request.workspace.maxBytes`, else `config.defaultExportQuota.bytes`; nothing is kept)
   * @throws {SandboxAbortedError} `options.signal` aborted
   * @throws {SandboxDeadlineError} `policy.deadlines.startupMs` elapsed
   * @throws {SandboxEngineError} the Engine failed
   */
  start(options?: DockerSandboxStartOptions): Promise<DockerSandbox>;
}

/**
 * Create a Docker sandbox backend. Synchronous and inert: validates `config` (zod) and
 * returns; no endpoint from the environment, no image pull or build, no I/O until a
 * reservation starts.
 *
 * @param config see {@linkcode DockerSandboxBackendConfig}
 * @returns the backend
 * @throws {SandboxConfigurationError} naming the first invalid field
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a local image ID
 * import { createDockerSandboxBackend } from "@agentcell/docker";
 *
 * const backend = createDockerSandboxBackend({
 *   profile: "linux-x64-cgroupfs",
 *   endpoint: "unix:///run/agentcell-test-engine/docker.sock",
 *   namespace: "my-app",
 *   spillDirectory: "/var/lib/my-app/spill",
 *   imageDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
 *   user: { uid: 65534, gid: 65534 },
 * });
 * const reservation = backend.reserve(
 *   { policy: { resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 } } },
 *   { record: async (record) => { /* persist before effects *\/ } },
 * );
 * await using sandbox = await reservation.start();
 * ```
 */
export function createDockerSandboxBackend(config: DockerSandboxBackendConfig): DockerSandboxBackend {
  const settings = normalizeBackendConfig(config);
  const engine = new DockerEngine(settings.endpoint);
  const daemonVersion: DaemonVersionMemo = {};
  const users = settings.userRange === undefined ? undefined : new UserRangeAllocator(settings.userRange);
  const backend: DockerSandboxBackend = Object.freeze({
    settings,
    removeSnapshot(snapshot: DockerWorkspaceSnapshot, options?: DockerRemoveSnapshotOptions): Promise<void> {
      return Promise.resolve().then(() => removeSnapshot(engine, snapshot, options));
    },
    async importSnapshot(tar: ReadableStream<Uint8Array>, recovery: SandboxRecoveryPort, options: DockerSnapshotTransferOptions = {}): Promise<DockerWorkspaceSnapshot> {
      if (!(tar instanceof ReadableStream)) throw new SandboxConfigurationError("Cannot import snapshot: tar must be a ReadableStream<Uint8Array>");
      if (typeof recovery?.record !== "function") throw new SandboxConfigurationError("Cannot import snapshot: recovery.record must be a function");
      const timeoutMs = options.timeoutMs ?? 30_000;
      const info = await engine.info({ timeoutMs });
      const user = settings.user ?? { uid: settings.userRange!.first, gid: settings.userRange!.first };
      return newSnapshot({ engine, settings, recovery, daemonId: info.ID ?? "", user, timeoutMs }, (log, volume) =>
        importSnapshotTree({ engine, settings }, log, volume, tar, user, options));
    },
    snapshots(store: SnapshotListingStore): Promise<DockerWorkspaceSnapshot[]> {
      return Promise.resolve().then(() => listSnapshots(engine, settings, store));
    },
    pool(options: DockerSandboxPoolOptions): DockerSandboxPool {
      return createDockerSandboxPool(backend, options);
    },
    recover(record: SandboxRecoveryRecord, recovery: SandboxRecoveryPort, options?: DockerSandboxRecoverOptions): Promise<DockerSandboxRecovery> {
      if (typeof recovery?.record !== "function") {
        return Promise.reject(new SandboxConfigurationError("Cannot recover sandbox: recovery.record must be a function"));
      }
      return recoverSandbox({ engine, settings }, record, recovery, options);
    },
    reserve(request: DockerSandboxRequest, recovery: SandboxRecoveryPort): DockerSandboxReservation {
      if (typeof request !== "object" || request === null) {
        throw new SandboxConfigurationError("Cannot reserve sandbox: request must be an object");
      }
      if (typeof recovery?.record !== "function") {
        throw new SandboxConfigurationError("Cannot reserve sandbox: recovery.record must be a function");
      }
      const from = request.workspace?.from;
      if (request.workspace !== undefined && !(from instanceof DockerWorkspaceSnapshot)) {
        throw new SandboxConfigurationError(
          "Cannot reserve sandbox: request.workspace.from must be a DockerWorkspaceSnapshot (from sandbox.snapshot(), importSnapshot() or snapshots())",
        );
      }
      const fromBound = from && snapshotByteBound(settings, request.workspace?.maxBytes, "request.workspace.maxBytes", "reserve sandbox");
      const policy = normalizePolicy(request.policy);
      assertSupportedDiskQuota(policy);
      // The profile first: under gVisor an allowlist is refused whatever the config holds.
      admitPolicy(settings.profile, policy);
      assertEgressConfigured(policy, settings);
      const id = newReservationId();
      const names = resourceNames(settings.namespace, id);
      // Drawn last: nothing after it can throw, so a refused request holds no uid.
      const user = users?.draw() ?? settings.user!;
      const releaseUser = () => users?.release(user.uid);
      let started = false;
      return Object.freeze({
        id,
        names,
        policy,
        user,
        async start(options: DockerSandboxStartOptions = {}): Promise<DockerSandbox> {
          if (started) throw new SandboxStateError("Cannot start sandbox: this reservation was already started");
          started = true;
          let acquired;
          try {
            // Resolved here and handed on to the proxy's stdin only; the sandbox keeps no copy.
            const secrets = await resolveRouteSecrets(policy.network, options.secrets);
            acquired = await acquireSandbox({ engine, settings, policy, reservationId: id, names, user, recovery, signal: options.signal, daemonVersion, secrets, from, fromBound });
          } catch (error) {
            releaseUser();
            throw error;
          }
          acquired.releaseUser = releaseUser;
          return new DockerSandbox(id, engine, settings, policy, names, acquired);
        },
      });
    },
  });
  return backend;
}
