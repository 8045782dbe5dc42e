/**
 * `writeFile` and `readFile` of a running sandbox, through the guest: an exec of a fixed,
 * minimal shell script as the sandbox user, in `/workspace`, so every path is resolved in the
 * guest's own mount namespace with the sandbox user's authority. A symlink in the path is
 * followed inside the guest and can reach only what that user can reach there (its writable
 * mounts: `/workspace/work`, `/tmp`, `/home/sandbox`); nothing on the host ever follows a
 * guest symlink. The Engine's archive endpoints are not used on a running container (the
 * `docker cp` symlink-swap race, CVE-2018-15664).
 *
 * The image must provide `/bin/sh` with `cat`, `chmod`, `mkdir`, `mv`, `rm` and `wc` on `PATH`
 * for `writeFile`, and `head` (and `/proc`, which every container has) for `readFile`
 * (busybox provides them all); a missing tool fails with `SandboxUnsupportedError` naming it.
 *
 * Every call is bounded: by `options.deadlineAt`, or else by `policy.deadlines.guestFileMs`
 * from the call. A helper that fails while compute goes away reports the sandbox's stop
 * cause (see `_stop_cause.ts`), never a defect of the path or the image.
 *
 * @module
 */
import {
  SandboxConfigurationError,
  SandboxEngineError,
  SandboxError,
  SandboxQuotaError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import type { NormalizedReadFile, NormalizedWriteFile } from "../../sandbox/guest_files.ts";
import { FIXED_GUEST_ENV, type SandboxExitReceipt, type SandboxKillReason } from "../../sandbox/process.ts";
import type { SandboxTransferReceipt } from "../../sandbox/transfer.ts";
import type { NormalizedTransferOptions } from "../../sandbox/transfer_input.ts";
import { reasonOf } from "../../internal/reason.ts";
import { WORKSPACE_PATH } from "../guest_paths.ts";
import { type DockerProcess, type ProcessHost, startGuestProcess } from "../process/process.ts";
import { concatBytes } from "../../streams/concat_bytes.ts";
import { setLongTimeout } from "../../internal/long_timer.ts";
import { stopCauseOf } from "./_stop_cause.ts";
import { TransferGuard } from "./_transfer_guard.ts";

/** Exit code of the scripts for a tool the image lacks (its name on stderr). */
const MISSING_TOOL = 120;
/** Exit code of the scripts for a path that is a directory in the guest. */
const IS_DIRECTORY = 121;
/** Exit code of the writer when fewer bytes arrived than announced (the write was cut off). */
const SHORT_INPUT = 122;
/** Exit code of the reader for a path that is neither a regular file nor a directory. */
const NOT_REGULAR = 123;
/** Exit code of the reader for a path that does not exist. */
const MISSING = 124;

/**
 * The writer: `sh -c WRITER sh ./<path> <mode> <size>`. It writes stdin into a temporary
 * file beside the target (created 0600), checks that exactly `<size>` bytes arrived, sets the
 * mode and renames it over the target, so the target holds the old bytes or all new ones,
 * never a part. Missing parent directories are created (`mkdir -p`). A final symlink is
 * replaced, not followed (rename); a directory is refused.
 */
export const WRITER_SCRIPT = "for t in cat chmod mkdir mv rm wc; do command -v \"$t\" >/dev/null 2>&1 || { echo \"$t\" >&2; exit 120; }; done; " +
  'p=$1; d=${p%/*}; [ -d "$p" ] && exit 121; mkdir -p "$d" || exit 1; t=$d/.agentcell-write.$$; umask 077; ' +
  'cat > "$t" || { rm -f "$t"; exit 1; }; n=$(wc -c < "$t") || { rm -f "$t"; exit 1; }; ' +
  '[ $n -eq $3 ] || { rm -f "$t"; exit 122; }; chmod "$2" "$t" && mv -f "$t" "$p" || { rm -f "$t"; exit 1; }';

/**
 * The reader: `sh -c READER sh ./<path> <count>`: `head -c <count>` of the path when it is a
 * regular file (symlinks followed inside the guest). The path is checked first, so a FIFO or
 * device found there is never opened; then it is opened once, and what was opened is checked
 * again through `/proc/self/fd/3` and read from there, so a path the guest swaps meanwhile
 * (a file for a FIFO, say) is read whole or refused, never opened twice. Opening a FIFO to
 * read blocks until it has a writer; opening it read-write never does (Linux), so the open
 * is read-write (`<>`) wherever the sandbox user may write, and the reader holds that only
 * while it checks: `head` reads a fresh read-only open of the same file. Where that user may
 * not write (a read-only file or mount), the open is read-only. `<>` creates a missing file:
 * under `umask 777` one removed between the check and the open comes back empty with mode
 * 0000, which the sandbox user cannot read, so the reader reports it as missing.
 */
export const READER_SCRIPT = 'command -v head >/dev/null 2>&1 || { echo head >&2; exit 120; }; p=$1; ' +
  '[ -e "$p" ] || exit 124; [ -d "$p" ] && exit 121; [ -f "$p" ] || exit 123; umask 777; ' +
  '{ command exec 3<>"$p"; } 2>/dev/null || command exec 3<"$p" || exit 1; ' +
  '[ -d /proc/self/fd/3 ] && exit 121; [ -f /proc/self/fd/3 ] || exit 123; [ -r /proc/self/fd/3 ] || exit 124; ' +
  'exec head -c "$2" </proc/self/fd/3 3<&-';

/** Most stderr bytes of a helper kept for the error message. */
const MAX_MESSAGE_BYTES = 4096;

/** Bound on a helper's unread output, bytes (its output is read as it arrives). */
const HELPER_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * Exit codes with which a script answers for the path or the image itself; any other failure
 * (a signal, `/bin/sh` not run, a lost exec, a broken connection) may come from compute going
 * away, and is judged by {@linkcode failureOf}.
 */
const ANSWERS: ReadonlySet<number> = new Set([1, MISSING_TOOL, IS_DIRECTORY, SHORT_INPUT, NOT_REGULAR, MISSING]);

/** Codes of the failures of a helper's exchange with the Engine (reported as `SandboxEngineError`s naming the call). */
const EXCHANGE_FAULTS: ReadonlySet<string> = new Set(["engine", "framing"]);

/** What a helper is, for its messages. */
interface HelperCall {
  /** "write file" / "read file". */
  readonly action: "write file" | "read file";
  /** The canonical path. */
  readonly path: string;
}

function helper(host: ProcessHost, argv: readonly string[], action: string, guard: TransferGuard): Promise<DockerProcess> {
  return startGuestProcess(host, {
    argv,
    env: FIXED_GUEST_ENV,
    workingDir: WORKSPACE_PATH,
    maxBufferedOutputBytes: HELPER_BUFFER_BYTES,
    timeoutMs: undefined,
    killDescendantsOnExit: false,
    stderr: "pipe",
    attachStdin: true,
    kind: "file",
    endsSandbox: false,
  }, action, { signal: guard.signal });
}

/**
 * The bounds of one call: the caller's `deadlineAt`, or else `policy.deadlines.guestFileMs`
 * from now (so no writer or reader runs without bound), its signal and the sandbox's stop.
 */
function guardOf(host: ProcessHost, action: string, options: NormalizedTransferOptions): TransferGuard {
  const ms = host.policy.deadlines.guestFileMs;
  const bounded = options.deadlineAt !== undefined
    ? options
    : { ...options, deadlineAt: Date.now() + ms, deadlineDefault: { ms, source: "policy.deadlines.guestFileMs" } };
  return new TransferGuard(action, bounded, [host.stopping]);
}

/** The start of a helper's stderr, as text. */
async function message(stderr: ReadableStream<Uint8Array>): Promise<string> {
  const bytes = new Uint8Array(MAX_MESSAGE_BYTES);
  let length = 0;
  for await (const chunk of stderr) {
    const take = Math.min(chunk.byteLength, bytes.byteLength - length);
    bytes.set(chunk.subarray(0, take), length);
    length += take;
  }
  return new TextDecoder().decode(bytes.subarray(0, length)).trim();
}

/**
 * The error of a script that answered with `code` (one of {@linkcode ANSWERS}, or 126/127, or
 * another); `cause` (what cut a write short: the stdin failure, or the receipt) for
 * {@linkcode SHORT_INPUT}, an Engine-side failure.
 */
function helperError(code: number, text: string, { action, path }: HelperCall, tools: string, cause?: unknown): SandboxError {
  const where = `Cannot ${action} ${path}`;
  const unchanged = action === "write file" ? "; the file is unchanged" : "";
  if (code === MISSING_TOOL) {
    return new SandboxUnsupportedError(`${where}: the image has no ${text} on PATH; ${action === "write file" ? "writeFile" : "readFile"} needs /bin/sh with ${tools} (busybox provides them)`);
  }
  if (code === 126 || code === 127) {
    return new SandboxUnsupportedError(`${where}: the guest could not run /bin/sh (exit code ${code}${text ? `: ${text}` : ""}); the image must provide /bin/sh with ${tools}`);
  }
  if (code === IS_DIRECTORY) return new SandboxConfigurationError(`${where}: it is a directory in the guest; name a regular file`);
  if (code === MISSING) return new SandboxConfigurationError(`${where}: it does not exist in the guest (paths are relative to /workspace: work/… for the work directory)`);
  if (code === NOT_REGULAR) return new SandboxConfigurationError(`${where}: it is not a regular file in the guest`);
  if (code === SHORT_INPUT) return new SandboxEngineError(`${where}: the guest received fewer bytes than were sent${unchanged}`, { cause });
  return new SandboxConfigurationError(`${where}: the guest refused it (exit code ${code}${text ? `: ${text}` : ""})${unchanged}`);
}

/**
 * The error of a helper that did not succeed. `exit` is its receipt, `undefined` when the call
 * failed before one (a start, stdin or output failure); `fault` the first failure of its
 * exchange with the Engine, if any; `text` its stderr. A script's own answer (an exit code of
 * {@linkcode ANSWERS}, unless the write was cut short by `fault`) names the path's or the
 * image's defect, and a refusal of the sandbox's own (a quota, a state) stands as it is;
 * otherwise the sandbox's stop cause wins when compute went away, then `fault` (as a
 * `SandboxEngineError` naming the call, `cause` the fault), then what the receipt says
 * (`cause`: the receipt).
 */
async function failureOf(
  host: ProcessHost,
  exit: SandboxExitReceipt | undefined,
  fault: unknown,
  text: Promise<string>,
  call: HelperCall,
  tools: string,
): Promise<SandboxError> {
  const where = `Cannot ${call.action} ${call.path}`;
  const unchanged = call.action === "write file" ? "; the file holds its old bytes or all new ones, never a part" : "";
  // With a receipt, a stdin refused because the writer exited is explained by the receipt.
  const broke = fault instanceof SandboxError && !EXCHANGE_FAULTS.has(fault.code) ? undefined : fault;
  if (exit === undefined && fault instanceof SandboxError && !EXCHANGE_FAULTS.has(fault.code)) return fault;
  if (exit?.kind === "exited" && ANSWERS.has(exit.code) && !(exit.code === SHORT_INPUT && broke !== undefined)) {
    return helperError(exit.code, await text, call, tools, fault ?? exit);
  }
  const stopped = await stopCauseOf(host, exit);
  if (stopped !== undefined) return stopped;
  if (broke !== undefined || exit === undefined) {
    return new SandboxEngineError(`${where}: ${broke === undefined ? "it failed without a receipt" : reasonOf(broke)}${unchanged}`, { cause: broke });
  }
  if (exit.kind === "exited") return helperError(exit.code, await text, call, tools);
  if (exit.kind === "killed") {
    return new SandboxEngineError(`${where}: its helper in the guest was ended (${exit.reason}, exit code ${exit.code})${unchanged}`, { cause: exit });
  }
  return new SandboxEngineError(`${where}: the Engine no longer knows its helper's exec, though the keeper runs (was the Engine restarted?)${unchanged}`, {
    cause: exit,
  });
}

/** `task`, or the guard's failure as soon as there is one. */
function guarded<T>(task: Promise<T>, guard: TransferGuard): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(guard.failure);
    if (guard.signal.aborted) return onAbort();
    guard.signal.addEventListener("abort", onAbort, { once: true });
    task.then(resolve, reject).finally(() => guard.signal.removeEventListener("abort", onAbort));
  });
}

