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
 * for `writeFile`, and `head` for `readFile` (busybox provides them all); a missing tool
 * fails with `SandboxUnsupportedError` naming it.
 *
 * @module
 */
import {
  SandboxConfigurationError,
  SandboxEngineError,
  type SandboxError,
  SandboxQuotaError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import type { NormalizedReadFile, NormalizedWriteFile } from "../../sandbox/guest_files.ts";
import { FIXED_GUEST_ENV } from "../../sandbox/process.ts";
import type { SandboxTransferReceipt } from "../../sandbox/transfer.ts";
import { WORKSPACE_PATH } from "../workload.ts";
import { type DockerProcess, type ProcessHost, startGuestProcess } from "../process.ts";
import { concatBytes } from "../../streams/concat_bytes.ts";
import { asSandboxError } from "../_engine_errors.ts";
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
 * regular file (symlinks followed inside the guest).
 */
export const READER_SCRIPT = 'command -v head >/dev/null 2>&1 || { echo head >&2; exit 120; }; p=$1; ' +
  '[ -e "$p" ] || exit 124; [ -d "$p" ] && exit 121; [ -f "$p" ] || exit 123; exec head -c "$2" "$p"';

/** Most stderr bytes of a helper kept for the error message. */
const MAX_MESSAGE_BYTES = 4096;

/** Bound on a helper's unread output, bytes (its output is read as it arrives). */
const HELPER_BUFFER_BYTES = 4 * 1024 * 1024;

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

/** The error of a helper that exited with `code`. */
function helperError(code: number, text: string, action: string, path: string, tools: string): SandboxError {
  const where = `Cannot ${action} ${path}`;
  if (code === MISSING_TOOL) {
    return new SandboxUnsupportedError(`${where}: the image has no ${text} on PATH; ${action === "write file" ? "writeFile" : "readFile"} needs /bin/sh with ${tools} (busybox provides them)`);
  }
  if (code === 126 || code === 127) {
    return new SandboxUnsupportedError(`${where}: the guest could not run /bin/sh (exit code ${code}${text ? `: ${text}` : ""}); the image must provide /bin/sh with ${tools}`);
  }
  if (code === IS_DIRECTORY) return new SandboxConfigurationError(`${where}: it is a directory in the guest; name a regular file`);
  if (code === MISSING) return new SandboxConfigurationError(`${where}: it does not exist in the guest (paths are relative to /workspace: work/… for the work directory)`);
  if (code === NOT_REGULAR) return new SandboxConfigurationError(`${where}: it is not a regular file in the guest`);
  if (code === SHORT_INPUT) return new SandboxEngineError(`${where}: the guest received fewer bytes than were sent; the file is unchanged`);
  return new SandboxConfigurationError(`${where}: the guest refused it (exit code ${code}${text ? `: ${text}` : ""}); the file is unchanged`);
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

/**
 * Write one file through the guest (see the module doc).
 *
 * @throws {SandboxQuotaError} when `data` exceeds `quota.bytes` (or `quota.files` is 0), before anything starts
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for the deadline and the signal (the file is unchanged)
 * @throws {SandboxUnsupportedError} when the image lacks a tool
 * @throws {SandboxConfigurationError} when the guest refuses the path (a directory, a
 *   read-only or missing place, no permission): the message quotes the guest
 * @throws {SandboxQuotaError} / {SandboxStateError} / {SandboxStoppedError} / {SandboxEngineError} as a process start does
 */
export async function writeGuestFile(host: ProcessHost, request: NormalizedWriteFile): Promise<SandboxTransferReceipt> {
  const action = "write file";
  const guard = new TransferGuard(action, request.options, [host.stopping]);
  const size = request.data.size;
  try {
    guard.admit(request.path, size);
    const process = await guarded(helper(host, ["/bin/sh", "-c", WRITER_SCRIPT, "sh", `./${request.path}`, request.mode.toString(8), String(size)], action, guard), guard);
    const stdout = process.stdout.pipeTo(new WritableStream()).catch(() => {});
    const text = message(process.stderr).catch(() => "");
    const feed = (async () => {
      const writer = process.stdin.getWriter();
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
    })();
    const [exit] = await guarded(Promise.all([process.exit, feed, stdout]), guard);
    guard.check();
    if (exit.kind === "unavailable") throw host.stopping.reason as SandboxError;
    if (exit.code !== 0) throw helperError(exit.code, await text, action, request.path, "cat, chmod, mkdir, mv, rm and wc");
    return Object.freeze({ files: 1, bytes: size });
  } catch (error) {
    throw guard.settle(error, (cause) => asSandboxError(cause, action));
  } finally {
    guard.dispose();
  }
}

/**
 * Read one file through the guest (see the module doc).
 *
 * @throws {SandboxQuotaError} when the file holds more than `maxBytes`
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for the deadline and the signal (the reader is killed)
 * @throws {SandboxUnsupportedError} when the image lacks `head`
 * @throws {SandboxConfigurationError} when the path is missing, a directory, not a regular
 *   file, or unreadable in the guest
 * @throws {SandboxQuotaError} / {SandboxStateError} / {SandboxStoppedError} / {SandboxEngineError} as a process start does
 */
export async function readGuestFile(host: ProcessHost, request: NormalizedReadFile): Promise<Uint8Array> {
  const action = "read file";
  const guard = new TransferGuard(action, request.options, [host.stopping]);
  const { maxBytes } = request;
  let process: DockerProcess | undefined;
  let exited = false;
  try {
    guard.admit(request.path, 0);
    process = await guarded(helper(host, ["/bin/sh", "-c", READER_SCRIPT, "sh", `./${request.path}`, String(maxBytes + 1)], action, guard), guard);
    process.exit.then(() => (exited = true), () => {});
    await process.stdin.close().catch(() => {});
    const chunks: Uint8Array[] = [];
    let length = 0;
    const collect = (async () => {
      for await (const chunk of process!.stdout) {
        if (length + chunk.byteLength > maxBytes) {
          const bound = request.maxBytesDefault === undefined
            ? "options.maxBytes); raise options.maxBytes"
            : `${request.maxBytesDefault}, which applies when options.maxBytes is not set); pass options.maxBytes`;
          throw guard.fail(
            new SandboxQuotaError(
              `Cannot ${action} ${request.path}: it holds more than ${maxBytes} bytes (${bound} (up to 1 GiB) or export it with exportTree after stop()`,
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
    if (exit.kind === "unavailable") throw host.stopping.reason as SandboxError;
    if (exit.code !== 0) throw helperError(exit.code, await text, action, request.path, "head");
    return concatBytes(chunks);
  } catch (error) {
    const failure = guard.settle(error, (cause) => asSandboxError(cause, action));
    // A reader that may still run (a deadline, a signal, a FIFO it blocks on): end it.
    if (process !== undefined && !exited && !host.stopping.aborted) process.end(failure.code === "deadline" ? "timeout" : "aborted").catch(() => {});
    throw failure;
  } finally {
    guard.dispose();
  }
}
