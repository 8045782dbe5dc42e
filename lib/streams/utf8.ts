/**
 * Measuring UTF-8 text without encoding it, and telling whether bytes are UTF-8.
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

/**
 * Whether `bytes` is well-formed UTF-8, where a character cut short at the very end counts
 * as well-formed (the bytes may be the first part of a longer text).
 *
 * @param bytes The bytes to judge.
 * @returns `false` when a decoder would replace any byte with U+FFFD before the end.
 *
 * @example
 * ```ts
 * import { isUtf8 } from "./utf8.ts";
 *
 * console.log(isUtf8(new TextEncoder().encode("é"))); // true
 * console.log(isUtf8(new Uint8Array([0xff, 0x00]))); // false
 * console.log(isUtf8(new Uint8Array([0xc3]))); // true: the start of "é", cut
 * ```
 */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}
