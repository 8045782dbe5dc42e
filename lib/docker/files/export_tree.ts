/**
 * Exporting a selection of the workspace through the never-started accessor: check the
 * selection's ancestors with `HEAD` requests, `GET` only the selected path, read the
 * archive with the strict tar reader (spilling path checks to the backend's spill
 * directory) and hand out entries with workspace-relative paths.
 *
 * @module
 */
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxEngineError,
  SandboxError,
  SandboxStateError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import { passThrough } from "../../streams/pass_through.ts";
import { utf8ByteLength } from "../../streams/utf8.ts";
import type { SandboxExportEntry, SandboxExportSelection } from "../../sandbox/transfer.ts";
import type { NormalizedTransferOptions } from "../../sandbox/transfer_input.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { DockerEngineError, DockerEngineTransportError } from "../../engine/errors.ts";
import type { TarEntry } from "../../tar/entry.ts";
import { TarError } from "../../tar/error.ts";
import { quotePath } from "../../tar/quote_path.ts";
import { readTar } from "../../tar/read_tar.ts";
import { WORKSPACE_PATH } from "../guest_paths.ts";
import { asSandboxError } from "../_engine_errors.ts";
import { type ContainerPathKind, containerPathKind, getContainerArchive, statContainerPath } from "../../engine/container_archive.ts";
import { exportTarError } from "./_tar_errors.ts";
import type { TransferGuard } from "./_transfer_guard.ts";
import { reasonOf } from "../../internal/reason.ts";

const ACTION = "export files";

/**
 * Longest directory path an export accepts, in UTF-8 bytes of its workspace-relative path.
 * The Engine's archiver silently leaves out entries whose path on the daemon's host reaches
 * `PATH_MAX` (4096 bytes; measured with Engine 28.5: the archive just ends early, without an
 * error). That host path is the volume's mount point (about 100 bytes, more with a long
 * data root), the directory's path and a name of up to 255 bytes: refusing directories
 * deeper than this keeps every child well below the limit, so an export is never silently
 * incomplete.
 */
export const MAX_EXPORT_DIRECTORY_PATH_BYTES = 3072;

/** What an export needs from its sandbox. */
export interface ExportHost {
  readonly engine: DockerEngine;
  /** The accessor container ID. */
  readonly accessorId: string;
  /** The backend's spill directory. */
  readonly spillDirectory: string;
  /** Deadline of each `HEAD` request, milliseconds. */
  readonly timeoutMs: number;
  /**
   * Called once the returned stream ends (closes, errors or is cancelled): frees the
   * sandbox's export slot. Not called when `openExport` rejects (the caller frees it then).
   */
  readonly release: () => void;
}

/**
 * Where a selection is in the container and how its archive names map back: the Engine
 * names the selected path by its last segment (`root`); `base` is the workspace-relative
 * path that segment stands for (`undefined` for the workspace itself, whose root entry is
 * not handed out).
 */
interface Target {
  readonly kind: SandboxExportSelection["kind"];
  readonly guestPath: string;
  readonly root: string;
  readonly base: string | undefined;
}

function targetOf(selection: SandboxExportSelection): Target {
  if (selection.kind === "workspace") {
    return { kind: "workspace", guestPath: WORKSPACE_PATH, root: WORKSPACE_PATH.slice(1), base: undefined };
  }
  const root = selection.path.slice(selection.path.lastIndexOf("/") + 1);
  return { kind: selection.kind, guestPath: `${WORKSPACE_PATH}/${selection.path}`, root, base: selection.path };
}

/**
 * Open an export (the sandbox checked its state and made the accessor). Rejects for a
 * selection that does not resolve; archive failures arrive later as stream errors.
 *
 * @throws {SandboxError} see `DockerSandbox.exportTree`
 */
export async function openExport(
  host: ExportHost,
  selection: SandboxExportSelection,
  options: NormalizedTransferOptions,
  guard: TransferGuard,
): Promise<ReadableStream<SandboxExportEntry>> {
  const target = targetOf(selection);
  if (selection.kind !== "workspace") await checkSelection(host, selection.kind, selection.path, guard);
  guard.check();
  const archive = await getContainerArchive(host.engine, host.accessorId, target.guestPath, { signal: guard.signal });
  let entries: ReadableStream<TarEntry>;
  try {
    guard.check();
    entries = readTar(archive, { spillDirectory: host.spillDirectory, maxInMemoryPaths: options.maxInMemoryPaths });
  } catch (error) {
    await archive.cancel(error).catch(() => {});
    throw error;
  }
  return exportStream(entries, target, guard, host.release);
}

