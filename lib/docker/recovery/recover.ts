/**
 * Cleanup-only recovery: from a persisted recovery record, regain ownership of exactly the
 * resources it names — never a runnable sandbox, process or session — and remove them by
 * exact ID through the same path as `destroy()`.
 *
 * Order of checks: the record's size, schema and shape; its identity digest; its revision,
 * profile, endpoint, namespace, image, user and configuration digest against this backend;
 * the record's controller lock when the port keeps locks (a controller that still runs is
 * refused unless `force`) — all before any Engine access; then daemon admission is repeated
 * and the daemon ID compared; then each resource is reconciled by exact name, labels and
 * fingerprint. A name held by something that is not this record's (squatted) is left alone
 * and reported; everything provably ours is still removed. Nothing is written by
 * reconciliation: the advanced record is returned, and `cleanup()` takes the controller lock,
 * persists through the port before each removal, and releases the lock when it is done.
 *
 * @module
 */
import type { SandboxRecoveryPort } from "../../sandbox/backend.ts";
import { SandboxConfigurationError, SandboxConflictError, SandboxEngineError } from "../../sandbox/errors.ts";
import { parseConfiguration } from "../../internal/zod_issues.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { admitDaemon } from "../admission/daemon.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";
import type { SandboxResourceRole } from "../names.ts";
import { RecoveryLog } from "./log.ts";
import {
  backendRevision,
  configurationDigest,
  digestOf,
  type DockerSandboxRecoveryRecord,
  MAX_RECOVERY_RECORD_BYTES,
  RECOVERY_SCHEMA,
  recoveryRecordSchema,
} from "./record.ts";
import { lockHolder, portLocks, type RecoveryLockState } from "./lock.ts";
import { isOwned, type ObservedResource, ownershipDefects, REMOVAL_ORDER, removeAllRecorded, resolveByName, RESOURCE_TABLE } from "./resources.ts";
import { asSandboxError } from "../_engine_errors.ts";

/** Options of `backend.recover()`. */
export interface DockerSandboxRecoverOptions {
  /** Deadline of each Engine request and each `record()` call, milliseconds. @default 30000 */
  readonly timeoutMs?: number;
  /** Aborts reconciliation (not a `cleanup()` already running). */
  readonly signal?: AbortSignal;
  /**
   * Settle a `creating` resource as never created once its exact name has been absent for
   * at least this many milliseconds, measured from the first `recover()` that saw it absent
   * (`absentSince` in the advanced record; persist it). Without it such a resource stays
   * uncertain: the create may still land, and the record keeps its retry owner. Use it
   * only when the previous controller is gone and the Engine cannot still be processing
   * its create (a create is answered within seconds; the previous controller's startup
   * deadline bounds how long it waited).
   * @default undefined (never settle)
   */
  readonly settleUncertainAfterMs?: number;
  /**
   * Recover even when the record's controller lock (kept by a port with `locks`, such as
   * `createFileRecoveryStore`'s) names a process that still runs — another one or this one
   * — or one whose liveness cannot be checked here. Only for a controller you know no longer
   * uses the sandbox: its resources are removed under it, and its record writes are refused
   * while `cleanup()` holds the lock. A stale lock (its process exited, its pid was reused,
   * the machine rebooted) needs no force: it is taken over and reported in `lock`.
   * @default false
   */
  readonly force?: boolean;
}

/**
 * A name of the record held by a resource that is not this record's (someone created a
 * container, network or volume under the exact name without this record's labels or
 * configuration). Recovery leaves it alone and keeps the record's entry as it was.
 */
export interface DockerSandboxSquattedName {
  /** The role whose name is held. */
  readonly role: SandboxResourceRole;
  /** The exact name the record reserved. */
  readonly name: string;
  /** ID of what holds it (a volume: its name). */
  readonly id: string;
  /** Why it is not this record's: what differs (labels, image, user, driver …). */
  readonly reason: string;
}

