/**
 * {@linkcode exportToDirectory}: write exported entries to a new host directory, all or
 * nothing.
 *
 * @module
 */
import { chmod, lstat, mkdir, open, readdir, rename, rm, utimes } from "node:fs/promises";
import { basename, dirname, isAbsolute, join } from "node:path";
import { SandboxConfigurationError, SandboxConflictError } from "../../sandbox/errors.ts";
import { parseSandboxRelativePath } from "../../sandbox/paths.ts";
import type { SandboxExportEntry, SandboxTransferReceipt } from "../../sandbox/transfer.ts";
import { denialOfDirectory, denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

const ACTION = "export to directory";

/**
 * Default {@linkcode ExportToDirectoryOptions.modeMask}: `0o755`, so nothing the export
 * creates on the host is group- or world-writable.
 *
 * @example
 * ```ts
 * import { DEFAULT_EXPORT_MODE_MASK } from "./export_to_directory.ts";
 *
 * console.log(DEFAULT_EXPORT_MODE_MASK.toString(8)); // "755"
 * ```
 */
export const DEFAULT_EXPORT_MODE_MASK = 0o755;

/**
 * Options of {@linkcode exportToDirectory}.
 *
 * @example Write a subtree's contents without its leading `work/artifacts/`
 * ```ts
 * import type { ExportToDirectoryOptions } from "./export_to_directory.ts";
 *
 * const options: ExportToDirectoryOptions = { base: "work/artifacts" };
 * console.log(options.base);
 * ```
 */
export interface ExportToDirectoryOptions {
  /**
   * A workspace-relative path that becomes the target directory itself: every entry must be
   * it or below it and is written relative to it (the entry equal to `base`, a directory,
   * gives the target its mode and time). Use the selection's path to drop the selection's
   * leading segments (`base: "work/artifacts"` writes `work/artifacts/a.txt` as `a.txt`).
   *
   * @default {undefined} entries are written with their full workspace-relative paths
   */
  readonly base?: string;
  /**
   * Permission bits kept from each entry's mode on the host, an integer from 0 to `0o777`:
   * the host mode is `entry.mode & modeMask`. setuid, setgid and sticky bits are always
   * dropped. The default drops group and world write too, so a guest's `1777` directory
   * becomes `0755` and a `0666` file `0644` (a world-writable host directory would let
   * any host user plant files in the export). Pass `0o777` to keep the guest's write bits.
   *
   * @default {0o755}
   */
  readonly modeMask?: number;
}

/** An entry reduced to what the writer needs (its path relative to the target). */
interface Placed {
  readonly path: string;
  readonly mode: number;
  readonly mtime: number;
}

/**
 * Writes entries (from `exportTree`, or any source of that shape) into a new directory at
 * `hostPath`, atomically: everything goes into a fresh temporary sibling directory
 * (`.<name>.agentcell-<uuid>.partial`, mode 0700), which is renamed to `hostPath` only after
 * the last entry was written and the entry stream closed without error. On any failure the
 * temporary directory is removed and the entry stream cancelled, so a failed export leaves
 * nothing behind (a process that dies midway can leave the `.partial` sibling).
 *
 * Files are created exclusively (`wx`) with their bytes, then get their mode and
 * modification time; directories get theirs after everything below them was written. Modes
 * are masked with `options.modeMask` (default `0o755`): setuid, setgid and sticky bits from
 * the guest are always dropped (a host running as root would otherwise create set-user-ID
 * files from guest content), and by default so are group and world write, so the export
 * never creates a group- or world-writable file or directory. Ownership is the calling
 * process's. The target directory gets mode 0700 unless `base` names a directory entry,
 * whose mode (masked) it then takes. Entry paths are checked again (canonical, relative);
 * parents missing from the entries are created 0755 (less the umask).
 *
 * @param entries The entries, e.g. the stream `exportTree` returned; consumed to the end.
 * @param hostPath Absolute path of the directory to create; it must not exist, its parent
 *   must.
 * @param options See {@linkcode ExportToDirectoryOptions}.
 * @returns `{ files, bytes }`: entries written (directories included) and content bytes.
 * @throws {SandboxConfigurationError} `configuration`: `hostPath` not absolute, its parent
 *   missing or not a directory, `options.modeMask` not an integer from 0 to `0o777`, an entry path not canonical or outside `base`, an entry that is
 *   neither a file nor a directory.
 * @throws {SandboxConflictError} `conflict`: `hostPath` exists (checked before and right
 *   before the rename).
 * Every failure cancels `entries` (a stream) or returns its iterator, including a failure
 * of these checks before anything was read: an unread export stream would keep the
 * Engine's archive request, and with it the sandbox's export slot, open.
 * Errors of the entry stream (the export's `SandboxError`s) and of the host file system
 * (`ENOSPC`, `EACCES`, `ENAMETOOLONG` for a path the host cannot hold, `EEXIST` for a
 * hand-made entry stream that names a path twice, …) propagate unchanged after the
 * cleanup.
 *
 * @example Export the artifacts of a stopped sandbox
 * ```ts ignore
 * // ignore: needs a stopped sandbox (`sandbox` from `reservation.start()`)
 * import { exportToDirectory } from "@agentcell/docker";
 *
 * await sandbox.stop();
 * const entries = await sandbox.exportTree({ kind: "subtree", path: "work/artifacts" });
 * const written = await exportToDirectory(entries, "/tmp/artifacts", { base: "work/artifacts" });
 * console.log(written); // { files: …, bytes: … }
 * ```
 */
export async function exportToDirectory(
  entries: ReadableStream<SandboxExportEntry> | AsyncIterable<SandboxExportEntry>,
  hostPath: string,
  options: ExportToDirectoryOptions = {},
): Promise<SandboxTransferReceipt> {
  checkEntries(entries);
  let temporary: string;
  let base: string | undefined;
  let modeMask: number;
  try {
    if (typeof hostPath !== "string" || !isAbsolute(hostPath) || hostPath.includes("\0") || basename(hostPath) === "") {
      throw new SandboxConfigurationError(`Cannot ${ACTION}: hostPath must be an absolute path below a directory`);
    }
    base = options?.base === undefined ? undefined : parseSandboxRelativePath(options.base, "options.base");
    modeMask = parseModeMask(options?.modeMask);
    await assertAbsent(hostPath);
    temporary = join(dirname(hostPath), `.${basename(hostPath)}.agentcell-${crypto.randomUUID()}.partial`);
    await makeTemporary(temporary, hostPath);
  } catch (error) {
    // Nothing was read: release the source (an export's archive request stays open, and
    // holds the Engine's container lock, until its stream is cancelled).
    await discard(entries, error);
    throw error;
  }
  const iterator = iterate(entries);
  let finished = false;
  try {
    const receipt = await writeEntries(iterator, temporary, base, modeMask);
    finished = true;
    await assertAbsent(hostPath);
    await rename(temporary, hostPath);
    return receipt;
  } catch (error) {
    if (!finished) await iterator.return?.(undefined)?.catch(() => {});
    await removeTree(temporary).catch(() => {});
    throw error;
  }
}

function parseModeMask(mask: unknown): number {
  if (mask === undefined) return DEFAULT_EXPORT_MODE_MASK;
  if (typeof mask === "number" && Number.isInteger(mask) && mask >= 0 && mask <= 0o777) return mask;
  throw new SandboxConfigurationError(
    `Cannot ${ACTION}: options.modeMask must be an integer from 0 to 0o777 (permission bits; 0o755 is the default, 0o777 keeps the guest's write bits)`,
  );
}

/** Creates the temporary sibling; a missing (or non-directory) parent is a caller error. */
async function makeTemporary(temporary: string, hostPath: string): Promise<void> {
  try {
    await mkdir(temporary, { mode: 0o700 });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw denied(error, hostPath);
    throw parentError(hostPath, error);
  }
}

/**
 * A Deno permission denial as a configuration error naming the flag (for the parent of
 * `hostPath`, where the temporary sibling is made); anything else unchanged.
 */
function denied(error: unknown, hostPath: string): unknown {
  const denial = denoPermissionDenial(error);
  if (!denial) return error;
  return new SandboxConfigurationError(`Cannot ${ACTION}: ${denialReason(denialOfDirectory(denial, dirname(hostPath)))}`, { cause: error });
}

function parentError(hostPath: string, cause: unknown): SandboxConfigurationError {
  return new SandboxConfigurationError(`Cannot ${ACTION}: the parent of '${hostPath}' is missing or not a directory`, { cause });
}

async function assertAbsent(path: string): Promise<void> {
  try {
    await lstat(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ENOENT") return;
    if (code === "ENOTDIR") throw parentError(path, error);
    throw denied(error, path);
  }
  throw new SandboxConflictError(`Cannot ${ACTION}: '${path}' already exists`);
}

/** Checks that `entries` is a stream or an async iterable, without reading it. */
function checkEntries(entries: unknown): void {
  if (entries instanceof ReadableStream) return;
  if (entries !== null && typeof entries === "object" && typeof (entries as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function") return;
  throw new SandboxConfigurationError(`Cannot ${ACTION}: entries must be a ReadableStream or an async iterable`);
}

/** Releases unread entries: cancels a stream, returns an async iterable's iterator. */
async function discard(entries: ReadableStream<SandboxExportEntry> | AsyncIterable<SandboxExportEntry>, reason: unknown): Promise<void> {
  try {
    if (entries instanceof ReadableStream) await entries.cancel(reason);
    else await entries[Symbol.asyncIterator]().return?.(undefined);
  } catch {
    // a locked stream or a failing iterator: nothing more this helper can release
  }
}

/** An async iterator over either input (a stream is cancelled by `return()`). */
function iterate(entries: ReadableStream<SandboxExportEntry> | AsyncIterable<SandboxExportEntry>): AsyncIterator<SandboxExportEntry> {
  return entries instanceof ReadableStream ? entries.values() : entries[Symbol.asyncIterator]();
}

/** Where an entry goes below the target, or `""` for the target itself. */
function placeOf(path: string, base: string | undefined): string {
  if (base === undefined) return path;
  if (path === base) return "";
  if (path.startsWith(`${base}/`)) return path.slice(base.length + 1);
  throw new SandboxConfigurationError(`Cannot ${ACTION}: entry '${path}' is outside base '${base}'`);
}

async function writeEntries(
  iterator: AsyncIterator<SandboxExportEntry>,
  target: string,
  base: string | undefined,
  modeMask: number,
): Promise<SandboxTransferReceipt> {
  const directories: Placed[] = [];
  let files = 0;
  let bytes = 0;
  for (let result = await iterator.next(); !result.done; result = await iterator.next()) {
    const entry = result.value;
    const path = parseSandboxRelativePath(entry?.path, "entry.path");
    const place = placeOf(path, base);
    const hostFile = place === "" ? target : join(target, place);
    files += 1;
    if (entry.type === "directory") {
      await entry.body?.cancel().catch(() => {});
      if (place !== "") await mkdir(hostFile, { recursive: true, mode: 0o755 });
      directories.push({ path: place, mode: entry.mode, mtime: entry.mtime });
      continue;
    }
    if (entry.type !== "file" || place === "") {
      await entry.body?.cancel().catch(() => {});
      throw new SandboxConfigurationError(
        place === "" ? `Cannot ${ACTION}: base '${base}' is a file, not a directory` : `Cannot ${ACTION}: entry '${path}' is neither a file nor a directory`,
      );
    }
    await mkdir(dirname(hostFile), { recursive: true, mode: 0o755 });
    bytes += await writeFile(hostFile, entry.body);
    await chmod(hostFile, entry.mode & modeMask);
    await utimes(hostFile, entry.mtime, entry.mtime);
  }
  // Deepest first, so that a directory's time is set after its contents changed it and a
  // read-only directory is closed only once everything below it exists.
  directories.sort((a, b) => depth(b.path) - depth(a.path));
  for (const directory of directories) {
    const hostDirectory = directory.path === "" ? target : join(target, directory.path);
    await chmod(hostDirectory, directory.mode & modeMask);
    await utimes(hostDirectory, directory.mtime, directory.mtime);
  }
  return Object.freeze({ files, bytes });
}

function depth(path: string): number {
  if (path === "") return 0;
  let count = 1;
  for (let at = path.indexOf("/"); at !== -1; at = path.indexOf("/", at + 1)) count += 1;
  return count;
}

/** Creates `path` exclusively and writes the body into it; the byte count. */
async function writeFile(path: string, body: ReadableStream<Uint8Array>): Promise<number> {
  const handle = await open(path, "wx", 0o600);
  let written = 0;
  try {
    for await (const chunk of body) {
      let offset = 0;
      while (offset < chunk.length) {
        const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
        offset += bytesWritten;
      }
      written += chunk.length;
    }
  } finally {
    await handle.close();
  }
  return written;
}

/** Removes a tree this helper created, first making its directories writable again. */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
    return;
  } catch {
    // a read-only directory inside; open them up and try again
  }
  const open = async (directory: string): Promise<void> => {
    await chmod(directory, 0o700).catch(() => {});
    const children = await readdir(directory, { withFileTypes: true }).catch(() => []);
    for (const child of children) if (child.isDirectory()) await open(join(directory, child.name));
  };
  await open(path);
  await rm(path, { recursive: true, force: true });
}