/** The failure to report for `error` thrown out of a call: the guard's, else the judged one (which becomes the guard's). */
async function settled(host: ProcessHost, guard: TransferGuard, error: unknown, judged: boolean, call: HelperCall, tools: string): Promise<SandboxError> {
  if (guard.failure !== undefined) return guard.failure;
  if (judged) return guard.fail(error as SandboxError);
  // A start, stdin or output failure: judged like a helper without a receipt, within the
  // call's own bounds (a deadline passing meanwhile wins).
  const failure = await guarded(failureOf(host, undefined, error, Promise.resolve(""), call, tools), guard).catch((late: unknown) => late as SandboxError);
  return guard.failure ?? guard.fail(failure);
}

/** Kill reason of a helper ended because its call failed with `failure`. */
function endReason(failure: SandboxError): SandboxKillReason {
  return failure.code === "deadline" ? "timeout" : "aborted";
}

/** The tools the writer needs, for messages. */
const WRITER_TOOLS = "cat, chmod, mkdir, mv, rm and wc";

/**
 * Write one file through the guest (see the module doc). Bounded by `options.deadlineAt`, or
 * else by `policy.deadlines.guestFileMs`; a writer that still runs after its call failed gets
 * `policy.deadlines.cleanupMs` to notice its closed stdin and remove its temporary file, and
 * is then killed.
 *
 * @throws {SandboxQuotaError} when `data` exceeds `quota.bytes` (or `quota.files` is 0), before anything starts
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for the deadline (the caller's or
 *   the policy's, naming `policy.deadlines.guestFileMs`) and the signal (the file is unchanged)
 * @throws {SandboxUnsupportedError} when the image lacks a tool
 * @throws {SandboxConfigurationError} when the guest refuses the path (a directory, a
 *   read-only or missing place, no permission): the message quotes the guest
 * @throws {SandboxStoppedError} (or the sandbox's stop cause) when compute went away while it ran
 * @throws {SandboxEngineError} when the exchange with the Engine broke (`cause`: what broke)
 * @throws {SandboxQuotaError} / {SandboxStateError} as a process start does
 */
