/**
 * {@linkcode importDirectory}: a host directory as import entries, without following links.
 * Symbolic links are refused, skipped, or kept as links when they stay inside the tree.
 *
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { isAbsolute, join, sep } from "node:path";
import { SandboxConfigurationError, SandboxConflictError } from "../../sandbox/errors.ts";
import type { SandboxImportEntry } from "../../sandbox/transfer.ts";
import { pathDefect } from "../../internal/path_defects.ts";
import { linkTargetDefect } from "../../sandbox/transfer_input.ts";
import { markPoolable, READ_BUFFER_BYTES, type ReadBufferPool } from "./_read_buffers.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

const ACTION = "import directory";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The `lstat` fields this helper relies on. */
interface HostStat {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

/**
 * What {@linkcode importDirectory} does with a symbolic link below its root.
 *
 * - `"refuse"`: the walk fails on the first link (`SandboxConfigurationError`).
 * - `"skip"`: links are left out (and never read); the rest of the tree is imported.
 * - `"inside"`: a link is imported as a symlink with the same target when the target is
 *   relative, names an entry strictly inside the tree from the link's own directory (leading
 *   `..` segments only), and the host resolves the whole chain (`realpath`) to an existing
 *   entry inside the tree; any other link — absolute, leaving the tree, through a link that
 *   leaves it, or dangling — fails the walk with `SandboxConfigurationError` naming its
 *   path. This is what an npm-installed tree needs (`node_modules/.bin/x -> ../pkg/cli.js`).
 *
 * Either way a link is never followed to read what it points at: only its target text is
 * read, and `realpath` checks where it leads.
 *
 * @example
 * ```ts
 * import type { ImportDirectoryLinks } from "./import_directory.ts";
 *
 * const links: ImportDirectoryLinks = "inside";
 * ```
 */
export type ImportDirectoryLinks = "refuse" | "skip" | "inside";

/**
 * Options of {@linkcode importDirectory}.
 *
 * @example
 * ```ts
 * import type { ImportDirectoryOptions } from "./import_directory.ts";
 *
 * const options: ImportDirectoryOptions = { links: "skip" };
 * ```
 */
export interface ImportDirectoryOptions {
  /**
   * What a symbolic link below the root becomes (see {@linkcode ImportDirectoryLinks}). The
   * root itself being a link always fails.
   *
   * @default {"refuse"}
   */
  readonly links?: ImportDirectoryLinks;
}

/**
 * Walks a host directory (with `node:fs/promises`, on Deno, Bun and Node) and yields its
 * contents as entries for `importTree`: every directory before what it holds, names in
 * sorted order, paths relative to `hostPath` (the directory itself is not an entry), modes
 * `& 0o7777`, modification times in whole seconds. Ownership is not read (the import sets
 * it).
 *
 * Links are never followed: by default a symbolic link anywhere below `hostPath`, or
 * `hostPath` itself being one, fails the walk (`options.links` skips links below the root or
 * keeps those inside the tree as links); so do sockets, FIFOs and devices, names that are not valid
 * UTF-8, and paths `importTree` would refuse (a backslash or control character, a name over
 * 255 bytes, a path over 4096 bytes). The tree is checked once completely before the first
 * entry is yielded, so such a tree fails before anything is sent (a change between that
 * check and the second, yielding walk is caught by the second walk). Files are opened only
 * when their body is read (one at a time, `O_NOFOLLOW`), checked to be the file that was
 * listed, and must not change until they were read: a different size, modification time or
 * change time when the file is opened or after its last byte fails the body (a rewrite is
 * seen as far as the file system's clock resolves it).
 *
 * The walks are lazy and streaming: memory holds the sorted names of the directories on the
 * current path, not the tree.
 *
 * @param hostPath Absolute path of an existing directory on the host.
 * @param options What links become.
 * @returns The entries (each iteration walks afresh).
 * @throws {SandboxConfigurationError} At once for a `hostPath` that is not an absolute path
 *   or an unknown `options.links`. While iterating: `configuration` for a symlink (`links`
 *   `"refuse"`; with `"inside"` one that is absolute, leaves the tree or dangles), a special file, a name that is not UTF-8,
 *   a path `importTree` would refuse or the host cannot name (`ENAMETOOLONG`), or a
 *   `hostPath` that is missing, unreadable or not a directory; a body stream errors with
 *   `SandboxConflictError` (`conflict`) when its file changed since it was listed. Other file
 *   system errors below the root (`EACCES`, …) propagate unchanged.
 *
 * @example Import a project directory
 * ```ts ignore
 * // ignore: needs a running sandbox (`sandbox` from `reservation.start()`)
 * import { importDirectory } from "@agentcell/docker";
 *
 * const receipt = await sandbox.importTree(importDirectory("/home/me/project"), {
 *   quota: { bytes: 512 * 1024 * 1024, files: 20_000 },
 * });
 * console.log(`${receipt.files} entries, ${receipt.bytes} bytes`);
 * ```
 */
export function importDirectory(hostPath: string, options: ImportDirectoryOptions = {}): AsyncIterable<SandboxImportEntry> {
  if (typeof hostPath !== "string" || !isAbsolute(hostPath) || hostPath.includes("\0")) {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: hostPath must be an absolute path`);
  }
  const links = options?.links ?? "refuse";
  if (links !== "refuse" && links !== "skip" && links !== "inside") {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: options.links must be "refuse", "skip" or "inside"`);
  }
  return { [Symbol.asyncIterator]: () => walk(hostPath, links) };
}

