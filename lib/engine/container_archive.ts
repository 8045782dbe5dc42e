/**
 * The Engine's container archive endpoints (Docker Engine API v1.44–v1.52, "Container"
 * group): `HEAD` (path stat), `GET` (a tar of one path) and `PUT` (extract a tar).
 *
 * Facts measured on the build machines (Engine 28.5):
 * - `HEAD …/archive?path=P` answers 200 with `X-Docker-Container-Path-Stat`, base64 of JSON
 *   `{name,size,mode,mtime,linkTarget}` where `mode` is a Go `os.FileMode`; the last
 *   segment of `P` is not followed (a symlink reports itself) but earlier segments are, so
 *   each ancestor has to be checked by itself. A missing path answers 404.
 * - `GET` names a regular file by its basename and a directory `dir/` then `dir/…`; a
 *   hardlinked file selected by itself comes out as regular bytes, inside a tree as a link
 *   record (type `1`). It works on a created, never-started container.
 * - `PUT` extracts as the archive arrives and is not atomic: entries before an error stay
 *   (the one in flight truncated, still owned by root); it creates device nodes, FIFOs and
 *   symlinks when asked, and missing parent directories as `root:root 0755`. Ownership in
 *   the headers is kept.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import { DockerEngineError } from "./errors.ts";
import { quotePath } from "../tar/quote_path.ts";

/** Go `os.ModeDir`. */
const MODE_DIR = 0x80000000;
/** Go `os.ModeSymlink`. */
const MODE_SYMLINK = 0x08000000;
/** Go `os.ModeType`: dir, symlink, named pipe, socket, device, char device, irregular. */
const MODE_TYPE = 0x80000000 | 0x08000000 | 0x02000000 | 0x01000000 | 0x04000000 | 0x00200000 | 0x00080000;

/**
 * Bits 9–18, which no Go `os.FileMode` uses (its permission bits are 0–8, its type and
 * special bits 19–31). A Unix `st_mode`'s file type (`S_IFMT`, 0o170000) and its setuid,
 * setgid and sticky bits (0o7000) all fall here: a mode with any of them set is a Unix
 * mode, not the `os.FileMode` the Engine sends, and would classify as a regular file.
 */
const NOT_FILE_MODE_BITS = 0x0007fe00;

/** The header carrying the stat of a container path. */
export const PATH_STAT_HEADER = "X-Docker-Container-Path-Stat";

const pathStatSchema = z.looseObject({
  name: z.string(),
  size: z.number().int(),
  mode: z.number().int().min(0).max(0xffffffff),
  mtime: z.string(),
  linkTarget: z.string(),
});

/** A container path's stat from the Engine. */
export type ContainerPathStat = z.infer<typeof pathStatSchema>;

/** What a Go `os.FileMode` says a path is. */
export type ContainerPathKind = "directory" | "file" | "symlink" | "other";

/**
 * Classify a Go `os.FileMode`: a regular file has no type bit; a directory only the
 * directory bit.
 *
 * @param mode The `mode` of a path stat (uint32).
 * @returns The kind.
 */
export function containerPathKind(mode: number): ContainerPathKind {
  const type = (mode & MODE_TYPE) >>> 0;
  if (type === 0) return "file";
  if (type === MODE_DIR >>> 0) return "directory";
  if (type === MODE_SYMLINK) return "symlink";
  return "other";
}

/**
 * Decode `X-Docker-Container-Path-Stat` (base64 of JSON).
 *
 * @param value The header value.
 * @param path The guest path that was stat'ed, for messages.
 * @returns The validated stat.
 * @throws {DockerEngineError} `invalid_body` when it is not base64 JSON of the documented
 * shape, or when its `mode` is not a Go `os.FileMode` (a Unix `st_mode` such as `0o40755`,
 * with `S_IFMT` or set-id bits in 0o1777000, which would otherwise read as a regular file)
 */