export async function writeGuestFile(host: ProcessHost, request: NormalizedWriteFile): Promise<SandboxTransferReceipt> {
  const call: HelperCall = { action: "write file", path: request.path };
  const guard = guardOf(host, call.action, request.options);
  const size = request.data.size;
  let process: DockerProcess | undefined;
  let exited = false;
  let judged = false;
  try {
    guard.admit(request.path, size);
    process = await guarded(helper(host, ["/bin/sh", "-c", WRITER_SCRIPT, "sh", `./${request.path}`, request.mode.toString(8), String(size)], call.action, guard), guard);
    process.exit.then(() => (exited = true), () => {});
    let fault: unknown;
    const stdout = process.stdout.pipeTo(new WritableStream()).catch((error: unknown) => void (fault ??= error));
    const text = message(process.stderr).catch(() => "");
    const stdin = process.stdin;
    const feed = (async () => {
      const writer = stdin.getWriter();
      try {
        for await (const chunk of request.data.stream()) {
          if (guard.signal.aborted) break;
          await writer.write(chunk);
          guard.moved(chunk.byteLength);
        }
      } finally {
        // Half-close in every case: a write cut short leaves fewer bytes than announced, and
        // the writer removes its temporary file instead of renaming it.
        await writer.close().catch(() => {});
      }
    })().catch((error: unknown) => void (fault ??= error));
    // A stdin that fails (the writer exited, or its connection broke) is judged with the
    // receipt, which follows either way.
    const [exit] = await guarded(Promise.all([process.exit, feed, stdout]), guard);
    guard.check();
    if (exit.kind === "exited" && exit.code === 0) return Object.freeze({ files: 1, bytes: size });
    judged = true;
    throw await guarded(failureOf(host, exit, fault, text, call, WRITER_TOOLS), guard);
  } catch (error) {
    const failure = await settled(host, guard, error, judged, call, WRITER_TOOLS);
    if (process !== undefined && !exited && !host.stopping.aborted) endLater(host, process, endReason(failure));
    throw failure;
  } finally {
    guard.dispose();
  }
}

