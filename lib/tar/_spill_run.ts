// Sorted runs of path records on disk: written once, read back sequentially with a
// bounded buffer. Record layout: type (u8: 0 file, 1 directory), header offset (f64 LE),
// key length (u32 LE), key (UTF-8; the path with every '/' replaced by NUL).
import { type FileHandle, open } from "node:fs/promises";

/** One explicit entry of the path set, in sort form. */
export interface PathRecord {
  /** The path with every `/` replaced by NUL, so that `a/…` sorts right after `a`. */
  readonly key: string;
  readonly type: "file" | "directory";
  /** Byte offset of the entry's header in the archive. */
  readonly offset: number;
}

/** A source of records in ascending key order. */
export interface RecordSource {
  /** The next record, or undefined when there is none. */
  next(): Promise<PathRecord | undefined>;
  /** Releases what the source holds. */
  close(): Promise<void>;
}

const HEAD = 13;
/** Buffer of a run reader or writer, in bytes. */
export const RUN_BUFFER = 65_536;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Writes records (already sorted) to `handle` through a bounded buffer. */
export async function writeRecords(handle: FileHandle, records: AsyncIterable<PathRecord> | Iterable<PathRecord>): Promise<void> {
  let buffer = new Uint8Array(RUN_BUFFER);
  let used = 0;
  const flush = async () => {
    let written = 0;
    while (written < used) written += (await handle.write(buffer, written, used - written)).bytesWritten;
    used = 0;
  };
  for await (const record of records) {
    const key = encoder.encode(record.key);
    const size = HEAD + key.length;
    if (used + size > buffer.length) await flush();
    if (size > buffer.length) buffer = new Uint8Array(size);
    const view = new DataView(buffer.buffer, buffer.byteOffset + used, HEAD);
    view.setUint8(0, record.type === "file" ? 0 : 1);
    view.setFloat64(1, record.offset, true);
    view.setUint32(9, key.length, true);
    buffer.set(key, used + HEAD);
    used += size;
  }
  await flush();
}

/** Reads the records of a run file in order, holding at most one buffer of them. */
export class RunReader implements RecordSource {
  #handle: FileHandle;
  #buffer = new Uint8Array(RUN_BUFFER);
  #start = 0;
  #end = 0;
  #eof = false;

  private constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  /** Opens the run at `path` for reading. */
  static async open(path: string): Promise<RunReader> {
    return new RunReader(await open(path, "r"));
  }

  /** True when `count` unread bytes are buffered; false at end of file. */
  async #want(count: number): Promise<boolean> {
    while (this.#end - this.#start < count) {
      if (this.#eof) return false;
      if (count > this.#buffer.length) {
        const grown = new Uint8Array(count);
        grown.set(this.#buffer.subarray(this.#start, this.#end));
        this.#end -= this.#start;
        this.#start = 0;
        this.#buffer = grown;
      } else if (this.#start + count > this.#buffer.length) {
        this.#buffer.copyWithin(0, this.#start, this.#end);
        this.#end -= this.#start;
        this.#start = 0;
      }
      const { bytesRead } = await this.#handle.read(this.#buffer, this.#end, this.#buffer.length - this.#end, null);
      if (bytesRead === 0) this.#eof = true;
      this.#end += bytesRead;
    }
    return true;
  }

  /** The next record, or undefined at the end of the run. */
  async next(): Promise<PathRecord | undefined> {
    if (!await this.#want(HEAD)) {
      if (this.#end !== this.#start) throw new Error("spill run ends inside a record");
      return undefined;
    }
    const view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset + this.#start, HEAD);
    const type = view.getUint8(0) === 0 ? "file" : "directory";
    const offset = view.getFloat64(1, true);
    const length = view.getUint32(9, true);
    if (!await this.#want(HEAD + length)) throw new Error("spill run ends inside a record");
    const key = decoder.decode(this.#buffer.subarray(this.#start + HEAD, this.#start + HEAD + length));
    this.#start += HEAD + length;
    return { key, type, offset };
  }

  /** Closes the file. */
  close(): Promise<void> {
    return this.#handle.close();
  }
}
