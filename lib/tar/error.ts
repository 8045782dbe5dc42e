/**
 * Stable machine-readable reasons a tar archive is refused by {@linkcode readTar},
 * {@linkcode writeTar} or {@linkcode TarPathSet}.
 *
 * Header and framing:
 * - `checksum`: the header checksum field is malformed or differs from the unsigned byte sum
 *   (checksum field counted as eight spaces; the historic signed sum is not accepted).
 * - `magic`: magic is not `ustar\0` with version `00` (GNU `ustar  \0` and v7 headers).
 * - `numeric_field`: a numeric field is not octal digits (leading spaces, then NUL/space
 *   terminated), including base-256 fields (first byte with the high bit set).
 * - `size_limit`: an entry size above 8 GiB − 1 (8589934591) bytes.
 * - `directory_size`: a directory header declares a non-zero size.
 * - `unsupported_type`: a type flag other than `0`, NUL (regular file) and `5` (directory).
 * - `padding`: a non-zero byte in the padding after a body or PAX record block.
 * - `truncated`: the source ends inside a header, a PAX record block, a body or its padding.
 * - `termination`: the source ends without two end-of-archive zero blocks, or one zero
 *   block is followed by a non-zero block.
 * - `trailing_data`: a non-zero byte after the two end-of-archive blocks.
 *
 * PAX extended headers:
 * - `pax_record`: a record breaks `"%d %s=%s\n"` (length prefix with leading zero or not
 *   covering the record exactly, missing `=`, empty key, invalid UTF-8, repeated key).
 * - `pax_value`: a value of an allowed key is not valid for that key (for example a
 *   non-decimal `uid`, an empty value or a NUL in `uname`).
 * - `pax_limit`: a PAX record block above 64 KiB.
 * - `pax_global`: a global (`g`) PAX header.
 * - `pax_unsupported_key`: a key outside `path`, `mtime`, `atime`, `ctime`, `uid`, `gid`,
 *   `uname`, `gname` (including `linkpath`, `SCHILY.*` and `LIBARCHIVE.*` keys).
 * - `pax_size_override`: a PAX `size` record.
 * - `pax_orphan`: a PAX header followed by another PAX header or by the end of the archive
 *   (followed by any other unsupported header, the code names that header's defect).
 *
 * Paths:
 * - `path_invalid`: an empty, absolute, `.`/`..` or empty-segment path, a NUL or backslash
 *   in it, invalid UTF-8, or a trailing `/` on a regular file.
 * - `path_length`: a path above 4096 bytes of UTF-8 (without a directory's trailing `/`).
 * - `duplicate_path`: the same path twice with the same type.
 * - `path_conflict`: a path used both as a file and as a directory (explicitly, or
 *   implicitly as the ancestor of another entry).
 * - `path_limit`: more paths than the in-memory bound and no spill directory.
 * - `spill_io`: reading, writing or removing a spill file failed (see `cause`).
 *
 * Streams and callers:
 * - `entry_skipped`: the body stream of an entry the caller moved past without reading.
 * - `cancelled`: the body stream of an entry whose archive stream was cancelled.
 * - `body_length`: a writer body shorter or longer than its declared size.
 * - `invalid_entry`: a writer entry that fails validation (see `cause`).
 * - `invalid_options`: options that fail validation (see `cause`).
 *
 * @example Branch on the code
 * ```ts
 * import type { TarErrorCode } from "./mod.ts";
 *
 * function isPathProblem(code: TarErrorCode): boolean {
 *   return code === "path_invalid" || code === "duplicate_path" || code === "path_conflict";
 * }
 * console.log(isPathProblem("checksum")); // false
 * ```
 */
export type TarErrorCode =
  | "checksum"
  | "magic"
  | "numeric_field"
  | "size_limit"
  | "directory_size"
  | "unsupported_type"
  | "padding"
  | "truncated"
  | "termination"
  | "trailing_data"
  | "pax_record"
  | "pax_value"
  | "pax_limit"
  | "pax_global"
  | "pax_unsupported_key"
  | "pax_size_override"
  | "pax_orphan"
  | "path_invalid"
  | "path_length"
  | "duplicate_path"
  | "path_conflict"
  | "path_limit"
  | "spill_io"
  | "entry_skipped"
  | "cancelled"
  | "body_length"
  | "invalid_entry"
  | "invalid_options";

/**
 * Details attached to a {@linkcode TarError}.
 *
 * @example
 * ```ts
 * import { TarError, type TarErrorOptions } from "./mod.ts";
 *
 * const options: TarErrorOptions = { path: "a/b", offset: 1024 };
 * const error = new TarError("duplicate_path", "Cannot read archive: duplicate path at offset 1024 (entry 'a/b')", options);
 * console.log(error.offset); // 1024
 * ```
 */
export interface TarErrorOptions {
  /**
   * Path of the entry concerned, as far as it is known (possibly the invalid path itself).
   * @default undefined
   */
  readonly path?: string;
  /**
   * Byte offset in the archive: of the header at fault for header and PAX errors; of the
   * entry's first header (its PAX header when it has one) for path errors, and of the later
   * entry for duplicates and conflicts; of the first offending byte for `padding`,
   * `trailing_data` and `termination`; of the end of the source for `truncated`; of the
   * entry's first header for writer errors.
   * @default undefined
   */
  readonly offset?: number;
  /**
   * Underlying error (a zod error, a file-system error).
   * @default undefined
   */
  readonly cause?: unknown;
}

/**
 * Error raised when a tar archive cannot be read or written.
 *
 * The message reads `"Cannot read archive: <reason> at offset N (entry 'x')"` (or
 * `"Cannot write archive: …"`); the offset and entry parts appear when known.
 *
 * @example Tell a refused archive apart from a transport failure
 * ```ts
 * import { readTar, TarError } from "./mod.ts";
 *
 * const source = new Blob([new Uint8Array(100)]).stream();
 * try {
 *   for await (const entry of readTar(source)) await entry.body.cancel();
 * } catch (error) {
 *   if (error instanceof TarError) console.log(error.code, error.offset); // truncated 100
 *   else throw error;
 * }
 * ```
 */
export class TarError extends Error {
  /** Always `"TarError"`. */
  override readonly name = "TarError";
  /** Stable reason, see {@linkcode TarErrorCode}. */
  readonly code: TarErrorCode;
  /** Path of the entry concerned, when known. */
  readonly path: string | undefined;
  /** Byte offset in the archive (see {@linkcode TarErrorOptions.offset}), when known. */
  readonly offset: number | undefined;

  /**
   * Creates a tar error.
   *
   * @param code Stable reason.
   * @param message Full message, `"Cannot <action>: <reason>"`.
   * @param options Entry path, byte offset and cause.
   */
  constructor(code: TarErrorCode, message: string, options: TarErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path;
    this.offset = options.offset;
  }
}
