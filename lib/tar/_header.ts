// One 512-byte ustar header block, validated field by field (POSIX.1-2001 ustar layout).
import { readError } from "./_fail.ts";
import { MAX_ENTRY_SIZE } from "./limits.ts";
import { parseOctal } from "./_octal.ts";

/** Byte ranges of the ustar header fields: [start, length]. */
export const FIELD = {
  name: [0, 100],
  mode: [100, 8],
  uid: [108, 8],
  gid: [116, 8],
  size: [124, 12],
  mtime: [136, 12],
  checksum: [148, 8],
  typeflag: [156, 1],
  linkname: [157, 100],
  magic: [257, 6],
  version: [263, 2],
  prefix: [345, 155],
} as const;

/** The numeric fields of a header, as the reader parses and the writer encodes them. */
export interface HeaderNumbers {
  /** Permission bits (the reader masks the mode field with 0o7777). */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** Bytes of data after the header. */
  readonly size: number;
  /** Seconds since the epoch. */
  readonly mtime: number;
}

/** The header fields the reader uses, numeric fields already parsed. */
export interface Header extends HeaderNumbers {
  /** `pax` for a PAX extended header (`x`). */
  readonly kind: "file" | "directory" | "pax";
  /** The `name` field (a view into the block). */
  readonly name: Uint8Array;
  /** The `prefix` field (a view into the block). */
  readonly prefix: Uint8Array;
}

const USTAR_MAGIC = [0x75, 0x73, 0x74, 0x61, 0x72, 0x00, 0x30, 0x30]; // "ustar\0" "00"
const lossy = new TextDecoder();

/** True when all 512 bytes are zero (an end-of-archive block). */
export function isZeroBlock(block: Uint8Array): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false;
  return true;
}

/** Unsigned sum of the block's bytes with the checksum field counted as eight spaces. */
export function checksumOf(block: Uint8Array): number {
  let sum = 8 * 0x20;
  const [start, length] = FIELD.checksum;
  for (let i = 0; i < block.length; i++) {
    if (i < start || i >= start + length) sum += block[i];
  }
  return sum;
}

/** The field bytes up to the first NUL (or the whole field). */
export function fieldText(block: Uint8Array, [start, length]: readonly [number, number]): Uint8Array {
  const field = block.subarray(start, start + length);
  const nul = field.indexOf(0);
  return nul === -1 ? field : field.subarray(0, nul);
}

/** A best-effort, lossy rendering of the header's name for error messages. */
function namePreview(block: Uint8Array): string {
  return lossy.decode(fieldText(block, FIELD.name));
}

/**
 * Validates a non-zero header block found at archive byte `offset`: checksum, magic and
 * version, type flag, numeric fields, size bound.
 *
 * @throws {TarError} `checksum`, `magic`, `pax_global`, `unsupported_type`, `numeric_field`,
 * `size_limit`, `directory_size`.
 */
export function parseHeader(block: Uint8Array, offset: number): Header {
  const stored = parseOctal(block, ...FIELD.checksum);
  if (stored === undefined) throw readError("checksum", "malformed header checksum field", { offset });
  if (stored !== checksumOf(block)) throw readError("checksum", "header checksum mismatch", { offset });
  for (let i = 0; i < USTAR_MAGIC.length; i++) {
    if (block[FIELD.magic[0] + i] !== USTAR_MAGIC[i]) {
      throw readError("magic", "header is not ustar (magic 'ustar\\0', version '00')", { offset });
    }
  }
  const path = namePreview(block);
  const flag = block[FIELD.typeflag[0]];
  let kind: Header["kind"];
  if (flag === 0x30 || flag === 0) kind = "file";
  else if (flag === 0x35) kind = "directory";
  else if (flag === 0x78) kind = "pax";
  else if (flag === 0x67) throw readError("pax_global", "global PAX header", { offset, path });
  else {
    const shown = flag >= 0x21 && flag <= 0x7e ? `'${String.fromCharCode(flag)}'` : `0x${flag.toString(16)}`;
    throw readError("unsupported_type", `unsupported entry type ${shown}`, { offset, path });
  }
  const number = (field: "mode" | "uid" | "gid" | "size" | "mtime"): number => {
    const [start, length] = FIELD[field];
    const value = parseOctal(block, start, length);
    if (value === undefined) {
      throw readError("numeric_field", `${field} field is not an octal number`, { offset, path });
    }
    return value;
  };
  const mode = number("mode") & 0o7777;
  const uid = number("uid");
  const gid = number("gid");
  const size = number("size");
  const mtime = number("mtime");
  if (size > MAX_ENTRY_SIZE) {
    throw readError("size_limit", `size ${size} above ${MAX_ENTRY_SIZE} bytes`, { offset, path });
  }
  if (kind === "directory" && size !== 0) {
    throw readError("directory_size", `directory with size ${size}`, { offset, path });
  }
  return {
    kind,
    mode,
    uid,
    gid,
    size,
    mtime,
    name: block.subarray(FIELD.name[0], FIELD.name[0] + FIELD.name[1]),
    prefix: block.subarray(FIELD.prefix[0], FIELD.prefix[0] + FIELD.prefix[1]),
  };
}
