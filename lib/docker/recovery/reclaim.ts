/**
 * {@linkcode reclaimRecords}: the reclaim loop over a file recovery store, after a crash.
 * Each record whose controller is gone is recovered, exactly what it names is removed, and
 * the record is dropped once its cleanup completed; anything else stays, with the reason.
 *
 * @module
 */
import type { DockerSandboxBackend } from "../backend.ts";
import { reasonOf } from "../../internal/reason.ts";
import { SandboxError } from "../../sandbox/errors.ts";
import type { DockerSandboxRecoveryRecord } from "./record.ts";
import type { FileRecoveryStore } from "./store.ts";

/** One record {@linkcode reclaimRecords} looked at. */
export type ReclaimOutcome =
  | {
    /** Its cleanup completed and the record was removed. */
    readonly kind: "reclaimed";
    /** Reservation ID of the record. */
    readonly reservationId: string;
    /** The roles whose resources were removed (`keeper`, `volume`, …); empty when nothing was left. */
    readonly removed: readonly string[];
  }
  | {
    /**
     * `pending`: cleanup ran but the outcome of a create is still unknown, or a name is held
     * by something not ours (run again later); `refused`: the record was left untouched
     * (corrupt, its controller still runs, another backend configuration, an Engine failure).
     */
    readonly kind: "pending" | "refused";
    /** Reservation ID of the record. */
    readonly reservationId: string;
    /** Why it stays, as a sentence (for a refusal, the typed error's message). */
    readonly reason: string;
    /** The typed error's `code`, for a refusal. */
    readonly code?: string;
  };

/** What {@linkcode reclaimRecords} did, record by record. */
export interface ReclaimReport {
  /** Every record of the store, in the store's order. */
  readonly outcomes: readonly ReclaimOutcome[];
  /** How many were reclaimed, are pending, were refused. */
  readonly counts: { readonly reclaimed: number; readonly pending: number; readonly refused: number };
}

/**
 * Reclaim every record of `store` whose controller is gone: `backend.recover()` then
 * `cleanup()`, and `store.remove()` once the cleanup completed. A record whose controller
 * lock names a process that still runs is refused (left alone), and so is one that is
 * corrupt or belongs to another backend configuration; a failure of one record never stops
 * the others.
 *
 * @param store the file recovery store the crashed controller wrote
 * @param backendFor the backend of a record: the same configuration its controller used
 *   (endpoint, profile, namespace, image, user); may throw (a refusal of that record)
 * @returns the outcome of each record and the counts
 * @throws {Error} only what `store.list()` throws (the directory cannot be read)
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a records directory
 * import { createDockerSandboxBackend, createFileRecoveryStore } from "@agentcell/docker";
 * import { reclaimRecords } from "@agentcell/docker/recovery";
 *
 * const store = await createFileRecoveryStore("/var/lib/my-app/sandbox-records");
 * const report = await reclaimRecords(store, () => backend); // the crashed program's configuration
 * console.log(report.counts); // { reclaimed: 1, pending: 0, refused: 0 }
 * ```
 */
export async function reclaimRecords(
  store: FileRecoveryStore,
  backendFor: (record: DockerSandboxRecoveryRecord) => DockerSandboxBackend,
): Promise<ReclaimReport> {
  const outcomes: ReclaimOutcome[] = [];
  for (const entry of await store.list()) {
    if (entry.kind !== "record") {
      outcomes.push({ kind: "refused", reservationId: entry.reservationId, reason: entry.error.message, code: entry.error.code });
      continue;
    }
    outcomes.push(await reclaimOne(store, entry.record as DockerSandboxRecoveryRecord, entry.reservationId, backendFor));
  }
  const count = (kind: ReclaimOutcome["kind"]) => outcomes.filter((outcome) => outcome.kind === kind).length;
  return { outcomes, counts: { reclaimed: count("reclaimed"), pending: count("pending"), refused: count("refused") } };
}

async function reclaimOne(
  store: FileRecoveryStore,
  record: DockerSandboxRecoveryRecord,
  reservationId: string,
  backendFor: (record: DockerSandboxRecoveryRecord) => DockerSandboxBackend,
): Promise<ReclaimOutcome> {
  try {
    const recovery = await backendFor(record).recover(record, store);
    const report = await recovery.cleanup();
    if (!report.complete) {
      const why = [
        ...report.uncertain.map((role) => `the outcome of creating the ${role} is still unknown`),
        ...report.squatted.map((name) => `${name.name} is held by ${name.id}, which is not ours (${name.reason})`),
      ];
      return { kind: "pending", reservationId, reason: why.join("; ") || "its cleanup did not complete" };
    }
    await store.remove(reservationId);
    return { kind: "reclaimed", reservationId, removed: recovery.owned.map((owned) => owned.role) };
  } catch (error) {
    if (error instanceof SandboxError) return { kind: "refused", reservationId, reason: error.message, code: error.code };
    return { kind: "refused", reservationId, reason: reasonOf(error) };
  }
}
