/**
 * Decoder of the chunked transfer coding (RFC 9112 §7.1), strict and bounded: hex sizes
 * only, a bounded chunk-size line, CRLF right after each chunk's data, a bounded trailer
 * section that is checked and discarded.
 *
 * @module
 */
import type { BodyDecoder } from "./_body_decoder.ts";
import type { ByteReader } from "../../streams/byte_reader.ts";
import { latin1, parseFieldLine } from "./_head.ts";
import { readLine } from "./_line.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { MAX_CHUNK_SIZE_LINE_BYTES, MAX_TRAILER_BYTES } from "./limits.ts";

/** `chunk-size [ ; chunk-ext ]`: hex digits, then optional extensions we ignore. */
const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]{1,16})(;[\t\x20-\x7e]*)?$/;

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
        await this.#readDataEnd();
        this.#remaining = -1;
      }
      if (this.#remaining === -1) {
        const size = await this.#readSize();
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
