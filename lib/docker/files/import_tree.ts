/**
 * Importing a tree: caller entries become a tar written by our writer (regular files,
 * directories and symlinks that stay inside the tree, owned by the sandbox user) and streamed into the keeper with
 * `PUT /containers/{keeperId}/archive?path=/workspace/work`.
 *
 * Parent directories an entry needs but the source did not send earlier are sent first
 * (mode 0755, the import's time): the Engine would otherwise create them as `root:root`
 * and the non-root process could not write into them. Directories sent are remembered for
 * the length of one import (memory grows with the number of directories, not files).
 *
 * @module
 */
import { SandboxAbortedError, SandboxConfigurationError, SandboxEngineError, SandboxError } from "../../sandbox/errors.ts";
import {
  markPartialImport,
  type SandboxImportEntry,
  type SandboxImportOptions,
  type SandboxTransferReceipt,
} from "../../sandbox/transfer.ts";
import { normalizeTransferOptions, parseImportEntry } from "../../sandbox/transfer_input.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { DockerEngineError, DockerEngineTransportError } from "../../engine/errors.ts";
import { TarError } from "../../tar/error.ts";
import { passThrough } from "../../streams/pass_through.ts";
import { type TarWriterEntry, writeTar } from "../../tar/write_tar.ts";
import { WORK_PATH } from "../guest_paths.ts";
import { asSandboxError } from "../_engine_errors.ts";
import { putContainerArchive } from "../../engine/container_archive.ts";
import { adoptPool, ReadBufferPool } from "./_read_buffers.ts";
import { importTarError } from "./_tar_errors.ts";
import { TransferGuard } from "./_transfer_guard.ts";
import { reasonOf } from "../../internal/reason.ts";

const ACTION = "import files";

/** Mode of a parent directory the import adds. */
export const IMPLICIT_DIRECTORY_MODE = 0o755;

/** What an import needs from its sandbox. */
export interface ImportHost {
  readonly engine: DockerEngine;
  readonly keeperId: string;
  readonly user: { readonly uid: number; readonly gid: number };
  /** Aborted with the stop cause once compute removal begins. */
  readonly stopping: AbortSignal;
}

/** Counters of what left for the Engine (see `SandboxPartialImport`). */
interface Sent {
  entriesSent: number;
  bytesSent: number;
  lastPathSent: string | undefined;
}

/**
 * Run one import (the sandbox checked its state). Every rejection carries the partial
 * import record.
 *
 * @throws {SandboxImportFailure} see `DockerSandbox.importTree`
 */
export async function importTreeInto(
  host: ImportHost,
  source: AsyncIterable<SandboxImportEntry> | Iterable<SandboxImportEntry>,
  rawOptions: SandboxImportOptions | undefined,
): Promise<SandboxTransferReceipt> {
  const sent: Sent = { entriesSent: 0, bytesSent: 0, lastPathSent: undefined };
  let guard: TransferGuard | undefined;
  try {
    const options = normalizeTransferOptions(rawOptions, ACTION, false);
    if (!isIterable(source)) {
      throw new SandboxConfigurationError(`Cannot ${ACTION}: source must be an iterable or async iterable of entries`);
    }
    guard = new TransferGuard(ACTION, options, [host.stopping]);
    guard.check();
    const complete = { value: false };
    // A failed transfer aborts the exchange, which cancels the archive and so the writer and
    // the entry body being read.
    // Host-file bodies from importDirectory read into this pool; the connection gives each
    // chunk back once the kernel has its bytes.
    const pool = new ReadBufferPool();
    const archive = writeTar(entries(source, host.user, guard, sent, complete, pool));
    await putContainerArchive(host.engine, host.keeperId, WORK_PATH, archive, {
      signal: guard.signal,
      onBodyChunkSent: (chunk) => pool.release(chunk),
    });
    guard.check();
    if (!complete.value) {
      throw new SandboxEngineError(`Cannot ${ACTION}: the Engine answered before the archive was complete`);
    }
    return Object.freeze({ files: guard.files, bytes: guard.bytes });
  } catch (error) {
    const failure = guard === undefined ? importError(error) : guard.settle(bodyFailure(error, guard), importError);
    throw markPartialImport(failure, { ...sent });
  } finally {
    guard?.dispose();
  }
}

/** The body stream's own error when the exchange failed because of it. */
function bodyFailure(error: unknown, guard: TransferGuard): unknown {
  if (guard.failure === undefined && error instanceof DockerEngineTransportError && error.code === "aborted" && error.cause !== undefined) {
    return error.cause;
  }
  return error;
}

