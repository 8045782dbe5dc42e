/**
 * Measuring UTF-8 text without encoding it.
 *
 * @module
 */

/**
 * Counts the UTF-8 bytes of a well-formed string without allocating (what
 * `new TextEncoder().encode(text).byteLength` returns, without the copy).
 *
 * @param text A string without lone surrogates.
 * @returns Its length in UTF-8 bytes.
 *
 * @example
 * ```ts
 * import { utf8ByteLength } from "./utf8.ts";
 *
 * console.log(utf8ByteLength("a/é/😀")); // 9
 * ```
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      bytes += 4;
      index += 1;
    } else bytes += 3;
  }
  return bytes;
}
