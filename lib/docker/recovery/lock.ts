/**
 * The controller lock of a recovery record: a file `<reservationId>.lock` beside the record
 * in a file recovery store's directory, naming the process that writes the record —
 * its pid, its start time and the boot it runs in — while the record names resources that
 * may exist. Recovery refuses a record whose lock names a controller that still runs.
 *
 * Why a file created exclusively, not `flock(2)`: Node and Bun have no file-lock API and
 * Deno's (`FsFile.lock`) may only be used from the runtime adapters, so the one lock all
 * three runtimes share is a name that only one process can create. Its content must appear
 * together with its name (a reader must never see an empty lock): it is written to a private
 * temporary file opened with `"wx"` (`O_CREAT | O_EXCL`) and published with `link(2)`, which,
 * like `O_EXCL`, fails when the name exists — so of two processes taking a lock at once
 * exactly one wins, and every lock on disk is whole.
 *
 * A lock is **live** only when a process with its pid *and* its start time runs in the same
 * boot: on Linux, field 22 of `/proc/<pid>/stat` (clock ticks after boot) and
 * `/proc/sys/kernel/random/boot_id`. So a pid reused after a crash, or a reboot, never keeps
 * a record locked; a zombie counts as exited. Where `/proc` is absent (another OS) only the
 * pid is checked (`process.kill(pid, 0)`). A lock is not made durable: it only matters while
 * its writer lives, and a machine crash ends the writer.
 *
 * Deno asks for `--allow-all` to read anything under `/proc`. Without it a writer records
 * its start time and boot as `null` (and is then told apart by pid alone), and checking
 * another process's lock needs `--allow-run` (`process.kill(pid, 0)`); without that the lock
 * is `unchecked`, with a `SandboxConfigurationError` naming the flag.
 *
 * @module
 */
import { constants } from "node:fs";
import { link, lstat, open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import process from "node:process";
import { z } from "zod";
import { SandboxConfigurationError, SandboxConflictError } from "../../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

/** The process a controller lock names. */
export interface RecoveryLockOwner {
  /** Process ID. */
  readonly pid: number;
  /** Field 22 of `/proc/<pid>/stat` (start time, clock ticks after boot); `null` where unreadable. */
  readonly startTime: string | null;
  /** `/proc/sys/kernel/random/boot_id` of the boot it ran in; `null` where unreadable. */
  readonly bootId: string | null;
}

/**
 * What a record's controller lock says:
 * - `absent`: no lock (no controller holds the record);
 * - `own`: this process holds it (a sandbox of this process, or its own recovery);
 * - `live`: another process that still runs holds it;
 * - `stale`: its process is gone — `exited` (no such pid, or a zombie), `pid-reused` (the pid
 *   runs with another start time), `rebooted` (another boot), or `unreadable` (not a lock
 *   file of ours: never trusted, replaced like a stale one);
 * - `unchecked`: whether its process runs cannot be told here (`error` says why and names the
 *   fix; Deno without `--allow-all`): treated as live.
 */
export type RecoveryLockState =
  | { readonly kind: "absent" }
  | { readonly kind: "own"; readonly owner: RecoveryLockOwner }
  | { readonly kind: "live"; readonly owner: RecoveryLockOwner }
  | {
    readonly kind: "stale";
    readonly owner: RecoveryLockOwner | undefined;
    readonly reason: "exited" | "pid-reused" | "rebooted" | "unreadable";
  }
  | { readonly kind: "unchecked"; readonly owner: RecoveryLockOwner; readonly error: SandboxConfigurationError };

/**
 * The controller locks of a recovery port (`createFileRecoveryStore`'s store has them; any
 * port may). `backend.recover()` uses them when the port has them: it refuses a record whose
 * lock is `live` or `own` unless `force`, and `cleanup()` holds the lock while it runs.
 */
export interface RecoveryLocks {
  /**
   * The lock of `reservationId`, read-only.
   *
   * @throws {Error} the file system's failure to read the lock file
   */
  inspect(reservationId: string): Promise<RecoveryLockState>;
  /**
   * Take the lock for this process: an absent lock is created, a stale one replaced, this
   * process's own kept; a `live` or `unchecked` one is replaced only with `force`.
   *
   * @returns what was found; unless it is `live` or `unchecked` without `force`, the lock is
   *   now this process's
   * @throws {SandboxConflictError} when the lock keeps changing under other processes taking it
   * @throws {Error} the file system's failure
   */
  claim(reservationId: string, options?: { readonly force?: boolean }): Promise<RecoveryLockState>;
  /** Drop the lock when it is this process's or stale; another live process's stays. */
  release(reservationId: string): Promise<void>;
}

/**
 * The controller locks of `port`, when it keeps them (a `locks` object with `inspect`,
 * `claim` and `release`); `undefined` for a port without.
 */
export function portLocks(port: object): RecoveryLocks | undefined {
  const locks = (port as { locks?: Partial<RecoveryLocks> }).locks;
  const complete = typeof locks?.inspect === "function" && typeof locks.claim === "function" && typeof locks.release === "function";
  return complete ? locks as RecoveryLocks : undefined;
}

/** Largest lock file read, bytes (ours are about 150). */
const MAX_LOCK_BYTES = 4096;
/** Linux's largest pid (`pid_max` ≤ 2^22). */
const MAX_PID = 4_194_304;
/** How often a claim re-reads a lock that changed under it. */
const CLAIM_ATTEMPTS = 5;

const lockSchema = z.strictObject({
  pid: z.number().int().min(1).max(MAX_PID),
  startTime: z.string().regex(/^\d{1,20}$/u).nullable(),
  bootId: z.string().regex(/^[0-9a-f-]{1,64}$/u).nullable(),
  token: z.string().max(64),
});

/** `/proc/<pid>/stat`: state (field 3) and start time (field 22), or `undefined` when absent. */
async function procStat(pid: number): Promise<{ state: string; startTime: string } | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT" || (error as { code?: unknown }).code === "ESRCH") return undefined;
    throw error;
  }
  // Field 2 (the command) is parenthesised and may hold spaces and ')': fields 3… follow the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0], startTime: fields[19] };
}