export function decodePathStat(value: string, path: string): ContainerPathStat {
  let json: unknown;
  try {
    if (!/^[A-Za-z0-9+/]*={0,2}$/u.test(value)) throw new Error("not base64");
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new DockerEngineError("invalid_body", `Cannot read path stat of ${quotePath(path)}: the ${PATH_STAT_HEADER} header is not base64 JSON`, { cause });
  }
  const parsed = pathStatSchema.safeParse(json);
  if (!parsed.success) {
    throw new DockerEngineError("invalid_body", `Cannot read path stat of ${quotePath(path)}: the ${PATH_STAT_HEADER} header does not match its schema`, {
      cause: parsed.error,
    });
  }
  const stray = (parsed.data.mode & NOT_FILE_MODE_BITS) >>> 0;
  if (stray !== 0) {
    throw new DockerEngineError(
      "invalid_body",
      `Cannot read path stat of ${quotePath(path)}: the ${PATH_STAT_HEADER} header's mode 0o${
        parsed.data.mode.toString(8)
      } sets bits 0o${stray.toString(8)} that a Go os.FileMode never has (a Unix st_mode's file type or set-id bits), so the kind of the path is unknown; the Engine, or a proxy in front of it, must send the Go os.FileMode (a directory is 0o20000000755, not 0o40755)`,
    );
  }
  return parsed.data;
}

/** Options of the calls in this file. */
export interface ArchiveCallOptions {
  /** Deadline of the whole exchange, milliseconds. @default undefined (none for streams, 30 s for `HEAD`) */
  readonly timeoutMs?: number;
  /** Aborts the exchange at any stage. */
  readonly signal?: AbortSignal;
}

/**
 * `HEAD /containers/{id}/archive?path=P`.
 *
 * @returns The stat, or `undefined` for 404
 * @throws {DockerEngineError} by status, or `invalid_body` for a missing or bad header
 */
export async function statContainerPath(
  engine: DockerEngine,
  containerId: string,
  path: string,
  options: ArchiveCallOptions = {},
): Promise<ContainerPathStat | undefined> {
  const reply = await engine.request("HEAD", `/containers/${encodeURIComponent(containerId)}/archive`, {
    action: "stat container path",
    query: { path },
    expect: [200, 404],
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  if (reply.status === 404) return undefined;
  const header = reply.headers.get(PATH_STAT_HEADER);
  if (header === null) {
    throw new DockerEngineError("invalid_body", `Cannot stat container path: the reply has no ${PATH_STAT_HEADER} header`);
  }
  return decodePathStat(header, path);
}

/**
 * `GET /containers/{id}/archive?path=P`: the tar of one path, streamed.
 *
 * @returns The archive bytes; the caller reads them to the end or cancels them
 * @throws {DockerEngineError} by status (the reply body's message is read, at most 16 KiB)
 * @throws {DockerEngineTransportError} on transport faults
 */
export async function getContainerArchive(
  engine: DockerEngine,
  containerId: string,
  path: string,
  options: ArchiveCallOptions = {},
): Promise<ReadableStream<Uint8Array>> {
  const response = await engine.stream("GET", `/containers/${encodeURIComponent(containerId)}/archive`, {
    query: { path },
    signal: options.signal,
  });
  if (response.status !== 200) throw await engine.failure(response, "read container archive");
  return response.body;
}

/**
 * `PUT /containers/{id}/archive?path=P&noOverwriteDirNonDir=true`: extract a tar into
 * directory `P`, sent with `Content-Length` (bytes) or chunked (a stream). Resolves once the
 * Engine answered 200, which it does after reading the whole archive. `onBodyChunkSent` is
 * told of each chunk of a stream body once the kernel has all of its bytes.
 *
 * @throws {DockerEngineError} by status
 * @throws {DockerEngineTransportError} on transport faults, or `aborted` when `body` fails
 */
export async function putContainerArchive(
  engine: DockerEngine,
  containerId: string,
  path: string,
  body: Uint8Array | ReadableStream<Uint8Array>,
  options: ArchiveCallOptions & { readonly onBodyChunkSent?: (chunk: Uint8Array) => void } = {},
): Promise<void> {
  const response = await engine.stream("PUT", `/containers/${encodeURIComponent(containerId)}/archive`, {
    query: { path, noOverwriteDirNonDir: true },
    body,
    contentType: "application/x-tar",
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    onBodyChunkSent: options.onBodyChunkSent,
  });
  if (response.status !== 200) throw await engine.failure(response, "write container archive");
  await response.body.cancel();
}
