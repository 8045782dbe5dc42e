/**
 * Joining byte arrays.
 *
 * @module
 */

/**
 * Copies `parts` one after the other into a new array.
 *
 * @param parts The byte arrays, in order.
 * @returns Their concatenation (a fresh array, also for a single part).
 *
 * @example
 * ```ts
 * import { concatBytes } from "./concat_bytes.ts";
 *
 * console.log(concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])])); // Uint8Array(3) [ 1, 2, 3 ]
 * ```
 */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const joined = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.byteLength;
  }
  return joined;
}