const KIND_WORDS: Readonly<Record<ContainerPathKind, string>> = {
  directory: "a directory",
  file: "a regular file",
  symlink: "a symbolic link",
  other: "a special file (device, FIFO or socket)",
};

/**
 * `HEAD` every ancestor of `path` (each must be a real directory: the Engine follows links
 * in earlier segments, so each is checked by itself, outermost first), then the selected
 * path (a real directory for a subtree, a regular file for a file).
 *
 * @throws {SandboxConfigurationError} naming the first segment that does not qualify
 */
async function checkSelection(host: ExportHost, kind: "file" | "subtree", path: string, guard: TransferGuard): Promise<void> {
  const segments = path.split("/");
  for (let count = 1; count <= segments.length; count++) {
    const prefix = segments.slice(0, count).join("/");
    const selected = count === segments.length;
    const stat = await statContainerPath(host.engine, host.accessorId, `${WORKSPACE_PATH}/${prefix}`, {
      timeoutMs: host.timeoutMs,
      signal: guard.signal,
    });
    guard.check();
    const role = selected ? "the selected path" : "ancestor";
    if (stat === undefined) {
      const hint = await workHint(host, path, guard);
      throw new SandboxConfigurationError(`Cannot ${ACTION}: ${role} ${quotePath(prefix)} does not exist in the workspace${hint}`);
    }
    const found = containerPathKind(stat.mode);
    const wanted: ContainerPathKind = selected && kind === "file" ? "file" : "directory";
    if (found !== wanted) {
      const link = found === "symlink" ? ` to ${quotePath(stat.linkTarget)}` : "";
      const rule = found === "symlink" ? "; selections never follow links" : "";
      throw new SandboxConfigurationError(
        `Cannot ${ACTION}: ${role} ${quotePath(prefix)} is ${KIND_WORDS[found]}${link}, not ${KIND_WORDS[wanted]}${rule}`,
      );
    }
  }
}

/**
 * For a selection outside `work/` that does not exist: "; did you mean 'work/<path>'?" when
 * that path exists (export paths are relative to `/workspace`, import paths and the
 * process's working directory to `/workspace/work`), else "".
 */
async function workHint(host: ExportHost, path: string, guard: TransferGuard): Promise<string> {
  if (path === "work" || path.startsWith("work/")) return "";
  const stat = await statContainerPath(host.engine, host.accessorId, `${WORKSPACE_PATH}/work/${path}`, {
    timeoutMs: host.timeoutMs,
    signal: guard.signal,
  });
  guard.check();
  if (stat === undefined) return "";
  return `; did you mean ${quotePath(`work/${path}`)}? (export paths are relative to /workspace; the process works in /workspace/work)`;
}

/** The workspace-relative path of an archive path, or `undefined` outside the selection. */
function rebase(target: Target, archivePath: string): string | undefined {
  if (archivePath === target.root) return target.base ?? "";
  if (!archivePath.startsWith(`${target.root}/`)) return undefined;
  const rest = archivePath.slice(target.root.length + 1);
  return target.base === undefined ? rest : `${target.base}/${rest}`;
}

/** Check an archive entry against the selection; its workspace-relative path ("" for the workspace root). */
function placeEntry(target: Target, entry: TarEntry, first: boolean): string {
  const path = rebase(target, entry.path);
  const outside = (reason: string) =>
    new SandboxEngineError(`Cannot ${ACTION}: the Engine's archive holds '${entry.path}' ${reason}`);
  if (path === undefined) throw outside(`outside the selected '${target.root}'`);
  const isRoot = entry.path === target.root;
  if (first !== isRoot) throw outside(first ? "before the selected path itself" : "twice");
  if (isRoot && entry.type !== (target.kind === "file" ? "file" : "directory")) {
    throw outside(`as a ${entry.type} where the selection found a ${target.kind === "file" ? "regular file" : "directory"}`);
  }
  if (!isRoot && target.kind === "file") throw outside("besides the selected file");
  return path;
}

