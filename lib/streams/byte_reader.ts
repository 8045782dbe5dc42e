/**
 * The one look-behind reader of the project: bounded pieces, exact fills and delimited
 * lines out of a `ReadableStream<Uint8Array>`, holding at most the unconsumed rest of one
 * source chunk. The HTTP codec reads response heads and bodies with it, the tar reader
 * headers and file bodies.
 *
 * Deno's `@std/streams` has no such reader, and JSR packages cannot be installed on the
 * project's build machines (they reach the npm registry and Debian only); a
 * `ReadableStreamBYOBReader` needs a byte stream, which our socket streams are not (a byte
 * stream copies every chunk into the reader's buffer).
 *
 * @module
 */

import { type ChunkReader, chunkReader } from "./chunk_reader.ts";
import { concatBytes } from "./concat_bytes.ts";

const EMPTY = new Uint8Array(0);

/**
 * How {@linkcode ByteReader.readThrough} ended: at the delimiter (the bytes end with it), at
 * the byte budget (the delimiter was not among the first `max` bytes) or at the end of the
 * stream (the bytes are what came before it).
 */
export interface ReadThroughResult {
  /** The bytes read, the delimiter included when `end` is `"delimiter"`. */
  readonly bytes: Uint8Array;
  /** Why reading stopped. */
  readonly end: "delimiter" | "limit" | "stream";
}

/**
 * A pull-based reader with one chunk of look-behind: what was received but not consumed.
 * It reads its source only when a call finds nothing buffered, so it never runs ahead of
 * what its caller asks for by more than one source chunk.
 *
 * @example Read a line, then a fixed-size record
 * ```ts
 * import { ByteReader } from "./byte_reader.ts";
 *
 * const reader = new ByteReader(ReadableStream.from([new TextEncoder().encode("size 4\nabcd")]));
 * const line = await reader.readThrough(0x0a, 64);
 * const record = new Uint8Array(4);
 * console.log(line?.end, await reader.readInto(record), new TextDecoder().decode(record)); // delimiter 4 abcd
 * ```
 */
export class ByteReader {
  readonly #reader: ChunkReader;
  #chunk: Uint8Array = EMPTY;
  #ended = false;

  /**
   * Locks `readable` for the lifetime of the reader (its direct reads when it offers them,
   * see `chunk_reader.ts`).
   *
   * @param readable The bytes to read.
   * @throws {TypeError} When `readable` is already locked.
   */
  constructor(readable: ReadableStream<Uint8Array>) {
    this.#reader = chunkReader(readable);
  }

  /**
   * Bytes received and not yet consumed (the rest of the last source chunk); reading this
   * never touches the source.
   */
  get buffered(): number {
    return this.#chunk.byteLength;
  }

  /**
   * Makes sure a byte is buffered, reading the source once per empty chunk.
   *
   * @returns `false` at the end of the stream.
   * @throws {TypeError} When the source yields something other than a `Uint8Array`.
   */
  async #fill(): Promise<boolean> {
    while (this.#chunk.byteLength === 0) {
      if (this.#ended) return false;
      const value = await this.#reader.read();
      if (value === null) {
        this.#ended = true;
        return false;
      }
      if (!(value instanceof Uint8Array)) throw new TypeError("Cannot read the stream: a chunk is not a Uint8Array");
      this.#chunk = value;
    }
    return true;
  }