let own: Promise<RecoveryLockOwner> | undefined;

/** This process as a lock names it (read once). */
export function ownLockOwner(): Promise<RecoveryLockOwner> {
  own ??= (async () => {
    const stat = await procStat(process.pid).catch(() => undefined);
    const bootId = await readFile("/proc/sys/kernel/random/boot_id", "utf8").then((text) => text.trim(), () => null);
    return Object.freeze({ pid: process.pid, startTime: stat?.startTime ?? null, bootId: stat ? bootId : null });
  })();
  return own;
}

/**
 * Whether `owner` still runs.
 *
 * @throws the file system's or Deno's refusal to read `/proc` or signal the pid
 */
async function liveness(owner: RecoveryLockOwner, self: RecoveryLockOwner): Promise<"live" | "exited" | "pid-reused" | "rebooted"> {
  if (owner.bootId !== null && self.bootId !== null && owner.bootId !== self.bootId) return "rebooted";
  if (self.startTime !== null) {
    // /proc works here (this process read its own entry).
    const stat = await procStat(owner.pid);
    if (!stat || stat.state === "Z" || stat.state === "X") return "exited";
    return owner.startTime !== null && owner.startTime !== stat.startTime ? "pid-reused" : "live";
  }
  try {
    process.kill(owner.pid, 0);
    return "live";
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ESRCH") return "exited";
    if (code === "EPERM") return "live";
    throw error;
  }
}

/** A lock file as read: its state, and its identity for a compare-and-remove. */
interface LockRead {
  readonly state: RecoveryLockState;
  /** The whole text of a regular lock file; `special:<inode>` for anything else. */
  readonly identity?: string;
}

/** The identity of the file at `path`, or `undefined` when there is none. */
async function identityOf(path: string): Promise<string | undefined> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
  if (!info.isFile() || info.size > MAX_LOCK_BYTES) return `special:${info.ino}`;
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    return await handle.readFile({ encoding: "utf8" });
  } finally {
    await handle.close();
  }
}