/** What `cleanup()` of a {@linkcode DockerSandboxRecovery} did. */
export interface DockerSandboxCleanupReport {
  /**
   * `true` when nothing of the record remains, nothing is uncertain and no name is
   * squatted: drop the record.
   */
  readonly complete: boolean;
  /** Roles whose create outcome is still unknown (name absent): keep the record; recover later. */
  readonly uncertain: readonly SandboxResourceRole[];
  /**
   * Names held by someone else's resource, left alone (what holds each and why it is not
   * ours): keep the record and recover it again once they are gone.
   */
  readonly squatted: readonly DockerSandboxSquattedName[];
}

/** Cleanup ownership of one recovered record. */
export interface DockerSandboxRecovery {
  /** Reservation ID of the record. */
  readonly reservationId: string;
  /**
   * The advanced record: `creating` resources found under their exact name with this
   * record's labels and fingerprint are `created` with their ID; `absentSince` is set on
   * uncertain ones. `cleanup()` persists it through the port before its first removal;
   * persist it yourself first if you hand the record to another owner.
   */
  readonly record: DockerSandboxRecoveryRecord;
  /** Resources to remove by exact ID, in removal order. */
  readonly owned: readonly { readonly role: SandboxResourceRole; readonly id: string }[];
  /** Roles whose create outcome is unknown and whose exact name is absent. */
  readonly uncertain: readonly SandboxResourceRole[];
  /** Names held by someone else's resource: left alone by `cleanup()`, their entries kept. */
  readonly squatted: readonly DockerSandboxSquattedName[];
  /**
   * The record's controller lock as recovery found it; `undefined` when the port keeps no
   * locks. `absent`, or `stale` (its process is gone: `cleanup()` takes it over); `live`,
   * `own` or `unchecked` only with `force`.
   */
  readonly lock: RecoveryLockState | undefined;
  /**
   * Remove every owned resource by exact ID (containers first, `404` = done), persisting
   * each step through the port, while holding the record's controller lock (released when
   * it returns). Squatted names are left alone. Retryable after a failure.
   *
   * @throws {SandboxEngineError} when a removal fails (call again to retry)
   * @throws {SandboxDeadlineError} when a step exceeds `timeoutMs`
   * @throws {SandboxConflictError} when a controller that still runs took the lock since
   *   `recover()` looked (without `force`): nothing was touched
   */
  cleanup(): Promise<DockerSandboxCleanupReport>;
}

/** Everything recovery needs from the backend. */
export interface RecoverContext {
  readonly engine: DockerEngine;
  readonly settings: DockerSandboxBackendSettings;
}

const ACTION = "recover sandbox";

function conflict(reason: string): SandboxConflictError {
  return new SandboxConflictError(`Cannot ${ACTION}: ${reason}; nothing was touched, keep the record`);
}

/** Why `lock` stops a recovery without `force`; `undefined` when it does not. */
function lockRefusal(reservationId: string, lock: RecoveryLockState): Error | undefined {
  if (lock.kind === "unchecked") return lock.error;
  if (lock.kind !== "live" && lock.kind !== "own") return undefined;
  return conflict(
    `record ${reservationId} is locked by its controller (${
      lockHolder(lock)
    }), which still runs: stop that controller first (or let it destroy its sandbox), or pass { force: true } to recover() to take the record over anyway`,
  );
}

function squattedName(record: DockerSandboxRecoveryRecord, role: SandboxResourceRole, observed: ObservedResource): DockerSandboxSquattedName {
  const defects = ownershipDefects(record, role, observed);
  const reason = defects.length > 0 ? defects.join("; ") : "this record never created it (its entry is planned)";
  return Object.freeze({ role, name: record.identity.names[role], id: observed.id, reason });
}

// What this backend expects as the record's user: `config.user`, or (userRange) the
// record's own uid when it lies in the range with gid = uid.
function userOf(recorded: { uid: number; gid: number }, settings: DockerSandboxBackendSettings): string {
  const range = settings.userRange;
  if (range === undefined) return `${settings.user!.uid}:${settings.user!.gid}`;
  const inRange = recorded.uid >= range.first && recorded.uid < range.first + range.count && recorded.gid === recorded.uid;
  return inRange ? `${recorded.uid}:${recorded.gid}` : `a uid:gid pair with gid = uid in ${range.first} … ${range.first + range.count - 1}`;
}

