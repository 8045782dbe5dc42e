/**
 * Body decoders for each framing: nothing, `Content-Length`, close-delimited, chunked.
 *
 * @module
 */
import type { ByteReader } from "../../streams/byte_reader.ts";
import { ChunkedDecoder } from "./_chunked.ts";
import type { BodyDecoder } from "./_decoder.ts";

export type { BodyDecoder } from "./_decoder.ts";
import type { BodyFraming } from "./_framing.ts";
import { DockerEngineTransportError } from "../errors.ts";


/**
 * Creates the decoder for `framing`.
 *
 * @param framing Where the body ends.
 * @param reader The connection's bytes, positioned at the first body byte.
 * @returns The decoder.
 */
export function bodyDecoder(framing: BodyFraming, reader: ByteReader): BodyDecoder {
  switch (framing.kind) {
    case "none":
      return { next: () => Promise.resolve(null) };
    case "length":
      return new LengthDecoder(reader, framing.length);
    case "chunked":
      return new ChunkedDecoder(reader);
    case "close":
      return { next: (max) => reader.read(max) };
  }
}

/** Exactly `Content-Length` bytes; fewer before end of stream is a truncated body. */
class LengthDecoder implements BodyDecoder {
  readonly #reader: ByteReader;
  readonly #length: number;
  #remaining: number;

  constructor(reader: ByteReader, length: number) {
    this.#reader = reader;
    this.#length = length;
    this.#remaining = length;
  }

  async next(max: number): Promise<Uint8Array | null> {
    if (this.#remaining === 0) return null;
    const piece = await this.#reader.read(Math.min(max, this.#remaining));
    if (piece === null) {
      throw new DockerEngineTransportError(
        "invalid_response",
        `Cannot read the response body: the connection ended after ${
          this.#length - this.#remaining
        } of ${this.#length} bytes (Content-Length)`,
      );
    }
    this.#remaining -= piece.byteLength;
    return piece;
  }
}
