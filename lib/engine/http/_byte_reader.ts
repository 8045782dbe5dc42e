/**
 * Reads a connection's bytes in bounded pieces and CRLF-terminated lines, keeping at
 * most the unconsumed rest of one runtime chunk.
 *
 * @module
 */
import { concatBytes } from "./_bytes.ts";
import { DockerEngineTransportError } from "./errors.ts";

const EMPTY = new Uint8Array(0);
const CR = 0x0d;
const LF = 0x0a;

/** A pull-based reader with one chunk of look-behind: what was received but not consumed. */
export class ByteReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer: Uint8Array = EMPTY;

  /**
   * Locks `readable` for the lifetime of the reader.
   *
   * @param readable The connection's bytes.
   */
  constructor(readable: ReadableStream<Uint8Array>) {
    this.#reader = readable.getReader();
  }

  /** Reads one more runtime chunk when nothing is buffered; `false` at end of stream. */
  async #fill(): Promise<boolean> {
    while (this.#buffer.byteLength === 0) {
      const { done, value } = await this.#reader.read();
      if (done) return false;
      this.#buffer = value;
    }
    return true;
  }

  /**
   * Bytes already received and not yet consumed (the rest of the last runtime chunk);
   * reading this never touches the connection.
   */
  get buffered(): number {
    return this.#buffer.byteLength;
  }

  #take(length: number): Uint8Array {
    const piece = this.#buffer.subarray(0, length);
    this.#buffer = this.#buffer.subarray(length);
    return piece;
  }

  /**
   * Resolves with the next 1 to `max` bytes (buffered bytes first; reads the connection
   * only when none are), or `null` at end of stream.
   *
   * @param max Most bytes to return (≥ 1).
   */
  async read(max: number): Promise<Uint8Array | null> {
    if (!(await this.#fill())) return null;
    return this.#take(Math.min(max, this.#buffer.byteLength));
  }

  /**
   * Resolves with the next line without its CRLF, or `null` when the stream ends before
   * the line's first byte.
   *
   * @param budget Most bytes the line may take, CRLF included.
   * @param what What the line belongs to, for messages ("response head").
   * @param limit The bound to name when `budget` is exceeded.
   * @throws {DockerEngineTransportError} `response_limit` past `budget`;
   * `invalid_response` for a bare LF, a stray CR, or end of stream inside the line.
   */
  async readLine(budget: number, what: string, limit = budget): Promise<Uint8Array | null> {
    const parts: Uint8Array[] = [];
    let length = 0;
    for (;;) {
      if (!(await this.#fill())) {
        if (length === 0) return null;
        throw new DockerEngineTransportError(
          "invalid_response",
          `Cannot read the ${what}: the connection ended inside a line`,
        );
      }
      const lf = this.#buffer.indexOf(LF);
      const end = lf === -1 ? this.#buffer.byteLength : lf + 1;
      if (length + end > budget) {
        throw new DockerEngineTransportError(
          "response_limit",
          `Cannot read the ${what}: it exceeds ${limit} bytes`,
        );
      }
      parts.push(this.#take(end));
      length += end;
      if (lf !== -1) break;
    }
    const line = parts.length === 1 ? parts[0] : concatBytes(parts);
    if (line.byteLength < 2 || line[line.byteLength - 2] !== CR) {
      throw new DockerEngineTransportError(
        "invalid_response",
        `Cannot read the ${what}: a line ends with a bare LF instead of CRLF`,
      );
    }
    const content = line.subarray(0, line.byteLength - 2);
    if (content.includes(CR)) {
      throw new DockerEngineTransportError(
        "invalid_response",
        `Cannot read the ${what}: a line contains a bare CR`,
      );
    }
    return content;
  }
}