/**
 * Parse and check a record against this backend without touching the Engine.
 *
 * @throws {SandboxConflictError} for another schema version, a digest that does not match,
 *   or another revision, profile, endpoint, namespace, image, user or configuration
 * @throws {SandboxConfigurationError} for a record that is too large or malformed
 */
export function checkRecoveryRecord(input: unknown, settings: DockerSandboxBackendSettings): DockerSandboxRecoveryRecord {
  let size: number;
  try {
    size = new TextEncoder().encode(JSON.stringify(input) ?? "").byteLength;
  } catch (cause) {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: the record is not JSON (${(cause as Error).message})`, { cause });
  }
  if (size > MAX_RECOVERY_RECORD_BYTES) {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: the record has ${size} bytes of JSON, more than ${MAX_RECOVERY_RECORD_BYTES}`);
  }
  const schema = (input as { schema?: unknown } | null)?.schema;
  if (schema !== RECOVERY_SCHEMA) {
    throw conflict(`the record's schema is ${JSON.stringify(schema)}, and this backend reads only ${RECOVERY_SCHEMA}`);
  }
  const record = parseConfiguration(recoveryRecordSchema, input, ACTION, "record");
  const { identity } = record;
  if (digestOf(identity) !== record.identityDigest || identity.reservationId !== record.reservationId) {
    throw conflict("the record's identity does not match its identityDigest (it was changed after it was written)");
  }
  const expected: [string, unknown, unknown][] = [
    ["revision", identity.revision, backendRevision(settings.profile.name)],
    ["profile", identity.profile, settings.profile.name],
    ["endpoint", identity.endpoint, settings.endpoint],
    ["namespace", identity.namespace, settings.namespace],
    ["image", identity.imageDigest, settings.imageDigest],
    ["user", `${identity.user.uid}:${identity.user.gid}`, userOf(identity.user, settings)],
    ["userRange", JSON.stringify(identity.userRange ?? null), JSON.stringify(settings.userRange ?? null)],
    ["keeperUser", `${identity.keeperUser.uid}:${identity.keeperUser.gid}`, `${settings.keeperUser.uid}:${settings.keeperUser.gid}`],
    ["configuration", identity.configurationDigest, configurationDigest(settings)],
  ];
  const differ = expected.filter(([, actual, wanted]) => actual !== wanted);
  if (differ.length > 0) {
    const list = differ.map(([field, actual, wanted]) => `${field} ${JSON.stringify(actual)} (this backend: ${JSON.stringify(wanted)})`);
    throw conflict(`the record belongs to another backend configuration: ${list.join("; ")}`);
  }
  return record;
}

/**
 * Recover cleanup ownership of `input` (see the module doc).
 *
 * @throws {SandboxConflictError} see {@linkcode checkRecoveryRecord}; also when the record's
 *   controller lock names a process that still runs (without `force`; the message names its
 *   pid), when the daemon's ID differs from the record's, and when a recorded ID names
 *   something that is not this record's own
 * @throws {SandboxConfigurationError} when whether the lock's process runs cannot be checked
 *   (Deno without `--allow-all`; without `force`)
 * @throws {SandboxConfigurationError} for a malformed record
 * @throws {SandboxUnsupportedError} when the daemon is no longer admitted for the profile
 * @throws {SandboxEngineError} / {SandboxDeadlineError} / {SandboxAbortedError} when the
 *   Engine fails, is too slow, or `signal` aborts
 */
