/**
 * Portable snapshots: a snapshot's tree out as a tar stream (`snapshot.export()`) and a tar
 * stream in as a new snapshot (`backend.importSnapshot()`), on this engine or another.
 *
 * Both directions go through the strict tar reader (`lib/tar/read_tar.ts`, the export's
 * validator: checksums, PAX, padding, termination, duplicate and conflicting paths; only
 * regular files and directories) and are written again by our tar writer, so what leaves
 * and what enters is exactly the validated entries: paths relative to the tree's root
 * (`work/…` in the guest), modes, mtimes (whole seconds), empty directories, bytes. A
 * symlink, hard link or special file is refused, as `exportTree` refuses it. Owners of an
 * import are set to the snapshot's user (a fork gives every entry to its own user anyway).
 *
 * The Engine reaches the volume through a never-started copier (`./copier.ts`
 * `holdVolume`), recorded in the snapshot's record and removed when the stream ends.
 *
 * @module
 */
import { SandboxConfigurationError, type SandboxError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { getContainerArchive, putContainerArchive } from "../../engine/container_archive.ts";
import type { TarEntry } from "../../tar/entry.ts";
import { TarError } from "../../tar/error.ts";
import { readTar } from "../../tar/read_tar.ts";
import type { TarWriterEntry } from "../../tar/write_tar.ts";
import { writeTar } from "../../tar/write_tar.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";
import { exportTarError } from "../files/_tar_errors.ts";
import type { RecoveryLog } from "../recovery/log.ts";
import { asSandboxError } from "../_engine_errors.ts";
import { type CopierContext, holdVolume } from "./copier.ts";
import { byteBoundError, type SnapshotByteBound, snapshotByteBound } from "./byte_bound.ts";

/** Where a snapshot lives: its Engine and its backend's settings. */
export interface SnapshotHome {
  readonly engine: DockerEngine;
  readonly settings: DockerSandboxBackendSettings;
}

/** Options of `snapshot.export()` and `backend.importSnapshot()`. */
export interface DockerSnapshotTransferOptions {
  /** Deadline of each Engine request and record write, milliseconds. @default 30000 */
  readonly timeoutMs?: number;
  /**
   * Most paths the strict reader holds in memory before it spills to
   * `config.spillDirectory` (as `exportTree`'s option). @default 65536
   */
  readonly maxInMemoryPaths?: number;
  /**
   * Most bytes of file content the transfer carries (a non-negative safe integer): past it
   * the stream errors with `SandboxQuotaError` before the entry that would cross it. A sparse
   * file counts at its full length, as it travels. @default `config.defaultExportQuota.bytes`,
   * or none when that is unset
   */
  readonly maxBytes?: number;
}

/** The byte bound of a transfer (`options.maxBytes`, else `config.defaultExportQuota.bytes`). */
function byteBound(home: SnapshotHome, options: DockerSnapshotTransferOptions, action: string): SnapshotByteBound | undefined {
  return snapshotByteBound(home.settings, options.maxBytes, "options.maxBytes", action);
}

function copierContext(home: SnapshotHome, log: RecoveryLog): CopierContext {
  const { settings } = home;
  return { engine: home.engine, log, imageDigest: settings.imageDigest, platform: settings.profile.image.platform, runtime: settings.profile.runtime };
}

/** A validated entry as the writer takes it: `path` relative to the tree's root, whole-second mtime. */
function rewritten(entry: TarEntry, path: string, owner?: { uid: number; gid: number }): TarWriterEntry {
  return {
    path,
    type: entry.type,
    mode: entry.mode,
    mtime: Math.max(0, Math.floor(entry.mtime)),
    uid: owner?.uid ?? entry.uid,
    gid: owner?.gid ?? entry.gid,
    size: entry.size,
    body: entry.type === "file" ? entry.body : undefined,
  };
}

/** The entries of `entries`, skipping the root `root` and stripping `root/`; `onEnd` runs once it ends. */
async function* relativeEntries(
  entries: ReadableStream<TarEntry>,
  root: string | undefined,
  owner: { uid: number; gid: number } | undefined,
  mapError: (error: unknown, path: string | undefined) => unknown,
  bound?: SnapshotByteBound & { readonly action: string },
): AsyncGenerator<TarWriterEntry> {
  let last: string | undefined;
  let carried = 0;
  try {
    for await (const entry of entries) {
      last = entry.path;
      if (root !== undefined && entry.path === root) continue;
      const path = root === undefined ? entry.path : entry.path.slice(root.length + 1);
      if (bound !== undefined && entry.type === "file" && carried + entry.size > bound.bytes) {
        await entry.body?.cancel().catch(() => {});
        throw byteBoundError(bound.action, path, bound);
      }
      carried += entry.type === "file" ? entry.size : 0;
      yield rewritten(entry, path, owner);
    }
  } catch (error) {
    throw mapError(error, last);
  }
}

/**
 * `snapshot.export()`: the snapshot's tree as a validated tar stream (see the module doc).
 * Read it to its end or cancel it: either removes the holder container, then `onEnd` runs.
 *
 * @throws {SandboxUnsupportedError} (in the stream) for an entry that is not a regular file or directory
 * @throws {SandboxError} when the holder cannot be made or the Engine fails
 */
export async function exportSnapshot(
  home: SnapshotHome,
  log: RecoveryLog,
  options: DockerSnapshotTransferOptions = {},
  onEnd: () => void = () => {},
): Promise<ReadableStream<Uint8Array>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const bound = byteBound(home, options, "export snapshot");
  log.bound(() => ({ timeoutMs }));
  const holder = await holdVolume(copierContext(home, log), log.record.identity.names.volume, "read", timeoutMs);
  let archive: ReadableStream<Uint8Array>;
  let entries: ReadableStream<TarEntry>;
  try {
    archive = await getContainerArchive(home.engine, holder.id, holder.path);
    entries = readTar(archive, { spillDirectory: home.settings.spillDirectory, maxInMemoryPaths: options.maxInMemoryPaths });
  } catch (error) {
    await holder.remove().catch(() => {});
    throw asSandboxError(error, "export snapshot");
  }
  const root = holder.path.slice(holder.path.lastIndexOf("/") + 1);
  const mapError = (error: unknown, path: string | undefined): SandboxError =>
    error instanceof TarError ? exportTarError(error, "export snapshot", path) : asSandboxError(error, "export snapshot");
  return settledBy(writeTar(relativeEntries(entries, root, undefined, mapError, bound && { ...bound, action: "export snapshot" })), async () => {
    await entries.cancel().catch(() => {});
    // A failed removal leaves the holder recorded: removeSnapshot() or recover() takes it.
    await holder.remove().catch(() => {});
    onEnd();
  });
}