async function readLock(path: string, describe: (cause: unknown, pid: number) => SandboxConfigurationError): Promise<LockRead> {
  const identity = await identityOf(path);
  if (identity === undefined) return { state: { kind: "absent" } };
  let owner: RecoveryLockOwner;
  try {
    const { pid, startTime, bootId } = lockSchema.parse(JSON.parse(identity));
    owner = Object.freeze({ pid, startTime, bootId });
  } catch {
    return { state: { kind: "stale", owner: undefined, reason: "unreadable" }, identity };
  }
  const self = await ownLockOwner();
  if (owner.pid === self.pid && owner.startTime === self.startTime && owner.bootId === self.bootId) {
    return { state: { kind: "own", owner }, identity };
  }
  let verdict;
  try {
    verdict = await liveness(owner, self);
  } catch (cause) {
    return { state: { kind: "unchecked", owner, error: describe(cause, owner.pid) }, identity };
  }
  return { state: verdict === "live" ? { kind: "live", owner } : { kind: "stale", owner, reason: verdict }, identity };
}

/**
 * Remove the lock at `path` only if it is still the one read (`identity`): it is renamed
 * aside first, and put back when it turns out to be another process's newer lock.
 *
 * @returns `true` when the lock read is gone, `false` when the lock had changed
 */
async function discard(path: string, identity: string | undefined): Promise<boolean> {
  const aside = join(dirname(path), `.${basename(path)}.${crypto.randomUUID()}.old`);
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return true;
    throw error;
  }
  const moved = await identityOf(aside);
  if (moved !== identity) {
    await link(aside, path).catch(() => {});
    await rm(aside, { force: true });
    return false;
  }
  await rm(aside, { force: true });
  return true;
}

/** Publish this process's lock at `path`; `false` when a lock appeared first. */
async function publish(path: string, owner: RecoveryLockOwner): Promise<boolean> {
  const temporary = join(dirname(path), `.${basename(path)}.${crypto.randomUUID()}.new`);
  const handle = await open(temporary, "wx", 0o600);
  try {
    await handle.writeFile(JSON.stringify({ ...owner, token: crypto.randomUUID() }));
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, path);
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === "EEXIST") return false;
    throw error;
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * Who a lock names, for a message: `pid 123, started at tick 456 after boot` (`, this
 * process` for this process's own lock).
 */
export function lockHolder(state: { readonly kind: string; readonly owner: RecoveryLockOwner }): string {
  const started = state.owner.startTime === null ? "" : `, started at tick ${state.owner.startTime} after boot`;
  return `pid ${state.owner.pid}${started}${state.kind === "own" ? ", this process" : ""}`;
}

/**
 * The controller locks of the records in `directory` (`<reservationId>.lock`).
 *
 * @param directory the store's directory (absolute, canonical, private)
 * @returns the locks (one file per record; see the module doc)
 */
export function directoryLocks(directory: string): RecoveryLocks {
  const pathOf = (reservationId: string) => join(directory, `${reservationId}.lock`);
  const describe = (reservationId: string) => (cause: unknown, pid: number): SandboxConfigurationError => {
    const denial = denoPermissionDenial(cause);
    const reason = denial ? denialReason(denial) : String((cause as { code?: unknown }).code ?? cause);
    return new SandboxConfigurationError(
      `Cannot check the controller lock of record ${reservationId}: whether pid ${pid} still runs is unknown: ${reason}, or pass { force: true } to recover() once that controller is stopped`,
      { cause },
    );
  };
  return Object.freeze({
    async inspect(reservationId: string): Promise<RecoveryLockState> {
      return (await readLock(pathOf(reservationId), describe(reservationId))).state;
    },
    async claim(reservationId: string, options: { readonly force?: boolean } = {}): Promise<RecoveryLockState> {
      const path = pathOf(reservationId);
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
        const read = await readLock(path, describe(reservationId));
        const { state } = read;
        if (state.kind === "own" || ((state.kind === "live" || state.kind === "unchecked") && options.force !== true)) return state;
        if (state.kind !== "absent" && !await discard(path, read.identity)) continue;
        if (await publish(path, await ownLockOwner())) return state;
      }
      throw new SandboxConflictError(
        `Cannot take the controller lock of record ${reservationId}: it changed ${CLAIM_ATTEMPTS} times while being taken (other processes are taking it): try again once they are done`,
      );
    },
    async release(reservationId: string): Promise<void> {
      const path = pathOf(reservationId);
      const read = await readLock(path, describe(reservationId)).catch(() => undefined);
      if (read && (read.state.kind === "own" || read.state.kind === "stale")) await discard(path, read.identity);
    },
  });
}
