// Raw tar building blocks for tests: headers with any field content (valid or not), PAX
// blocks, bodies, end blocks, and helpers to stream and collect archives.
import assert from "node:assert/strict";
import { concatBytes } from "../../../lib/streams/concat_bytes.ts";
import { TarError, type TarErrorCode } from "../../../lib/tar/error.ts";
import type { TarEntry } from "../../../lib/tar/entry.ts";
import { readTar, type ReadTarOptions } from "../../../lib/tar/read_tar.ts";

const encoder = new TextEncoder();

/** Field content: a number becomes zero-padded octal plus NUL; bytes/strings are raw. */
export type Field = number | string | Uint8Array;

/** Fields of a raw header; anything omitted gets a valid default. */
export interface RawHeader {
  name?: Field;
  mode?: Field;
  uid?: Field;
  gid?: Field;
  size?: Field;
  mtime?: Field;
  /** Raw checksum field; computed (unsigned, six digits, NUL, space) when omitted. */
  checksum?: Field;
  /** Added to the computed checksum value. */
  checksumDelta?: number;
  typeflag?: string;
  linkname?: Field;
  magic?: Field;
  version?: Field;
  prefix?: Field;
}

function put(block: Uint8Array, start: number, length: number, value: Field): void {
  if (typeof value === "number") {
    const digits = value.toString(8).padStart(length - 1, "0");
    block.set(encoder.encode(digits).subarray(0, length), start);
    if (digits.length < length) block[start + digits.length] = 0;
    return;
  }
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  assert.ok(bytes.length <= length, `field of ${bytes.length} bytes does not fit ${length}`);
  block.fill(0, start, start + length);
  block.set(bytes, start);
}

/** A 512-byte header block. */
export function header(fields: RawHeader = {}): Uint8Array {
  const block = new Uint8Array(512);
  put(block, 0, 100, fields.name ?? "file");
  put(block, 100, 8, fields.mode ?? 0o644);
  put(block, 108, 8, fields.uid ?? 1000);
  put(block, 116, 8, fields.gid ?? 1000);
  put(block, 124, 12, fields.size ?? 0);
  put(block, 136, 12, fields.mtime ?? 1_700_000_000);
  block[156] = (fields.typeflag ?? "0").charCodeAt(0);
  put(block, 157, 100, fields.linkname ?? "");
  put(block, 257, 6, fields.magic ?? "ustar\0");
  put(block, 263, 2, fields.version ?? "00");
  put(block, 345, 155, fields.prefix ?? "");
  if (fields.checksum !== undefined) {
    put(block, 148, 8, fields.checksum);
  } else {
    block.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of block) sum += byte;
    sum += fields.checksumDelta ?? 0;
    put(block, 148, 7, sum);
  }
  return block;
}

/** Data followed by zero padding to a block boundary. */
export function padded(data: Uint8Array | string): Uint8Array {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  const out = new Uint8Array(Math.ceil(bytes.length / 512) * 512);
  out.set(bytes);
  return out;
}

/** One PAX record with its exact length prefix. */
export function record(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  const restBytes = encoder.encode(rest).length;
  let length = restBytes + 1;
  while (String(length).length + restBytes !== length) length = String(length).length + restBytes;
  return `${length}${rest}`;
}

/** A PAX `x` header and its records (raw text or key/value pairs), padded. */
export function pax(records: string | Record<string, string>, fields: RawHeader = {}): Uint8Array {
  const text = typeof records === "string"
    ? records
    : Object.entries(records).map(([key, value]) => record(key, value)).join("");
  const bytes = encoder.encode(text);
  return concat(header({ name: "PaxHeaders/file", typeflag: "x", size: bytes.length, ...fields }), padded(bytes));
}

/** A regular file entry: header and padded body. */
export function file(path: string, content: string | Uint8Array = "", fields: RawHeader = {}): Uint8Array {
  const bytes = typeof content === "string" ? encoder.encode(content) : content;
  return concat(header({ name: path, size: bytes.length, ...fields }), padded(bytes));
}

/** A directory entry. */
export function dir(path: string, fields: RawHeader = {}): Uint8Array {
  return header({ name: path, typeflag: "5", mode: 0o755, ...fields });
}

/** The two end-of-archive blocks. */
export function end(): Uint8Array {
  return new Uint8Array(1024);
}

/** Concatenation of byte arrays (the library's own helper). */
export function concat(...parts: Uint8Array[]): Uint8Array {
  return concatBytes(parts);
}

/** A stream of `bytes` in chunks of `size` bytes (or at the given split points). */
export function streamOf(bytes: Uint8Array, size: number | number[] = 4096): ReadableStream<Uint8Array> {
  const cuts = typeof size === "number" ? [] : [...size].sort((a, b) => a - b);
  let at = 0;
  let cut = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      let next: number;
      if (typeof size === "number") next = at + size;
      else {
        while (cut < cuts.length && cuts[cut] <= at) cut++;
        next = cut < cuts.length ? cuts[cut] : bytes.length;
      }
      controller.enqueue(bytes.slice(at, Math.min(next, bytes.length)));
      at = Math.min(next, bytes.length);
    },
  }, { highWaterMark: 0 });
}

/** An entry with its body read out. */
export interface ReadEntry extends Omit<TarEntry, "body"> {
  readonly data: Uint8Array;
}

/** Reads a whole archive, body by body. */
export async function readAll(
  source: Uint8Array | ReadableStream<Uint8Array>,
  options?: ReadTarOptions,
): Promise<ReadEntry[]> {
  const stream = source instanceof Uint8Array ? streamOf(source) : source;
  const out: ReadEntry[] = [];
  for await (const entry of readTar(stream, options)) {
    const chunks: Uint8Array[] = [];
    for await (const chunk of entry.body) chunks.push(chunk);
    const { body: _, ...rest } = entry;
    out.push({ ...rest, data: concat(...chunks) });
  }
  return out;
}

/** Asserts that `promise` rejects with a TarError of `code`; returns it. */
export async function rejectsWith(promise: Promise<unknown>, code: TarErrorCode): Promise<TarError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof TarError, `expected TarError ${code}, got ${caught}`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(caught.name, "TarError");
  return caught;
}

/** Text of bytes. */
export function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}
