// Encoding of ustar header blocks and PAX `path` records for the writer.
import { FIELD, type HeaderNumbers } from "./_header.ts";
import { BLOCK } from "./limits.ts";
import { writeOctal } from "./_octal.ts";

/** The values of one header block. */
export interface HeaderFields extends HeaderNumbers {
  readonly name: Uint8Array;
  readonly prefix?: Uint8Array;
  /** A symbolic link's target (at most 100 bytes; a longer one goes in a PAX `linkpath`). */
  readonly linkname?: Uint8Array;
  /** `0` regular file, `2` symbolic link, `5` directory, `x` PAX extended header. */
  readonly typeflag: "0" | "2" | "5" | "x";
}

const encoder = new TextEncoder();
const MAGIC = encoder.encode("ustar\x0000");

/** A 512-byte ustar header block (magic `ustar\0`, version `00`, unsigned checksum). */
export function encodeHeader(fields: HeaderFields): Uint8Array {
  const block = new Uint8Array(BLOCK);
  block.set(fields.name, FIELD.name[0]);
  writeOctal(block, ...FIELD.mode, fields.mode);
  writeOctal(block, ...FIELD.uid, fields.uid);
  writeOctal(block, ...FIELD.gid, fields.gid);
  writeOctal(block, ...FIELD.size, fields.size);
  writeOctal(block, ...FIELD.mtime, fields.mtime);
  block[FIELD.typeflag[0]] = fields.typeflag.charCodeAt(0);
  if (fields.linkname) block.set(fields.linkname, FIELD.linkname[0]);
  block.set(MAGIC, FIELD.magic[0]);
  writeOctal(block, 329, 8, 0); // devmajor
  writeOctal(block, 337, 8, 0); // devminor
  if (fields.prefix) block.set(fields.prefix, FIELD.prefix[0]);
  block.fill(0x20, FIELD.checksum[0], FIELD.checksum[0] + FIELD.checksum[1]);
  let sum = 0;
  for (const byte of block) sum += byte;
  writeOctal(block, FIELD.checksum[0], 7, sum); // six digits and NUL, then the space kept
  return block;
}

/**
 * Splits an ASCII archive path (with a directory's trailing `/`) into ustar `name` (≤ 100
 * bytes) and `prefix` (≤ 155 bytes, joined with `/`), or undefined when it does not fit.
 */
export function splitUstarPath(path: string): { name: Uint8Array; prefix?: Uint8Array } | undefined {
  // deno-lint-ignore no-control-regex
  if (!/^[\x01-\x7f]*$/.test(path)) return undefined;
  const bytes = encoder.encode(path);
  if (bytes.length <= FIELD.name[1]) return { name: bytes };
  for (let slash = Math.min(FIELD.prefix[1], bytes.length - 2); slash > 0; slash--) {
    if (bytes[slash] !== 0x2f) continue;
    if (bytes.length - slash - 1 > FIELD.name[1]) return undefined;
    return { name: bytes.subarray(slash + 1), prefix: bytes.subarray(0, slash) };
  }
  return undefined;
}

/**
 * The PAX record `"<length> <key>=<value>\n"` (length counting the whole record); `key` is
 * `path` by default, `linkpath` for a long link target.
 */
export function paxPathRecord(path: string, key: "path" | "linkpath" = "path"): Uint8Array {
  const body = encoder.encode(` ${key}=${path}\n`);
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return encoder.encode(`${length} ${key}=${path}\n`);
}