/** One directory being walked: its relative path and its sorted child names. */
interface Level {
  readonly path: string;
  readonly names: readonly string[];
  next: number;
}

async function* walk(root: string, links: ImportDirectoryLinks): AsyncGenerator<SandboxImportEntry, void, undefined> {
  for await (const _ of tree(root, false, links)) { /* the first walk only checks */ }
  yield* tree(root, true, links);
}

/** One walk of the tree; `bodies` gives files their body streams (the yielding walk). */
async function* tree(root: string, bodies: boolean, links: ImportDirectoryLinks): AsyncGenerator<SandboxImportEntry, void, undefined> {
  let top: HostStat;
  try {
    top = await lstat(root) as HostStat;
  } catch (cause) {
    const denial = denoPermissionDenial(cause);
    const reason = denial ? denialReason(denial) : `'${root}' cannot be read (${(cause as { code?: string }).code ?? "error"})`;
    throw new SandboxConfigurationError(`Cannot ${ACTION}: ${reason}`, { cause });
  }
  if (top.isSymbolicLink()) throw linkError(root);
  if (!top.isDirectory()) throw new SandboxConfigurationError(`Cannot ${ACTION}: '${root}' is not a directory`);
  const stack: Level[] = [{ path: "", names: await names(root), next: 0 }];
  while (stack.length > 0) {
    const level = stack[stack.length - 1];
    if (level.next >= level.names.length) {
      stack.pop();
      continue;
    }
    const name = level.names[level.next++];
    const path = level.path === "" ? name : `${level.path}/${name}`;
    const hostFile = join(root, path);
    // The path importTree will check, checked here already so the first walk catches it.
    const defect = pathDefect(path, false);
    if (defect !== undefined) {
      throw new SandboxConfigurationError(`Cannot ${ACTION}: '${hostFile}' cannot be imported: its path ${defect}`);
    }
    let stat: HostStat;
    try {
      stat = await lstat(hostFile) as HostStat;
    } catch (cause) {
      if ((cause as { code?: string }).code !== "ENAMETOOLONG") throw cause;
      throw new SandboxConfigurationError(`Cannot ${ACTION}: '${hostFile}' is longer than the host allows (ENAMETOOLONG)`, { cause });
    }
    const mode = stat.mode & 0o7777;
    const mtime = Math.max(0, Math.floor(stat.mtimeMs / 1000));
    if (stat.isSymbolicLink()) {
      if (links === "refuse") throw linkError(hostFile);
      if (links === "inside") yield { path, type: "symlink", target: await insideTarget(root, path, hostFile), mode: 0o777, mtime, size: 0 };
      continue;
    }
    if (stat.isDirectory()) {
      yield { path, type: "directory", mode, mtime, size: 0 };
      stack.push({ path, names: await names(hostFile), next: 0 });
    } else if (stat.isFile()) {
      yield { path, type: "file", mode, mtime, size: stat.size, body: bodies ? fileBody(hostFile, stat) : undefined };
    } else {
      throw new SandboxConfigurationError(`Cannot ${ACTION}: '${hostFile}' is a special file (socket, FIFO or device); only regular files and directories are imported`);
    }
  }
}