/**
 * `stream`, handed on one chunk per read, running `settle` once when it ends, errors or is
 * cancelled (even before its first read, when a generator's `finally` would never run).
 */
function settledBy(stream: ReadableStream<Uint8Array>, settle: () => Promise<void>): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  let settled: Promise<void> | undefined;
  const finish = () => settled ??= settle();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (error) {
        await finish();
        throw error;
      }
      if (next.done) {
        await finish();
        controller.close();
      } else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
      await finish();
    },
  }, { highWaterMark: 0 });
}

/**
 * Fill a new snapshot's volume from a caller's tar stream (see the module doc): validated
 * by the strict reader, written again with the snapshot's user as owner, extracted by the
 * Engine into the volume through a never-started holder.
 *
 * @throws {SandboxConfigurationError} when the archive is not acceptable (the reader's reason)
 * @throws {SandboxError} when the Engine fails
 */
export async function importSnapshotTree(
  home: SnapshotHome,
  log: RecoveryLog,
  volume: string,
  tar: ReadableStream<Uint8Array>,
  owner: { uid: number; gid: number },
  options: DockerSnapshotTransferOptions = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const bound = byteBound(home, options, "import snapshot");
  const holder = await holdVolume(copierContext(home, log), volume, "write", timeoutMs);
  try {
    const entries = readTar(tar, { spillDirectory: home.settings.spillDirectory, maxInMemoryPaths: options.maxInMemoryPaths });
    let refused: unknown;
    const mapError = (error: unknown) => {
      refused = error instanceof TarError
        ? new SandboxConfigurationError(`Cannot import snapshot: the archive is not acceptable: ${error.message.replace(/^Cannot read archive: /u, "")}`, { cause: error })
        : error;
      return refused;
    };
    try {
      await putContainerArchive(home.engine, holder.id, holder.path, writeTar(relativeEntries(entries, undefined, owner, mapError, bound && { ...bound, action: "import snapshot" })));
    } catch (error) {
      throw refused ?? asSandboxError(error, "import snapshot");
    }
  } finally {
    // A failed removal leaves the copier recorded: removeSnapshot() or recover() takes it.
    await holder.remove().catch(() => {});
  }
}
