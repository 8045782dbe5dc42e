/**
 * Strict, incremental tar (ustar + local PAX) reading and writing over Web Streams.
 *
 * {@linkcode readTar} is the security boundary for archives that leave a container: it
 * accepts regular files and directories only and rejects anything it does not fully
 * understand with a {@linkcode TarError} and a stable {@linkcode TarErrorCode}.
 * {@linkcode writeTar} produces archives that reader accepts.
 *
 * Decisions of the reader (see {@linkcode TarErrorCode} for every rejection):
 * - The checksum is the unsigned byte sum only; the historic signed sum is refused.
 * - Numeric fields are octal digits after optional spaces, ended by NUL or space or by the
 *   end of the field (so a 12-digit size of 8 GiB reports `size_limit`); base-256 is refused.
 * - `mode` keeps the permission bits (`& 0o7777`); the type flag alone decides the type.
 * - PAX records are local only, of a fixed allow-list; `mtime`, `uid`, `gid` and `path`
 *   override the header, the other allowed keys are validated and ignored.
 * - Asking for the next entry skips an unread body (its stream errors with
 *   `entry_skipped`) instead of waiting for it, so a loop that ignores bodies cannot hang.
 * - Past the in-memory path bound, duplicates and conflicts across spilled runs are found
 *   by an external merge at the end of the archive: the entry stream errors instead of
 *   closing. Entries are provisional until the stream closes.
 * - Source errors propagate unchanged; no timer is applied (the caller bounds time).
 *
 * @example Round trip
 * ```ts
 * import { readTar, writeTar } from "./mod.ts";
 *
 * const archive = writeTar([{ path: "empty", type: "file", mode: 0o644, mtime: 0, size: 0 }]);
 * for await (const entry of readTar(archive)) console.log(entry.path); // empty
 * ```
 *
 * @module
 */
export type { TarEntry } from "./entry.ts";
export { TarError, type TarErrorCode, type TarErrorOptions } from "./error.ts";
export { readTar, type ReadTarOptions } from "./read_tar.ts";
export { type TarWriterEntry, writeTar } from "./write_tar.ts";