/**
 * End `process` for `reason` unless it exits within `policy.deadlines.cleanupMs`: a writer
 * whose call failed has had its stdin closed, and removes its temporary file on its own.
 */
function endLater(host: ProcessHost, process: DockerProcess, reason: SandboxKillReason): void {
  const cancel = setLongTimeout(() => void process.end(reason).catch(() => {}), host.policy.deadlines.cleanupMs);
  process.exit.then(cancel, cancel);
}

/**
 * Read one file through the guest (see the module doc). Bounded by `options.deadlineAt`, or
 * else by `policy.deadlines.guestFileMs`; a reader that still runs after its call failed is
 * killed.
 *
 * @throws {SandboxQuotaError} when the file holds more than `maxBytes`
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for the deadline (the caller's or
 *   the policy's, naming `policy.deadlines.guestFileMs`) and the signal (the reader is killed)
 * @throws {SandboxUnsupportedError} when the image lacks `head`
 * @throws {SandboxConfigurationError} when the path is missing, a directory, not a regular
 *   file (a FIFO, a device; also one swapped in while it is opened), or unreadable in the guest
 * @throws {SandboxStoppedError} (or the sandbox's stop cause) when compute went away while it ran
 * @throws {SandboxEngineError} when the exchange with the Engine broke (`cause`: what broke)
 * @throws {SandboxQuotaError} / {SandboxStateError} as a process start does
 */