function importError(error: unknown): SandboxError {
  if (error instanceof SandboxError) return error;
  if (error instanceof TarError) return importTarError(error, ACTION);
  if (error instanceof DockerEngineError || error instanceof DockerEngineTransportError) return asSandboxError(error, ACTION);
  return new SandboxAbortedError(`Cannot ${ACTION}: the source failed: ${reasonOf(error)}`, { cause: error });
}

function isIterable(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  return typeof value === "object" && value !== null &&
    (typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function" ||
      typeof (value as Iterable<unknown>)[Symbol.iterator] === "function");
}

/** The writer's entries: validated, quota-checked, owned by the sandbox user, parents first. */
async function* entries(
  source: AsyncIterable<SandboxImportEntry> | Iterable<SandboxImportEntry>,
  user: { readonly uid: number; readonly gid: number },
  guard: TransferGuard,
  sent: Sent,
  complete: { value: boolean },
  pool: ReadBufferPool,
): AsyncGenerator<TarWriterEntry, void, undefined> {
  const now = Math.floor(Date.now() / 1000);
  const directories = new Set<string>();
  // Links sent: nothing may be written through one (an entry below a link would replace it).
  const links = new Set<string>();
  const send = (path: string) => {
    sent.entriesSent += 1;
    sent.lastPathSent = path;
  };
  let index = 0;
  for await (const raw of source) {
    let entry;
    try {
      guard.check();
      entry = parseImportEntry(raw, index, ACTION);
      index += 1;
      const parents = missingParents(entry.path, directories);
      const through = parents.find((parent) => links.has(parent));
      if (through !== undefined || links.has(entry.path)) {
        throw new SandboxConfigurationError(
          `Cannot ${ACTION}: entry[${index - 1}] '${entry.path}' ${through === undefined ? "repeats" : "lies below"} the symlink '${through ?? entry.path}' sent before; ` +
            "send each path once, and nothing below a link",
        );
      }
      for (const parent of parents) {
        guard.admit(parent, 0);
        directories.add(parent);
        send(parent);
        yield { path: parent, type: "directory", mode: IMPLICIT_DIRECTORY_MODE, mtime: now, uid: user.uid, gid: user.gid, size: 0 };
      }
      guard.admit(entry.path, entry.size);
    } catch (error) {
      await cancelBody(raw, error);
      throw error;
    }
    if (entry.type === "directory") directories.add(entry.path);
    if (entry.type === "symlink") links.add(entry.path);
    send(entry.path);
    yield {
      path: entry.path,
      type: entry.type,
      target: entry.target,
      mode: entry.mode,
      mtime: entry.mtime ?? now,
      uid: user.uid,
      gid: user.gid,
      size: entry.size,
      body: entry.body === undefined ? undefined : counted(entry.body, entry.size, guard, sent, pool),
    };
  }
  guard.check();
  complete.value = true;
}

/** Cancel the body of an entry that will not be written. */
async function cancelBody(raw: unknown, reason: unknown): Promise<void> {
  const body = (raw as { body?: unknown } | null)?.body;
  if (body instanceof ReadableStream && !body.locked) await body.cancel(reason).catch(() => {});
}

/** Ancestors of `path` not yet sent, outermost first. */
function missingParents(path: string, directories: ReadonlySet<string>): string[] {
  const missing: string[] = [];
  for (let end = path.lastIndexOf("/"); end > 0; end = path.lastIndexOf("/", end - 1)) {
    const parent = path.slice(0, end);
    if (directories.has(parent)) break;
    missing.push(parent);
  }
  return missing.reverse();
}

/**
 * Pass a body through, counting its bytes as they move. Only the writer and the connection
 * see its chunks, so a host-file body may read into the import's pool.
 */
function counted(
  body: ReadableStream<Uint8Array>,
  size: number,
  guard: TransferGuard,
  sent: Sent,
  pool: ReadBufferPool,
): ReadableStream<Uint8Array> {
  adoptPool(body, pool);
  let left = size;
  return passThrough(body, {
    onChunk: (chunk) => {
      // A chunk past the declared size is not counted: the writer rejects it unsent.
      if (!(chunk instanceof Uint8Array) || chunk.length > left) return;
      guard.moved(chunk.length);
      // Counted once it is certain to be handed on.
      left -= chunk.length;
      sent.bytesSent += chunk.length;
    },
  });
}
