/**
 * A file-backed recovery store: one JSON file per reservation in a directory the caller owns,
 * written atomically, so the latest record of every sandbox survives a crash of the host
 * program (not a loss of the disk).
 *
 * Write protocol of `record()`: the JSON goes to a temporary file in the same directory,
 * which is `fsync`ed, renamed over `<reservationId>.json`, and then the directory itself is
 * `fsync`ed, so after `record()` resolves either the new or the old record is on disk, never
 * a torn one.
 *
 * Controller locks (`lock.ts`): before writing a record, `record()` takes the lock
 * `<reservationId>.lock` for this process, and it drops the lock after writing a record that
 * holds nothing (every resource `planned` or `removed`: the sandbox was destroyed, or its
 * start undone); a start that fails drops it (the backend calls `locks.release()`), and so
 * does `remove()`. So a record that names live resources is locked by its writer for as long
 * as that process runs and the sandbox lives, and `list()` and `backend.recover()` refuse it.
 *
 * @module
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxRecoveryPort, SandboxRecoveryRecord } from "../../sandbox/backend.ts";
import { SandboxConfigurationError, SandboxConflictError } from "../../sandbox/errors.ts";
import { denialOfDirectory, denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";
import { canonicalPathDefect } from "../config.ts";
import { inspectDirectory, ownerDefect } from "../_directory_check.ts";
import { directoryLocks, lockHolder, type RecoveryLockOwner, type RecoveryLocks } from "./lock.ts";
import { MAX_RECOVERY_RECORD_BYTES } from "./record.ts";

/** One file of a {@linkcode FileRecoveryStore}, as `list()` reports it. */
export type StoredRecoveryRecord =
  | {
    /** A record that parsed as JSON and names its reservation. */
    readonly kind: "record";
    /** Reservation ID (the file name without `.json`). */
    readonly reservationId: string;
    /** The record, verbatim: hand it to `backend.recover()`. */
    readonly record: SandboxRecoveryRecord;
    /** Absolute path of the file. */
    readonly file: string;
  }
  | {
    /**
     * A record whose controller lock names a process that still runs (another one, or this
     * one): `backend.recover()` refuses it unless `{ force: true }`.
     */
    readonly kind: "locked";
    /** Reservation ID (the file name without `.json`). */
    readonly reservationId: string;
    /** The record, verbatim. */
    readonly record: SandboxRecoveryRecord;
    /** Absolute path of the file. */
    readonly file: string;
    /** The process the lock names. */
    readonly owner: RecoveryLockOwner;
    /**
     * Why it is not handed out: a `SandboxConflictError` (`conflict`) naming the pid and the
     * fix, or a `SandboxConfigurationError` when whether that process runs cannot be checked
     * (Deno without `--allow-all`).
     */
    readonly error: SandboxConflictError | SandboxConfigurationError;
  }
  | {
    /** A file that could not be read as a record: never silently skipped. */
    readonly kind: "corrupt";
    /** Reservation ID from the file name. */
    readonly reservationId: string;
    /** Absolute path of the file. */
    readonly file: string;
    /** Why it is not a record. */
    readonly error: SandboxConfigurationError;
  };

/** A recovery port that keeps each sandbox's latest record in a file. */
export interface FileRecoveryStore extends SandboxRecoveryPort {
  /** The store's directory (absolute). */
  readonly directory: string;
  /** The records' controller locks (`<reservationId>.lock`); `backend.recover()` uses them. */
  readonly locks: RecoveryLocks;
  /**
   * Durably replace the record of `record.reservationId` (see the module doc), holding its
   * controller lock while the record holds resources.
   *
   * @throws {SandboxConfigurationError} when the record has no 32-hex `reservationId` or
   *   its JSON exceeds `MAX_RECOVERY_RECORD_BYTES` (64 KiB)
   * @throws {SandboxConflictError} when another process that still runs holds the record's
   *   lock (a recovery took it over with `force`): nothing is written
   * @throws {Error} the file system's error (the previous record stays)
   */
  record(record: SandboxRecoveryRecord): Promise<void>;
  /**
   * Every stored record, sorted by reservation ID; unreadable files are reported as
   * `corrupt` entries, records whose lock names a running process as `locked`. Leftover
   * temporary files of an interrupted write are ignored (the rename never happened, so the
   * previous record is the latest).
   */
  list(): Promise<StoredRecoveryRecord[]>;
  /**
   * Remove the record of `reservationId` (after its cleanup completed) and its lock when
   * that is this process's or stale; a missing file is done.
   *
   * @throws {SandboxConfigurationError} when `reservationId` is not 32 lowercase hex digits
   */
  remove(reservationId: string): Promise<void>;
}