export async function recoverSandbox(
  context: RecoverContext,
  input: unknown,
  port: SandboxRecoveryPort,
  options: DockerSandboxRecoverOptions = {},
): Promise<DockerSandboxRecovery> {
  const record = checkRecoveryRecord(input, context.settings);
  const { engine, settings } = context;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const call = { timeoutMs, signal: options.signal };
  const force = options.force === true;
  const locks = portLocks(port);
  const lock = locks ? await locks.inspect(record.reservationId) : undefined;
  const refusal = lock && !force ? lockRefusal(record.reservationId, lock) : undefined;
  if (refusal) throw refusal;
  const log = new RecoveryLog(port, record);
  log.bound(() => ({ timeoutMs }));
  const uncertain: SandboxResourceRole[] = [];
  const squatted: DockerSandboxSquattedName[] = [];
  try {
    const [version, info] = await Promise.all([engine.version(call), engine.info(call)]);
    const admission = admitDaemon(settings.profile, version, info);
    if (admission.daemonId !== record.identity.daemonId) {
      throw conflict(`the record belongs to daemon ${record.identity.daemonId}, and ${settings.endpoint} serves daemon ${admission.daemonId}`);
    }
    const now = Date.now();
    for (const role of REMOVAL_ORDER) {
      const entry = record.resources[role];
      if (!entry) continue;
      if (entry.state === "planned") {
        // Never dispatched: anything under the name belongs to someone else. Left alone.
        const observed = await RESOURCE_TABLE[role].inspect(engine, record, entry.name, call);
        if (observed) squatted.push(squattedName(record, role, observed));
      } else if (entry.state === "created" || entry.state === "removing") {
        // Removal goes by this ID: it must still be this record's own (or gone).
        const observed = await RESOURCE_TABLE[role].inspect(engine, record, entry.id!, call);
        if (observed && !isOwned(record, role, observed)) {
          throw conflict(`the ${role} ${entry.id} that the record names is not this record's (its name, labels or configuration differ); it is left alone`);
        }
      } else if (entry.state === "creating") {
        const found = await resolveByName(engine, record, role, call);
        if ("id" in found) log.replace(role, "created", found.id);
        // Someone else's under the name: left alone, the entry kept for a later recovery.
        else if ("foreign" in found) squatted.push(squattedName(record, role, found.foreign));
        else {
          const since = entry.absentSince ?? now;
          const settle = options.settleUncertainAfterMs;
          if (settle !== undefined && now - since >= settle) log.replace(role, "removed");
          else {
            log.replace(role, "creating", undefined, since);
            uncertain.push(role);
          }
        }
      }
    }
  } catch (error) {
    throw asSandboxError(error, ACTION);
  }
  const advanced = log.record;
  const owned = REMOVAL_ORDER.flatMap((role) => {
    const entry = advanced.resources[role];
    return entry && (entry.state === "created" || entry.state === "removing") ? [{ role, id: entry.id! }] : [];
  });
  const leave = squatted.map((name) => name.role);
  let cleaning: Promise<DockerSandboxCleanupReport> | undefined;
  return Object.freeze({
    reservationId: advanced.reservationId,
    record: advanced,
    owned: Object.freeze(owned),
    uncertain: Object.freeze(uncertain),
    squatted: Object.freeze(squatted),
    lock,
    cleanup(): Promise<DockerSandboxCleanupReport> {
      cleaning ??= (async () => {
        // The lock first (a controller may have taken it since recover() looked), then the
        // advanced record before the first removal (reconciliation wrote nothing).
        if (locks) {
          const found = await locks.claim(advanced.reservationId, { force });
          const late = force ? undefined : lockRefusal(advanced.reservationId, found);
          if (late) throw late;
        }
        try {
          await log.persist();
          const report = await removeAllRecorded(engine, log, { timeoutMs }, leave);
          if (report.failures.length > 0) {
            const first = asSandboxError(report.failures[0].error, "clean up recovered sandbox");
            throw new SandboxEngineError(`${first.message} (call cleanup() again to retry)`, {
              cause: new AggregateError(report.failures.map((failure) => failure.error)),
            });
          }
          return Object.freeze({
            complete: report.uncertain.length === 0 && squatted.length === 0,
            uncertain: Object.freeze([...report.uncertain]),
            squatted: Object.freeze(squatted),
          });
        } finally {
          await locks?.release(advanced.reservationId).catch(() => {});
        }
      })().finally(() => {
        cleaning = undefined;
      });
      return cleaning;
    },
  });
}