export async function readGuestFile(host: ProcessHost, request: NormalizedReadFile): Promise<Uint8Array> {
  const call: HelperCall = { action: "read file", path: request.path };
  const guard = guardOf(host, call.action, request.options);
  const { maxBytes } = request;
  let process: DockerProcess | undefined;
  let exited = false;
  let judged = false;
  try {
    guard.admit(request.path, 0);
    process = await guarded(helper(host, ["/bin/sh", "-c", READER_SCRIPT, "sh", `./${request.path}`, String(maxBytes + 1)], call.action, guard), guard);
    process.exit.then(() => (exited = true), () => {});
    await process.stdin.close().catch(() => {});
    const chunks: Uint8Array[] = [];
    let length = 0;
    const stdout = process.stdout;
    const collect = (async () => {
      for await (const chunk of stdout) {
        if (length + chunk.byteLength > maxBytes) {
          const bound = request.maxBytesDefault === undefined
            ? "options.maxBytes); raise options.maxBytes"
            : `${request.maxBytesDefault}, which applies when options.maxBytes is not set); pass options.maxBytes`;
          throw guard.fail(
            new SandboxQuotaError(
              `Cannot ${call.action} ${request.path}: it holds more than ${maxBytes} bytes (${bound} (up to 1 GiB) or export it with exportTree after stop()`,
            ),
          );
        }
        chunks.push(chunk);
        length += chunk.byteLength;
        guard.moved(chunk.byteLength);
      }
    })();
    const text = message(process.stderr).catch(() => "");
    const [exit] = await guarded(Promise.all([process.exit, collect]), guard);
    guard.check();
    if (exit.kind === "exited" && exit.code === 0) return concatBytes(chunks);
    judged = true;
    throw await guarded(failureOf(host, exit, undefined, text, call, "head"), guard);
  } catch (error) {
    const failure = await settled(host, guard, error, judged, call, "head");
    // A reader that may still run (a deadline, a signal, a guest that stopped it): end it.
    if (process !== undefined && !exited && !host.stopping.aborted) process.end(endReason(failure)).catch(() => {});
    throw failure;
  } finally {
    guard.dispose();
  }
}