function exportError(error: unknown, target: Target): SandboxError {
  if (error instanceof SandboxError) return error;
  if (error instanceof TarError) {
    return exportTarError(error, ACTION, error.path === undefined ? undefined : rebase(target, error.path) ?? error.path);
  }
  if (error instanceof DockerEngineError || error instanceof DockerEngineTransportError) return asSandboxError(error, ACTION);
  return new SandboxEngineError(`Cannot ${ACTION}: ${reasonOf(error, ACTION)}`, { cause: error });
}

/**
 * The entry stream handed to the caller. A failure of the guard (deadline, abort, destroy)
 * ends it at once, even while nobody reads, so the connection closes and spill files go.
 * However it ends (closed, errored, cancelled), `release` frees the sandbox's export slot.
 */
function exportStream(
  entries: ReadableStream<TarEntry>,
  target: Target,
  guard: TransferGuard,
  release: () => void,
): ReadableStream<SandboxExportEntry> {
  const reader = entries.getReader();
  let first = true;
  let ended = false;
  let controller!: ReadableStreamDefaultController<SandboxExportEntry>;
  const end = () => {
    ended = true;
    guard.dispose();
    guard.signal.removeEventListener("abort", onAbort);
    release();
  };
  const onAbort = () => {
    if (ended) return;
    end();
    reader.cancel(guard.failure).catch(() => {});
    controller.error(guard.failure);
  };
  guard.signal.addEventListener("abort", onAbort, { once: true });
  return new ReadableStream<SandboxExportEntry>({
    start(c) {
      controller = c;
    },
    async pull() {
      try {
        for (;;) {
          guard.check();
          const { done, value } = await reader.read();
          guard.check();
          if (done) {
            if (first) throw new SandboxEngineError(`Cannot ${ACTION}: the Engine's archive is empty`);
            end();
            controller.close();
            return;
          }
          const path = placeEntry(target, value, first);
          first = false;
          if (path === "") {
            await value.body.cancel();
            continue;
          }
          if (value.type === "directory" && utf8ByteLength(path) > MAX_EXPORT_DIRECTORY_PATH_BYTES) {
            throw new SandboxUnsupportedError(
              `Cannot ${ACTION}: directory '${path.slice(0, 64)}…' is ${utf8ByteLength(path)} bytes deep, above ${MAX_EXPORT_DIRECTORY_PATH_BYTES}; the Engine leaves out entries below such paths without an error, so the export could not be complete`,
            );
          }
          guard.admit(path, value.size);
          controller.enqueue(Object.freeze({
            path,
            type: value.type,
            mode: value.mode,
            mtime: value.mtime,
            size: value.size,
            uid: value.uid,
            gid: value.gid,
            body: exportBody(value.body, guard, path, target),
          }));
          return;
        }
      } catch (error) {
        if (ended) return;
        const failure = guard.settle(error, (cause) => exportError(cause, target));
        end();
        await reader.cancel(failure).catch(() => {});
        controller.error(failure);
      }
    },
    async cancel(reason) {
      if (ended) return;
      end();
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/** One entry's body: counts moved bytes; reports the export's failure as its error. */
function exportBody(body: ReadableStream<Uint8Array>, guard: TransferGuard, path: string, target: Target): ReadableStream<Uint8Array> {
  return passThrough(body, {
    onChunk: (chunk) => guard.moved(chunk.length),
    mapError: (error) => {
      const failure = bodyError(error, guard, path, target);
      // A failure of the whole export (a throwing onProgress, say) ends the entry stream
      // and the Engine exchange too, not only this body.
      if (failure === guard.failure) guard.fail(failure);
      return failure;
    },
  });
}

function bodyError(error: unknown, guard: TransferGuard, path: string, target: Target): SandboxError {
  if (guard.failure !== undefined) return guard.failure;
  if (error instanceof TarError && error.code === "entry_skipped") {
    return new SandboxStateError(`Cannot read '${path}': the next entry was requested before this body was read`, { cause: error });
  }
  if (error instanceof TarError && error.code === "cancelled") {
    return new SandboxAbortedError(`Cannot read '${path}': the export stream was cancelled`, { cause: error });
  }
  return guard.settle(error, (cause) => exportError(cause, target));
}
