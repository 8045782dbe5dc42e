/**
 * Workspace snapshots: an immutable copy of a sandbox's `/workspace/work` tree in a volume
 * of its own, with a recovery record of its own (`identity.snapshot`), so it outlives the
 * sandbox it was taken of and is reclaimable by itself (`recover()` of its record, or
 * `backend.removeSnapshot()`).
 *
 * Taking one: the record is planned and persisted (a fresh reservation ID; roles `volume`
 * and `keeper`, the keeper staying `planned` — a snapshot never computes), the volume is
 * created (recorded), the source's compute is paused (the cgroup freezer: no guest write
 * lands while the tree is copied; a stopped sandbox's workspace is copied as it is), the
 * copier copies the tree (`./copier.ts`), compute resumes. Anything that fails removes
 * what was made, through the record. Done, the record's controller lock is released: a
 * snapshot is not held by the controller that took it.
 *
 * @module
 */
import type { SandboxRecoveryPort } from "../../sandbox/backend.ts";
import { SandboxConflictError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { createVolume } from "../../engine/volumes.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";
import { labelsMatch, newReservationId, resourceLabels, resourceNames } from "../names.ts";
import { portLocks } from "../recovery/lock.ts";
import { RecoveryLog } from "../recovery/log.ts";
import {
  backendIdentity,
  digestOf,
  type DockerSandboxRecoveryRecord,
  newNonce,
  plannedRecord,
  type RecoveryIdentity,
} from "../recovery/record.ts";
import { createRecorded, removeAllRecorded } from "../recovery/resources.ts";
import { asSandboxError, rephrased } from "../_engine_errors.ts";
import { type DockerSnapshotTransferOptions, exportSnapshot, type SnapshotHome } from "./portable.ts";

/**
 * An immutable workspace snapshot: the tree of a sandbox's `/workspace/work` at one moment,
 * in a volume of its own. Only `/workspace` is in it: the home directory, `/tmp` and
 * `/dev/shm` are tmpfs and are not. Fork it with `backend.reserve({ policy, workspace: {
 * from: snapshot } })`, remove it with `backend.removeSnapshot(snapshot)`.
 */
export class DockerWorkspaceSnapshot {
  /** The snapshot's own reservation ID (32 hex digits): its record's key in a store. */
  readonly id: string;
  /** The exact name of the snapshot's volume. */
  readonly volumeName: string;
  /** Reservation ID of the sandbox it was taken of; `undefined` for an imported snapshot. */
  readonly sourceId: string | undefined;
  /** When it was taken, milliseconds since the epoch. */
  readonly createdAt: number;
  readonly #log: RecoveryLog;
  readonly #home: SnapshotHome;
  #exports: Promise<void> = Promise.resolve();

  /** @internal Made by `sandbox.snapshot()`, `backend.importSnapshot()` or `backend.snapshots()`. */
  constructor(log: RecoveryLog, home: SnapshotHome) {
    this.#home = home;
    const { identity } = log.record;
    this.id = identity.reservationId;
    this.volumeName = identity.names.volume;
    this.sourceId = identity.snapshot?.source;
    this.createdAt = identity.snapshot?.createdAt ?? 0;
    this.#log = log;
  }

  /** The snapshot's latest recovery record (persisted through its port before each effect). */
  get record(): DockerSandboxRecoveryRecord {
    return this.#log.record;
  }

  /**
   * The snapshot's tree as a tar stream, validated by the strict tar reader and written
   * again (paths relative to `/workspace/work`, modes, whole-second mtimes, empty
   * directories, bytes; see `docs/snapshots.md`). Import it with `backend.importSnapshot()`
   * on this engine or another. Exports of one snapshot run one at a time (each through a
   * never-started holder container, recorded in the snapshot's record, removed when the
   * stream ends or is cancelled).
   *
   * @param options deadline of each Engine request, the reader's in-memory path bound
   * @returns the tar bytes; read them to the end or cancel them
   * @throws {SandboxUnsupportedError} (in the stream) for a symlink, hard link or special file
   * @throws {SandboxEngineError} when the Engine fails
   *
   * @example
   * ```ts ignore
   * // ignore: needs a Docker Engine
   * const tar = await snapshot.export();
   * const copy = await otherBackend.importSnapshot(tar, otherStore);
   * ```
   */
  export(options: DockerSnapshotTransferOptions = {}): Promise<ReadableStream<Uint8Array>> {
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const turn = this.#exports.then(() => exportSnapshot(this.#home, this.#log, options, ended));
    // The next export waits until this stream ended or was cancelled (or failed to open).
    this.#exports = turn.then(() => end, () => {});
    return turn;
  }

  /** @internal The record's log, for the backend. */
  get log(): RecoveryLog {
    return this.#log;
  }
}

/** Whether `record` is a workspace snapshot's record (`identity.snapshot` present). */
export function isSnapshotRecord(record: DockerSandboxRecoveryRecord): boolean {
  return record.identity.snapshot !== undefined;
}

/** Everything a new snapshot record needs. */
export interface NewSnapshotContext {
  readonly engine: DockerEngine;
  readonly settings: DockerSandboxBackendSettings;
  /** Where the snapshot's record is persisted. */
  readonly recovery: SandboxRecoveryPort;
  /** The daemon ID the snapshot lives on. */
  readonly daemonId: string;
  /** The owner of the tree (the source sandbox's user). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The source sandbox's reservation ID; absent for an import. */
  readonly source?: string;
  /** Deadline of each Engine call and record write, milliseconds. */
  readonly timeoutMs: number;
}

/**
 * Plan and persist a snapshot's record, then create its volume (recorded, labelled); then
 * run `fill` to put the tree in it. A failure removes what was made (through the record)
 * and releases the record's lock; success releases the lock too.
 *
 * @param fill writes the tree into the volume (`log` gains the helper's entries)
 * @throws {SandboxError} the first failure (a failed cleanup says the record names what remains)
 */
export async function newSnapshot(
  context: NewSnapshotContext,
  fill: (log: RecoveryLog, volumeName: string) => Promise<void>,
): Promise<DockerWorkspaceSnapshot> {
  const { engine, settings, timeoutMs } = context;
  const reservationId = newReservationId();
  const names = resourceNames(settings.namespace, reservationId);
  const identity: RecoveryIdentity = {
    reservationId,
    ...backendIdentity(settings),
    daemonId: context.daemonId,
    user: context.user,
    snapshot: { ...(context.source === undefined ? {} : { source: context.source }), createdAt: Date.now() },
    names,
    nonce: newNonce(),
    // A snapshot has no policy of its own: the digest of `null`.
    policyDigest: digestOf(null),
  };
  const log = new RecoveryLog(context.recovery, plannedRecord(identity, ["volume", "keeper"]));
  log.bound(() => ({ timeoutMs }));
  await log.persist();
  const locks = portLocks(context.recovery);
  try {
    const labels = resourceLabels(log.record, "volume");
    await createRecorded(engine, log, "volume", "create the snapshot volume", async () => {
      const volume = await createVolume(engine, names.volume, labels, { timeoutMs });
      if (!labelsMatch(volume.Labels, labels)) {
        throw new SandboxConflictError(`Cannot take a snapshot: volume ${names.volume} exists with foreign labels; it is left alone`);
      }
      return volume.Name;
    }, { timeoutMs });
    await fill(log, names.volume);
  } catch (error) {
    const failure = asSandboxError(error, "take a snapshot");
    const report = await removeAllRecorded(engine, log, { timeoutMs });
    await locks?.release(reservationId).catch(() => {});
    if (report.failures.length > 0) {
      throw rephrased(
        failure,
        `${failure.message}; cleanup also failed (the snapshot's recovery record names what remains)`,
        new AggregateError([failure, ...report.failures.map((f) => f.error)]),
      );
    }
    throw failure;
  }
  await locks?.release(reservationId).catch(() => {});
  return new DockerWorkspaceSnapshot(log, { engine, settings });
}