function linkError(path: string): SandboxConfigurationError {
  return new SandboxConfigurationError(
    `Cannot ${ACTION}: '${path}' is a symbolic link; links are never followed (options.links "skip" leaves them out, "inside" keeps those that stay inside the tree)`,
  );
}

/**
 * The target of the link at `hostFile` (relative path `path` below `root`), when it stays
 * inside the tree lexically and the host resolves it to an existing entry inside the tree.
 *
 * @throws {SandboxConfigurationError} naming the link, its target and why it is refused
 */
async function insideTarget(root: string, path: string, hostFile: string): Promise<string> {
  const raw = await readlink(hostFile, { encoding: "buffer" });
  let target: string;
  try {
    target = utf8.decode(raw);
  } catch {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: the target of the symbolic link '${hostFile}' is not valid UTF-8`);
  }
  const refuse = (reason: string, cause?: unknown) =>
    new SandboxConfigurationError(
      `Cannot ${ACTION}: '${hostFile}' is a symbolic link to ${JSON.stringify(target)} that ${reason}; ` +
        'only links that stay inside the tree are kept (options.links "skip" leaves links out)',
      { cause },
    );
  const defect = linkTargetDefect(path, target);
  if (defect !== undefined) throw refuse(`is refused: its target ${defect}`);
  let resolved: string;
  let top: string;
  try {
    [resolved, top] = await Promise.all([realpath(hostFile), realpath(root)]);
  } catch (cause) {
    throw refuse(`does not resolve on the host (${(cause as { code?: string }).code ?? "error"}): a dangling link is not imported`, cause);
  }
  if (!resolved.startsWith(top.endsWith(sep) ? top : `${top}${sep}`)) throw refuse(`leads out of the tree through another link (to '${resolved}')`);
  return target;
}

/** A directory's child names, sorted, each checked to be valid UTF-8. */
async function names(directory: string): Promise<string[]> {
  const raw = await readdir(directory, { encoding: "buffer" });
  const decoded = raw.map((bytes) => {
    try {
      return utf8.decode(bytes);
    } catch {
      throw new SandboxConfigurationError(`Cannot ${ACTION}: a name in '${directory}' is not valid UTF-8`);
    }
  });
  return decoded.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * A file's bytes, opened on the first read; exactly the listed size or an error. Reads go
 * into fresh buffers, or into the pool of an import that adopted the body (`adoptPool`).
 */
function fileBody(path: string, listed: HostStat): ReadableStream<Uint8Array> {
  let handle: FileHandle | undefined;
  let left = listed.size;
  let pool: ReadBufferPool | undefined;
  const changed = (what: string) =>
    new SandboxConflictError(`Cannot ${ACTION}: '${path}' changed while it was imported (${what})`);
  const close = async () => {
    const open = handle;
    handle = undefined;
    await open?.close().catch(() => {});
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (handle === undefined) {
          handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
          const now = await handle.stat();
          if (!now.isFile() || now.ino !== listed.ino || now.dev !== listed.dev) throw changed("it is another file now");
          if (now.mtimeMs !== listed.mtimeMs || now.ctimeMs !== listed.ctimeMs) throw changed("it was written after it was listed");
        }
        if (left === 0) {
          const { bytesRead } = await handle.read(new Uint8Array(1), 0, 1, null);
          // A rewrite that keeps the size shows in the times (ctime moves with every write).
          const now = await handle.stat();
          await close();
          if (bytesRead > 0) throw changed(`it grew past ${listed.size} bytes`);
          if (now.mtimeMs !== listed.mtimeMs || now.ctimeMs !== listed.ctimeMs) throw changed("it was written while it was read");
          controller.close();
          return;
        }
        const buffer = pool?.take() ?? new Uint8Array(Math.min(READ_BUFFER_BYTES, left));
        const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, left), null);
        if (bytesRead === 0) {
          pool?.putBack(buffer);
          throw changed(`it shrank below ${listed.size} bytes`);
        }
        left -= bytesRead;
        const piece = bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
        controller.enqueue(pool === undefined ? piece : pool.lend(piece));
      } catch (error) {
        await close();
        throw error;
      }
    },
    async cancel() {
      await close();
    },
  }, { highWaterMark: 0 });
  markPoolable(body, (adopted) => pool = adopted);
  return body;
}
