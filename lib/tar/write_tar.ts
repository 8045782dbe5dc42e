import { z } from "zod";
import { tarError } from "./_fail.ts";
import { encodeHeader, paxPathRecord, splitUstarPath } from "./_header_write.ts";
import { BLOCK, MAX_CHUNK, MAX_ENTRY_SIZE, MAX_PATH_BYTES, paddingOf } from "./limits.ts";
import { utf8ByteLength } from "../streams/utf8.ts";
import { checkPath } from "./_path.ts";
import type { TarError, TarErrorOptions } from "./error.ts";

/**
 * One regular file, directory or symbolic link for {@linkcode writeTar}.
 *
 * @example
 * ```ts
 * import type { TarWriterEntry } from "./mod.ts";
 *
 * const bytes = new TextEncoder().encode("{}\n");
 * const entry: TarWriterEntry = {
 *   path: "config/settings.json",
 *   type: "file",
 *   mode: 0o600,
 *   mtime: Math.floor(Date.now() / 1000),
 *   uid: 1000,
 *   gid: 1000,
 *   size: bytes.length,
 *   body: new Blob([bytes]).stream(),
 * };
 * console.log(entry.size); // 3
 * ```
 */
export interface TarWriterEntry {
  /**
   * Relative `/`-separated path, checked by the rules {@linkcode readTar} applies: no
   * empty, `.` or `..` segment, no NUL or backslash, at most 4096 UTF-8 bytes; a trailing
   * `/` only on a directory (it is added for directories anyway).
   */
  readonly path: string;
  /** Entry type (`"symlink"`: a symbolic link, ustar typeflag `2`). */
  readonly type: "file" | "directory" | "symlink";
  /**
   * A symbolic link's target, written as it is (never resolved): 1 to 4096 UTF-8 bytes,
   * no NUL; one longer than 100 bytes or not ASCII goes in a PAX `linkpath` record. Only on
   * a symlink, which has size 0 and no body.
   * @default undefined
   */
  readonly target?: string;
  /** Permission bits, 0 to 0o7777. */
  readonly mode: number;
  /** Modification time in whole seconds since the epoch, 0 to 8589934591. */
  readonly mtime: number;
  /**
   * Owner user id, 0 to 2097151 (seven octal digits).
   * @default 0
   */
  readonly uid?: number;
  /**
   * Owner group id, 0 to 2097151.
   * @default 0
   */
  readonly gid?: number;
  /** Exact body length in bytes, 0 to 8 GiB − 1; 0 for directories. */
  readonly size: number;
  /**
   * The file's bytes, exactly `size` of them; may be omitted when `size` is 0. Directories
   * take none. The writer reads it to its end, or cancels it when writing fails.
   * @default undefined
   */
  readonly body?: ReadableStream<Uint8Array>;
}

const MAX_ID = 0o7777777;
const entrySchema = z.object({
  path: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  target: z.string().min(1).max(MAX_PATH_BYTES).refine((target) => !target.includes("\0") && target.isWellFormed() && utf8ByteLength(target) <= MAX_PATH_BYTES)
    .optional(),
  mode: z.number().int().min(0).max(0o7777),
  mtime: z.number().int().min(0).max(0o77777777777),
  uid: z.number().int().min(0).max(MAX_ID).optional(),
  gid: z.number().int().min(0).max(MAX_ID).optional(),
  size: z.number().int().min(0),
  body: z.custom<ReadableStream<Uint8Array>>((value) => value instanceof ReadableStream).optional(),
});

const encoder = new TextEncoder();

function writeError(code: TarError["code"], reason: string, options: TarErrorOptions): TarError {
  return tarError("write archive", code, reason, options);
}

/**
 * Writes entries as a ustar archive. A path that is not ASCII or does not fit the ustar
 * `name` (100 bytes) and `prefix` (155 bytes) fields gets a PAX `x` header with a single
 * `path` record; a symlink's target that is not ASCII or longer than 100 bytes goes in a
 * `linkpath` record of the same header. The archive ends with two zero blocks (no padding to a 10240-byte record).
 *
 * The stream is pull-based (high-water mark 0): the next entry and the next body chunk are
 * read only when the consumer asks; chunks are at most 64 KiB. Duplicate paths and
 * file/directory conflicts are not checked here ({@linkcode readTar} rejects them).
 * Cancelling the stream cancels the current body and closes the entry iterator.
 *
 * @param entries Files and directories, in archive order.
 * @returns The archive bytes. The stream errors with a {@linkcode TarError}:
 * `invalid_entry` (a field out of range or of the wrong type, a body on a directory, a
 * body chunk that is not a `Uint8Array`), `path_invalid`, `path_length`, `size_limit`
 * (above 8 GiB − 1), `body_length` (a body shorter or longer than `size`); errors of the
 * iterator and of the bodies propagate unchanged. Nothing is thrown synchronously.
 *
 * @example Archive one file
 * ```ts
 * import { writeTar } from "./mod.ts";
 *
 * const bytes = new TextEncoder().encode("hello\n");
 * const archive = writeTar([
 *   { path: "docs", type: "directory", mode: 0o755, mtime: 0, size: 0 },
 *   { path: "docs/hello.txt", type: "file", mode: 0o644, mtime: 0, size: bytes.length,
 *     body: new Blob([bytes]).stream() },
 * ]);
 * console.log((await new Response(archive).arrayBuffer()).byteLength); // 2560
 * ```
 */
