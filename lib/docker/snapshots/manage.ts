/**
 * The backend's snapshot operations apart from taking one: removing a snapshot through its
 * record (`backend.removeSnapshot`) and listing the snapshots a store holds
 * (`backend.snapshots`).
 *
 * @module
 */
import type { FileRecoveryStore } from "../recovery/store.ts";
import { SandboxConfigurationError, SandboxEngineError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";
import { RecoveryLog } from "../recovery/log.ts";
import { digestOf, recoveryRecordSchema } from "../recovery/record.ts";
import { removeAllRecorded } from "../recovery/resources.ts";
import { DockerWorkspaceSnapshot, isSnapshotRecord } from "./snapshot.ts";

/** Options of `backend.removeSnapshot()`. */
export interface DockerRemoveSnapshotOptions {
  /** Deadline of each Engine request and each `record()` call, milliseconds. @default 30000 */
  readonly timeoutMs?: number;
}

/**
 * Remove `snapshot`'s volume (and a copier left over) by exact identity, persisting each step
 * through the snapshot's port. Forks are not affected: each holds its own copy. Idempotent.
 *
 * @throws {SandboxConfigurationError} when `snapshot` is not a snapshot of this library
 * @throws {SandboxEngineError} when a removal fails (the record keeps the entry; call again)
 */
export async function removeSnapshot(engine: DockerEngine, snapshot: DockerWorkspaceSnapshot, options: DockerRemoveSnapshotOptions = {}): Promise<void> {
  if (!(snapshot instanceof DockerWorkspaceSnapshot)) {
    throw new SandboxConfigurationError("Cannot remove snapshot: snapshot must be a DockerWorkspaceSnapshot (from sandbox.snapshot(), importSnapshot() or snapshots())");
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  snapshot.log.bound(() => ({ timeoutMs }));
  const report = await removeAllRecorded(engine, snapshot.log, { timeoutMs });
  if (report.failures.length > 0) {
    throw new SandboxEngineError(
      `Cannot remove snapshot ${snapshot.id}: removing its ${report.failures.map((f) => f.role).join(", ")} failed; call again`,
      { cause: new AggregateError(report.failures.map((f) => f.error)) },
    );
  }
}

/** What `backend.snapshots()` reads: a store's `list()` and `record()` (`createFileRecoveryStore`'s). */
export type SnapshotListingStore = Pick<FileRecoveryStore, "list" | "record">;

/**
 * The snapshots `store` holds for this backend: records with `identity.snapshot`, of this
 * backend's namespace, whose identity digest holds and whose volume was created and not
 * removed; each bound to `store` (its removal persists there). Other records are skipped.
 *
 * @returns the snapshots, oldest first
 */
export async function listSnapshots(engine: DockerEngine, settings: DockerSandboxBackendSettings, store: SnapshotListingStore): Promise<DockerWorkspaceSnapshot[]> {
  if (typeof store?.list !== "function" || typeof store.record !== "function") {
    throw new SandboxConfigurationError("Cannot list snapshots: store must have list() and record() (createFileRecoveryStore's store has both)");
  }
  const snapshots: DockerWorkspaceSnapshot[] = [];
  for (const entry of await store.list()) {
    if (entry.kind === "corrupt") continue;
    const parsed = recoveryRecordSchema.safeParse(entry.record);
    if (!parsed.success) continue;
    const record = parsed.data;
    if (!isSnapshotRecord(record) || record.identity.namespace !== settings.namespace) continue;
    if (digestOf(record.identity) !== record.identityDigest) continue;
    if (record.resources.volume?.state !== "created") continue;
    snapshots.push(new DockerWorkspaceSnapshot(new RecoveryLog(store, record), { engine, settings }));
  }
  return snapshots.sort((a, b) => a.createdAt - b.createdAt);
}
