// Pull-based byte access to a ReadableStream<Uint8Array> that holds at most one source
// chunk: reads never run ahead of what the caller asks for.

const EMPTY = new Uint8Array(0);

/** Reads exact byte counts or bounded views out of a byte stream, one chunk at a time. */
export class ByteSource {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #chunk: Uint8Array = EMPTY;
  #position = 0;
  #ended = false;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** True when the current chunk is used up and the next read hit the end. */
  async #refill(): Promise<boolean> {
    while (this.#position >= this.#chunk.length) {
      if (this.#ended) return false;
      const { done, value } = await this.#reader.read();
      if (done) {
        this.#ended = true;
        this.#chunk = EMPTY;
        this.#position = 0;
        return false;
      }
      if (!(value instanceof Uint8Array)) {
        throw new TypeError("Cannot read archive: source chunk is not a Uint8Array");
      }
      this.#chunk = value;
      this.#position = 0;
    }
    return true;
  }

  /**
   * Fills `target` from the stream. Returns the number of bytes copied, less than
   * `target.length` only when the stream ended.
   */
  async readInto(target: Uint8Array): Promise<number> {
    let filled = 0;
    while (filled < target.length && await this.#refill()) {
      const take = Math.min(target.length - filled, this.#chunk.length - this.#position);
      target.set(this.#chunk.subarray(this.#position, this.#position + take), filled);
      this.#position += take;
      filled += take;
    }
    return filled;
  }

  /**
   * The next 1 to `max` bytes as a view into the current source chunk (no copy), or
   * undefined at the end of the stream.
   */
  async read(max: number): Promise<Uint8Array | undefined> {
    if (!await this.#refill()) return undefined;
    const take = Math.min(max, this.#chunk.length - this.#position);
    const view = this.#chunk.subarray(this.#position, this.#position + take);
    this.#position += take;
    return view;
  }

  /** Cancels the source stream (pending reads resolve as ended); never rejects. */
  cancel(reason?: unknown): Promise<void> {
    this.#ended = true;
    this.#chunk = EMPTY;
    return this.#reader.cancel(reason).catch(() => {});
  }
}
