/**
 * The agent's stderr, read continuously into a bounded tail. The sandbox bounds unread
 * stdout and stderr together (`maxBufferedOutputBytes`), so a stderr nobody reads would stop
 * the sandbox; this reader keeps only the last `limitBytes` bytes and counts the rest.
 *
 * @module
 */

/** A continuously drained byte stream that keeps its last bytes. */
export class StderrTail {
  readonly #limit: number;
  /** Ring of the last `#limit` bytes; `#start` is the oldest byte once full. */
  readonly #ring: Uint8Array;
  #start = 0;
  #length = 0;
  #total = 0;
  /** Settles once the stream ended or errored (never rejects). */
  readonly done: Promise<void>;

  /**
   * Start draining `stream`.
   *
   * @param stream The agent's stderr.
   * @param limitBytes How many of the last bytes to keep (≥ 1).
   */
  constructor(stream: ReadableStream<Uint8Array>, limitBytes: number) {
    this.#limit = limitBytes;
    this.#ring = new Uint8Array(limitBytes);
    this.done = this.#drain(stream);
  }

  /** Bytes read so far, kept or not. */
  get totalBytes(): number {
    return this.#total;
  }

  /** The kept bytes (the last ones read), oldest first. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.#length);
    const first = Math.min(this.#length, this.#limit - this.#start);
    out.set(this.#ring.subarray(this.#start, this.#start + first));
    out.set(this.#ring.subarray(0, this.#length - first), first);
    return out;
  }

  /** The kept bytes as UTF-8 text (a character cut by the bound becomes U+FFFD). */
  text(): string {
    return new TextDecoder().decode(this.bytes());
  }

  /** Append `chunk`, dropping the oldest bytes beyond the limit. */
  push(chunk: Uint8Array): void {
    this.#total += chunk.length;
    const piece = chunk.length > this.#limit ? chunk.subarray(chunk.length - this.#limit) : chunk;
    for (let offset = 0; offset < piece.length;) {
      const end = (this.#start + this.#length) % this.#limit;
      const room = this.#length < this.#limit ? this.#limit - this.#length : this.#limit;
      const run = Math.min(piece.length - offset, this.#limit - end, room);
      this.#ring.set(piece.subarray(offset, offset + run), end);
      offset += run;
      const overflow = this.#length + run - this.#limit;
      if (overflow > 0) {
        this.#start = (this.#start + overflow) % this.#limit;
        this.#length = this.#limit;
      } else {
        this.#length += run;
      }
    }
  }

  async #drain(stream: ReadableStream<Uint8Array>): Promise<void> {
    const reader = stream.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        this.push(value);
      }
    } catch {
      // The sandbox stopped: stderr ends with the stop cause, which the bridge reports itself.
    } finally {
      reader.releaseLock();
    }
  }
}
