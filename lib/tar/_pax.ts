// Local PAX extended header records (POSIX.1-2001 pax "x" typeflag), parsed strictly.
import { readError } from "./_fail.ts";
import { quotePath } from "./quote_path.ts";

/** Header values a PAX record block overrides for the entry that follows it. */
export interface PaxOverrides {
  path?: string;
  /** Seconds since the epoch, possibly negative or fractional. */
  mtime?: number;
  uid?: number;
  gid?: number;
}

const strict = new TextDecoder("utf-8", { fatal: true });
const SPACE = 0x20;
const EQUALS = 0x3d;
const NEWLINE = 0x0a;
const TIME = /^-?\d{1,15}(?:\.\d{1,18})?$/;
const ID = /^(?:0|[1-9]\d{0,9})$/;
const MAX_ID = 0xffff_ffff;
/** Keys accepted; only `path`, `mtime`, `uid` and `gid` change the entry. */
const ALLOWED = new Set(["path", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname"]);

/**
 * Parses the records of a PAX block that starts (its header) at archive byte `offset`.
 * Each record is `"<length> <key>=<value>\n"`: a decimal length without leading zeros that
 * counts the whole record, a non-empty key without `=`, a non-empty value, all UTF-8. The
 * records fill the block exactly. Keys may not repeat.
 *
 * @throws {TarError} `pax_record`, `pax_size_override`, `pax_unsupported_key`, `pax_value`.
 */
export function parsePax(records: Uint8Array, offset: number): PaxOverrides {
  const bad = (reason: string) => readError("pax_record", reason, { offset });
  const result: PaxOverrides = {};
  const seen = new Set<string>();
  let at = 0;
  while (at < records.length) {
    let digitsEnd = at;
    while (digitsEnd < records.length && records[digitsEnd] >= 0x30 && records[digitsEnd] <= 0x39) digitsEnd++;
    const digits = digitsEnd - at;
    if (digits === 0 || digits > 6 || records[digitsEnd] !== SPACE) {
      throw bad("PAX record without a decimal length and a space");
    }
    if (records[at] === 0x30) throw bad("PAX record length with a leading zero");
    let length = 0;
    for (let i = at; i < digitsEnd; i++) length = length * 10 + (records[i] - 0x30);
    const end = at + length;
    if (end > records.length || length < digits + 4 || records[end - 1] !== NEWLINE) {
      throw bad(`PAX record length ${length} does not end at a newline inside the block`);
    }
    const body = records.subarray(digitsEnd + 1, end - 1);
    const equals = body.indexOf(EQUALS);
    if (equals < 1) throw bad("PAX record without 'key='");
    let key: string;
    let value: string;
    try {
      key = strict.decode(body.subarray(0, equals));
      value = strict.decode(body.subarray(equals + 1));
    } catch {
      throw bad("PAX record is not valid UTF-8");
    }
    if (seen.has(key)) throw bad(`PAX key ${quotePath(key)} repeated`);
    seen.add(key);
    apply(result, key, value, offset);
    at = end;
  }
  return result;
}

/** Validates one record's value and stores what the entry uses. */
function apply(result: PaxOverrides, key: string, value: string, offset: number): void {
  if (key === "size") throw readError("pax_size_override", "PAX size record (sizes above 8 GiB − 1 are not supported)", { offset });
  if (!ALLOWED.has(key)) {
    const shown = key.length > 64 ? `${Array.from(key).slice(0, 64).join("")}…` : key;
    throw readError("pax_unsupported_key", `unsupported PAX key ${quotePath(shown)}`, { offset });
  }
  const bad = (reason: string) => readError("pax_value", `PAX ${key} ${reason}`, { offset });
  if (value === "") throw bad("is empty");
  switch (key) {
    case "path":
      result.path = value;
      break;
    case "mtime":
    case "atime":
    case "ctime":
      if (!TIME.test(value)) throw bad("is not a decimal time in seconds");
      if (key === "mtime") result.mtime = Number(value);
      break;
    case "uid":
    case "gid": {
      if (!ID.test(value) || Number(value) > MAX_ID) throw bad("is not a decimal id up to 4294967295");
      result[key] = Number(value);
      break;
    }
    default: // uname, gname: names only, not used
      if (value.includes("\0")) throw bad("contains NUL");
  }
}
