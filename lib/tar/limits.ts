/**
 * The tar format's boundaries, shared by the reader, the writer, the path set and the
 * sandbox contract's import checks (one place for 8 GiB − 1, the largest 11-digit octal
 * number of a ustar header).
 *
 * @module
 */

/** Size of a tar block in bytes. */
export const BLOCK = 512;

/** Largest 11-digit octal number of a ustar header field (`size`, `mtime`): 8 GiB − 1. */
export const MAX_OCTAL_11 = 8_589_934_591;

/** Largest entry size in bytes: 8 GiB − 1, the largest 11-digit octal size field. */
export const MAX_ENTRY_SIZE: number = MAX_OCTAL_11;

/** Largest path in UTF-8 bytes (a directory's trailing `/` not counted). */
export const MAX_PATH_BYTES = 4096;

/** Largest path segment (file name) in UTF-8 bytes (Linux `NAME_MAX`). */
export const MAX_SEGMENT_BYTES = 255;

/** Largest PAX record block in bytes. */
export const MAX_PAX_BYTES = 65_536;

/** Largest chunk either stream emits, in bytes. */
export const MAX_CHUNK = 65_536;

/** Padding after `size` bytes of data up to the next block boundary, in bytes. */
export function paddingOf(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}