const ID = /^[0-9a-f]{32}$/u;
const FILE = /^([0-9a-f]{32})\.json$/u;

function reservationOf(record: SandboxRecoveryRecord): string {
  const id = (record as { reservationId?: unknown })?.reservationId;
  if (typeof id !== "string" || !ID.test(id)) {
    throw new SandboxConfigurationError("Cannot store the recovery record: record.reservationId must be 32 lowercase hex digits");
  }
  return id;
}

/**
 * Whether a record may name resources that exist: any resource not `planned` or `removed`,
 * or a record of another shape (presumed to hold something).
 */
function holdsResources(record: SandboxRecoveryRecord): boolean {
  const resources = (record as { resources?: unknown }).resources;
  if (typeof resources !== "object" || resources === null) return true;
  return Object.values(resources).some((entry) => {
    const state = (entry as { state?: unknown } | null)?.state;
    return state !== "planned" && state !== "removed";
  });
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Create a file-backed recovery store in `directory` (created with mode 0700 if missing).
 * The directory must be private to the host program: anyone who can write it can hand
 * recovery a record (which recovery still checks against the backend and the labels), so
 * one that is group- or world-writable is refused, and so is a path through a symbolic link.
 *
 * @param directory absolute, canonical path (on disk too: no symbolic link on the way)
 * @returns the store; pass it to `backend.reserve()` as the recovery port
 * @throws {SandboxConfigurationError} when `directory` is not absolute and canonical, is
 *   reached through a symbolic link (the message names its real path), is not a directory,
 *   or is writable by its group or others (the message says `chmod 700`); when Deno denies
 *   reading or writing it (the message names the flag)
 *
 * @example
 * ```ts ignore
 * // ignore: writes a record directory under /var/lib and needs a backend on a Docker Engine
 * import { createFileRecoveryStore } from "@agentcell/docker";
 *
 * const store = await createFileRecoveryStore("/var/lib/my-app/sandbox-records");
 * const reservation = backend.reserve(request, store); // records land in the directory
 * for (const entry of await store.list()) console.log(entry.kind, entry.reservationId);
 * ```
 */
export async function createFileRecoveryStore(directory: string): Promise<FileRecoveryStore> {
  const defect = typeof directory === "string" ? canonicalPathDefect(directory) : "must be a string";
  if (defect !== undefined) {
    throw new SandboxConfigurationError(`Cannot open the recovery store: directory ${defect}`);
  }
  // A Deno permission denial names the flag for the whole directory (records get names of
  // their own in it); any other failure is the file system's own.
  const denied = (action: string) => (error: unknown): never => {
    const denial = denoPermissionDenial(error);
    if (!denial) throw error;
    throw new SandboxConfigurationError(`Cannot ${action}: ${denialReason(denialOfDirectory(denial, directory))}`, { cause: error });
  };
  const refuse = (reason: string): never => {
    throw new SandboxConfigurationError(`Cannot open the recovery store: directory ${directory} ${reason}`);
  };
  let verdict = await inspectDirectory(directory).catch(denied("open the recovery store"));
  if (verdict.kind === "missing") {
    await mkdir(directory, { recursive: true, mode: 0o700 }).catch(denied("open the recovery store"));
    verdict = await inspectDirectory(directory).catch(denied("open the recovery store"));
  }
  if (verdict.kind === "missing" || verdict.kind === "not-directory") return refuse("is not a directory: pass the path of a directory (or of none, to create it)");
  if (verdict.kind === "not-canonical") return refuse(`is not canonical on disk (resolves to ${verdict.real}): pass ${verdict.real}`);
  const owner = (() => {
    try {
      return ownerDefect(verdict.stat);
    } catch (error) {
      return denied("open the recovery store")(error);
    }
  })();
  if (owner !== undefined) return refuse(`is ${owner}, so its owner could plant a record that recovery acts on: use a directory this user owns`);
  const mode = verdict.stat.mode & 0o7777;
  if ((mode & 0o022) !== 0) {
    return refuse(
      `is writable by its group or others (mode ${mode.toString(8).padStart(4, "0")}), so anyone could plant a record that recovery acts on: chmod 700 ${directory}`,
    );
  }
  const locks = directoryLocks(directory);
  // A record whose lock names a running process is handed out as `locked`, never as a record.
  const lockedOr = async (entry: Extract<StoredRecoveryRecord, { kind: "record" }>): Promise<StoredRecoveryRecord> => {
    const lock = await locks.inspect(entry.reservationId);
    if (lock.kind === "unchecked") return { ...entry, kind: "locked", owner: lock.owner, error: lock.error };
    if (lock.kind !== "live" && lock.kind !== "own") return entry;
    const error = new SandboxConflictError(
      `Cannot recover record ${entry.reservationId}: it is locked by its controller (${
        lockHolder(lock)
      }), which still runs: stop that controller first, or pass { force: true } to backend.recover()`,
    );
    return { ...entry, kind: "locked", owner: lock.owner, error };
  };
  return Object.freeze({
    directory,
    locks,
    async record(record: SandboxRecoveryRecord): Promise<void> {
      const id = reservationOf(record);
      const bytes = new TextEncoder().encode(JSON.stringify(record));
      if (bytes.byteLength > MAX_RECOVERY_RECORD_BYTES) {
        throw new SandboxConfigurationError(
          `Cannot store the recovery record: it has ${bytes.byteLength} bytes of JSON, more than ${MAX_RECOVERY_RECORD_BYTES}`,
        );
      }
      // The lock first, so a record that names resources is never on disk unlocked.
      const lock = await locks.claim(id).catch(denied("store the recovery record"));
      if (lock.kind === "unchecked") throw lock.error;
      if (lock.kind === "live") {
        throw new SandboxConflictError(
          `Cannot store the recovery record: record ${id} is locked by another process that still runs (${
            lockHolder(lock)
          }; a recovery took it over with force): nothing was written; stop that process before this one writes the record again`,
        );
      }
      const temporary = join(directory, `.${id}.${crypto.randomUUID()}.tmp`);
      const handle = await open(temporary, "wx", 0o600).catch(denied("store the recovery record"));
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } catch (error) {
        await handle.close().catch(() => {});
        await rm(temporary, { force: true });
        throw error;
      }
      await handle.close();
      await rename(temporary, join(directory, `${id}.json`));
      await syncDirectory(directory);
      if (!holdsResources(record)) await locks.release(id);
    },
    async list(): Promise<StoredRecoveryRecord[]> {
      const out: StoredRecoveryRecord[] = [];
      for (const name of (await readdir(directory).catch(denied("list the recovery records"))).sort()) {
        const match = FILE.exec(name);
        if (!match) continue;
        const file = join(directory, name);
        const corrupt = (reason: string, cause?: unknown): StoredRecoveryRecord => ({
          kind: "corrupt",
          reservationId: match[1],
          file,
          error: new SandboxConfigurationError(`Cannot read the recovery record ${file}: ${reason}`, { cause }),
        });
        try {
          const info = await lstat(file);
          if (!info.isFile()) {
            out.push(corrupt("it is not a regular file (a link, directory or device is never read)"));
            continue;
          }
          const { size } = info;
          if (size > MAX_RECOVERY_RECORD_BYTES) {
            out.push(corrupt(`it has ${size} bytes, more than ${MAX_RECOVERY_RECORD_BYTES}`));
            continue;
          }
          const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
          let text: string;
          try {
            text = await handle.readFile({ encoding: "utf8" });
          } finally {
            await handle.close();
          }
          const record = JSON.parse(text) as SandboxRecoveryRecord;
          if (typeof record !== "object" || record === null || typeof record.schema !== "string") {
            out.push(corrupt("it is not a record object with a schema"));
          } else if ((record as { reservationId?: unknown }).reservationId !== match[1]) {
            out.push(corrupt("its reservationId does not match its file name"));
          } else {
            out.push(await lockedOr({ kind: "record", reservationId: match[1], record, file }));
          }
        } catch (error) {
          out.push(corrupt(error instanceof Error ? error.message : String(error), error));
        }
      }
      return out;
    },
    async remove(reservationId: string): Promise<void> {
      if (typeof reservationId !== "string" || !ID.test(reservationId)) {
        throw new SandboxConfigurationError("Cannot remove the recovery record: reservationId must be 32 lowercase hex digits");
      }
      await rm(join(directory, `${reservationId}.json`), { force: true });
      await syncDirectory(directory);
      await locks.release(reservationId);
    },
  });
}