  #take(length: number): Uint8Array {
    if (length === this.#chunk.byteLength) {
      // The whole rest: no views to make (the common case of a reader keeping up).
      const whole = this.#chunk;
      this.#chunk = EMPTY;
      return whole;
    }
    const piece = this.#chunk.subarray(0, length);
    this.#chunk = this.#chunk.subarray(length);
    return piece;
  }

  /**
   * The next 1 to `max` bytes as a view of the current source chunk (no copy): buffered
   * bytes first, the source is read only when none are.
   *
   * @param max Most bytes to return (≥ 1).
   * @returns The bytes, or `null` at the end of the stream.
   * @throws {TypeError} When the source yields something other than a `Uint8Array`.
   */
  read(max: number): Promise<Uint8Array | null> {
    // Buffered bytes without an async frame: a decoder reads the rest of a source chunk
    // this way once per HTTP chunk of an export (~30,000 per GiB).
    if (this.#chunk.byteLength > 0) return Promise.resolve(this.#take(Math.min(max, this.#chunk.byteLength)));
    return this.#readFilled(max);
  }

  async #readFilled(max: number): Promise<Uint8Array | null> {
    if (!(await this.#fill())) return null;
    return this.#take(Math.min(max, this.#chunk.byteLength));
  }

  /**
   * The buffered bytes, as a view, without consuming them or touching the source; what
   * {@linkcode ByteReader.buffered} counts. Later reads start at its first byte until
   * something is consumed.
   *
   * @returns The unconsumed rest of the current source chunk (possibly empty).
   */
  peekBuffered(): Uint8Array {
    return this.#chunk;
  }

  /**
   * Consumes `count` buffered bytes without touching the source.
   *
   * @param count Bytes to consume, at most {@linkcode ByteReader.buffered}.
   * @throws {RangeError} When fewer than `count` bytes are buffered.
   */
  skipBuffered(count: number): void {
    if (count > this.#chunk.byteLength) {
      throw new RangeError(`Cannot skip ${count} bytes: only ${this.#chunk.byteLength} are buffered`);
    }
    this.#take(count);
  }

  /**
   * Fills `target` from the stream (a copy).
   *
   * @param target Where the bytes go.
   * @returns The bytes copied: less than `target.byteLength` only at the end of the stream.
   * @throws {TypeError} When the source yields something other than a `Uint8Array`.
   */
  async readInto(target: Uint8Array): Promise<number> {
    let filled = 0;
    while (filled < target.byteLength && await this.#fill()) {
      const piece = this.#take(Math.min(target.byteLength - filled, this.#chunk.byteLength));
      target.set(piece, filled);
      filled += piece.byteLength;
    }
    return filled;
  }

  /**
   * Reads up to and including the first `delimiter` byte, taking at most `max` bytes.
   *
   * @param delimiter The byte that ends a line (`0x0a` for LF).
   * @param max Most bytes to take, the delimiter included.
   * @returns The bytes and why reading stopped, or `null` when the stream ended before the
   * first byte. A single source chunk's line is a view of it; a line spread over chunks is a
   * fresh array.
   * @throws {TypeError} When the source yields something other than a `Uint8Array`.
   */
  async readThrough(delimiter: number, max: number): Promise<ReadThroughResult | null> {
    const parts: Uint8Array[] = [];
    let length = 0;
    let end: ReadThroughResult["end"];
    for (;;) {
      if (!(await this.#fill())) {
        if (length === 0) return null;
        end = "stream";
        break;
      }
      const at = this.#chunk.indexOf(delimiter);
      const through = at === -1 ? this.#chunk.byteLength : at + 1;
      if (length + through > max) {
        parts.push(this.#take(max - length));
        length = max;
        end = "limit";
        break;
      }
      parts.push(this.#take(through));
      length += through;
      if (at !== -1) {
        end = "delimiter";
        break;
      }
    }
    return { bytes: parts.length === 1 ? parts[0] : concatBytes(parts), end };
  }

  /**
   * Cancels the source; later reads find the end of the stream.
   *
   * @param reason Handed to the source's `cancel`.
   * @returns Resolves once the source was cancelled; never rejects.
   */
  cancel(reason?: unknown): Promise<void> {
    this.#ended = true;
    this.#chunk = EMPTY;
    return this.#reader.cancel(reason).catch(() => {});
  }

  /**
   * Hands the source over: returns the bytes still buffered and releases the lock on the
   * source, which the caller may then read directly (the bytes come before the source's).
   * The reader must not be used afterwards.
   *
   * @returns The buffered rest of the last chunk (possibly empty).
   */
  detach(): Uint8Array {
    const rest = this.#chunk;
    this.#chunk = EMPTY;
    this.#ended = true;
    this.#reader.releaseLock();
    return rest;
  }
}