export function writeTar(
  entries: AsyncIterable<TarWriterEntry> | Iterable<TarWriterEntry>,
): ReadableStream<Uint8Array> {
  let current: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const chunks = produce(entries, (reader) => {
    current = reader;
  });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await current?.cancel(reason).catch(() => {});
      await chunks.return(undefined);
    },
  }, { highWaterMark: 0 });
}

/** The archive's chunks; reports each body reader so that a cancel can reach it. */
async function* produce(
  entries: AsyncIterable<TarWriterEntry> | Iterable<TarWriterEntry>,
  onBody: (reader: ReadableStreamDefaultReader<Uint8Array> | undefined) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  let offset = 0;
  for await (const input of entries) {
    const where = { offset, path: typeof input?.path === "string" ? input.path : undefined };
    let handedOver = false;
    try {
      const parsed = entrySchema.safeParse(input);
      if (!parsed.success) {
        throw writeError("invalid_entry", `invalid entry: ${z.prettifyError(parsed.error)}`, { ...where, cause: parsed.error });
      }
      const entry = parsed.data;
      const path = checkPath(entry.path, entry.type === "directory" ? "directory" : "file");
      if (typeof path !== "string") throw writeError(path.code, path.reason, where);
      if (entry.size > MAX_ENTRY_SIZE) {
        throw writeError("size_limit", `size ${entry.size} above ${MAX_ENTRY_SIZE} bytes`, where);
      }
      if (entry.type !== "file" && (entry.size !== 0 || entry.body !== undefined)) {
        throw writeError("invalid_entry", `${entry.type} with a size or a body`, where);
      }
      if ((entry.type === "symlink") !== (entry.target !== undefined)) {
        throw writeError("invalid_entry", entry.type === "symlink" ? "symlink without a target" : `${entry.type} with a target`, where);
      }
      const stored = entry.type === "directory" ? `${path}/` : path;
      const fields = { mode: entry.mode, uid: entry.uid ?? 0, gid: entry.gid ?? 0, mtime: entry.mtime };
      const placed = splitUstarPath(stored);
      // deno-lint-ignore no-control-regex
      const shortTarget = entry.target !== undefined && /^[\x01-\x7f]{1,100}$/.test(entry.target);
      const records = [
        ...(placed === undefined ? [paxPathRecord(stored)] : []),
        ...(entry.target !== undefined && !shortTarget ? [paxPathRecord(entry.target, "linkpath")] : []),
      ];
      if (records.length > 0) {
        const length = records.reduce((sum, record) => sum + record.length, 0);
        const pax = new Uint8Array(BLOCK + length + paddingOf(length));
        pax.set(encodeHeader({ ...fields, name: encoder.encode("PaxHeader"), size: length, typeflag: "x" }));
        let at = BLOCK;
        for (const record of records) {
          pax.set(record, at);
          at += record.length;
        }
        offset += pax.length;
        yield pax;
      }
      const named = placed ?? { name: encoder.encode(standIn(path, entry.type)) };
      const linkname = entry.target === undefined ? undefined : encoder.encode(shortTarget ? entry.target : standIn(entry.target, "symlink"));
      const typeflag = entry.type === "file" ? "0" : entry.type === "symlink" ? "2" : "5";
      offset += BLOCK;
      yield encodeHeader({ ...fields, ...named, linkname, size: entry.size, typeflag });
      if (entry.type === "file") {
        handedOver = true;
        yield* body(entry.body, entry.size, where, onBody);
        const padding = paddingOf(entry.size);
        offset += entry.size + padding;
        if (padding > 0) yield new Uint8Array(padding);
      }
    } finally {
      const stream = input?.body;
      if (!handedOver && stream instanceof ReadableStream && !stream.locked) await stream.cancel().catch(() => {});
    }
  }
  yield new Uint8Array(2 * BLOCK);
}

/**
 * The ustar `name` of an entry whose path is in a PAX record, for readers without PAX: its
 * last segment in printable ASCII, at most 99 bytes (never a traversal).
 */
function standIn(path: string, type: "file" | "directory" | "symlink"): string {
  const last = path.slice(path.lastIndexOf("/") + 1).replace(/[^\x20-\x7e]/g, "_").slice(0, 99);
  return type === "directory" ? `${last}/` : last;
}

/** Chunks (≤ 64 KiB) of a body that must hold exactly `size` bytes. */
async function* body(
  stream: ReadableStream<Uint8Array> | undefined,
  size: number,
  where: TarErrorOptions,
  onBody: (reader: ReadableStreamDefaultReader<Uint8Array> | undefined) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  const short = () => writeError("body_length", `body shorter than its size ${size}`, where);
  const long = () => writeError("body_length", `body longer than its size ${size}`, where);
  if (stream === undefined) {
    if (size > 0) throw short();
    return;
  }
  const reader = stream.getReader();
  onBody(reader);
  let left = size;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        if (left > 0) throw short();
        return;
      }
      if (!(value instanceof Uint8Array)) {
        throw writeError("invalid_entry", "body chunk is not a Uint8Array", where);
      }
      if (value.length > left) throw long();
      left -= value.length;
      for (let at = 0; at < value.length; at += MAX_CHUNK) {
        yield value.subarray(at, at + MAX_CHUNK);
      }
    }
  } catch (error) {
    if (!finished) await reader.cancel(error).catch(() => {});
    throw error;
  } finally {
    onBody(undefined);
    reader.releaseLock();
  }
}
