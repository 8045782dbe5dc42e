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
 * @module
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxRecoveryPort, SandboxRecoveryRecord } from "../sandbox/backend.ts";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import { denialOfDirectory, denialReason, denoPermissionDenial } from "../sandbox/_deno_permission.ts";
import { canonicalPathDefect } from "./config.ts";
import { MAX_RECOVERY_RECORD_BYTES } from "./recovery_record.ts";

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
  /**
   * Durably replace the record of `record.reservationId` (see the module doc).
   *
   * @throws {SandboxConfigurationError} when the record has no 32-hex `reservationId` or
   *   its JSON exceeds `MAX_RECOVERY_RECORD_BYTES` (64 KiB)
   * @throws {Error} the file system's error (the previous record stays)
   */
  record(record: SandboxRecoveryRecord): Promise<void>;
  /**
   * Every stored record, sorted by reservation ID; unreadable files are reported as
   * `corrupt` entries. Leftover temporary files of an interrupted write are ignored (the
   * rename never happened, so the previous record is the latest).
   */
  list(): Promise<StoredRecoveryRecord[]>;
  /**
   * Remove the record of `reservationId` (after its cleanup completed); a missing file is done.
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
 * The directory should be private to the host program: anyone who can write it can hand
 * recovery a record (which recovery still checks against the backend and the labels).
 *
 * @param directory absolute, canonical path
 * @returns the store; pass it to `backend.reserve()` as the recovery port
 * @throws {SandboxConfigurationError} when `directory` is not absolute and canonical
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
  await mkdir(directory, { recursive: true, mode: 0o700 }).catch(denied("open the recovery store"));
  return Object.freeze({
    directory,
    async record(record: SandboxRecoveryRecord): Promise<void> {
      const id = reservationOf(record);
      const bytes = new TextEncoder().encode(JSON.stringify(record));
      if (bytes.byteLength > MAX_RECOVERY_RECORD_BYTES) {
        throw new SandboxConfigurationError(
          `Cannot store the recovery record: it has ${bytes.byteLength} bytes of JSON, more than ${MAX_RECOVERY_RECORD_BYTES}`,
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
            out.push({ kind: "record", reservationId: match[1], record, file });
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
    },
  });
}
