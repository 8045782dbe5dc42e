/**
 * Decoder of the chunked transfer coding (RFC 9112 §7.1), strict and bounded: hex sizes
 * only, a bounded chunk-size line, CRLF right after each chunk's data, a bounded trailer
 * section that is checked and discarded.
 *
 * @module
 */
import type { BodyDecoder } from "./_decoder.ts";
import type { ByteReader } from "../../streams/byte_reader.ts";
import { latin1, parseFieldLine } from "./_head.ts";
import { readLine } from "./_line.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { MAX_CHUNK_SIZE_LINE_BYTES, MAX_TRAILER_BYTES } from "./limits.ts";

/** `chunk-size [ ; chunk-ext ]`: hex digits, then optional extensions we ignore. */
const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]{1,16})(;[\t\x20-\x7e]*)?$/;

/**
 * Most hex digits the buffered fast path parses: 12 digits stay far below 2^53 (any longer
 * size goes through the strict path and its safe-integer check).
 */
const FAST_SIZE_DIGITS = 12;

/** The value of an ASCII hex digit, `-1` for any other byte. */
function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
  return -1;
}

function invalid(reason: string): DockerEngineTransportError {
  return new DockerEngineTransportError(
    "invalid_response",
    `Cannot decode the chunked response body: ${reason}`,
  );
}

/** Delivers the data of a chunked body; `null` after the last chunk and its trailers. */
export class ChunkedDecoder implements BodyDecoder {
  readonly #reader: ByteReader;
  /** Data bytes left in the current chunk; `-1` between chunks; `-2` after the end. */
  #remaining = -1;

  /**
   * Decodes from `reader`.
   *
   * @param reader The connection's bytes, positioned at the first chunk-size line.
   */
  constructor(reader: ByteReader) {
    this.#reader = reader;
  }

  async next(max: number): Promise<Uint8Array | null> {
    for (;;) {
      if (this.#remaining === -2) return null;
      if (this.#remaining === 0) {
        if (!this.#readBufferedDataEnd()) await this.#readDataEnd();
        this.#remaining = -1;
      }
      if (this.#remaining === -1) {
        const size = this.#readBufferedSize() ?? await this.#readSize();
        if (size === 0) {
          await this.#readTrailers();
          this.#remaining = -2;
          return null;
        }
        this.#remaining = size;
      }
      const piece = await this.#reader.read(Math.min(max, this.#remaining));
      if (piece === null) throw invalid("the connection ended inside a chunk");
      this.#remaining -= piece.byteLength;
      return piece;
    }
  }

  /**
   * The common chunk-size line, parsed from buffered bytes without awaiting: up to
   * {@linkcode FAST_SIZE_DIGITS} hex digits and CRLF, no extension. Profiled on Node 26,
   * the line and data-end reads through `readLine` took about 8 % of an export's CPU (one
   * per HTTP chunk, which the Engine sends at most 32 KiB long). Anything else (an extension, a line not
   * fully buffered yet, a malformed one) is left to {@linkcode ChunkedDecoder.#readSize},
   * which applies every rule and names the error.
   *
   * @returns The size, with the line consumed; `undefined` (nothing consumed) otherwise.
   */
  #readBufferedSize(): number | undefined {
    const bytes = this.#reader.peekBuffered();
    let size = 0;
    let at = 0;
    for (; at < bytes.byteLength && at <= FAST_SIZE_DIGITS; at++) {
      const digit = hexValue(bytes[at]);
      if (digit === -1) break;
      size = size * 16 + digit;
    }
    if (at === 0 || at > FAST_SIZE_DIGITS || at + 2 > bytes.byteLength) return undefined;
    if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) return undefined;
    this.#reader.skipBuffered(at + 2);
    return size;
  }

  /**
   * The CRLF after a chunk's data, checked from buffered bytes without awaiting.
   *
   * @returns Whether it was read (two bytes were buffered); `false` leaves it to
   * {@linkcode ChunkedDecoder.#readDataEnd}.
   */
  #readBufferedDataEnd(): boolean {
    const bytes = this.#reader.peekBuffered();
    if (bytes.byteLength < 2) return false;
    if (bytes[0] !== 0x0d || bytes[1] !== 0x0a) throw invalid("a chunk's data is longer than its declared size");
    this.#reader.skipBuffered(2);
    return true;
  }

  async #readSize(): Promise<number> {
    const line = await readLine(this.#reader, MAX_CHUNK_SIZE_LINE_BYTES, "chunk-size line");
    if (line === null) throw invalid("the connection ended before the last chunk");
    const text = latin1(line);
    const match = CHUNK_SIZE_LINE.exec(text);
    if (match === null) {
      throw invalid(`the chunk-size line "${text.slice(0, 32)}" is not hexadecimal`);
    }
    const size = parseInt(match[1], 16);
    if (!Number.isSafeInteger(size)) throw invalid(`the chunk size 0x${match[1]} is too large`);
    return size;
  }

  /** The CRLF that must follow a chunk's data exactly. */
  async #readDataEnd(): Promise<void> {
    for (const expected of [0x0d, 0x0a]) {
      const byte = await this.#reader.read(1);
      if (byte === null) throw invalid("the connection ended after a chunk's data");
      if (byte[0] !== expected) throw invalid("a chunk's data is longer than its declared size");
    }
  }

  async #readTrailers(): Promise<void> {
    let budget = MAX_TRAILER_BYTES;
    for (;;) {
      const line = await readLine(this.#reader, budget, "trailer section", MAX_TRAILER_BYTES);
      if (line === null) throw invalid("the connection ended inside the trailer section");
      budget -= line.byteLength + 2;
      if (line.byteLength === 0) return;
      parseFieldLine(line, "trailer section");
    }
  }
}
