/**
 * One chunk at a time out of a `ReadableStream<Uint8Array>`, with a shortcut for the streams
 * that offer one: a stream whose producer can hand its next chunk straight to the one
 * reader that holds the lock registers a direct read, and {@linkcode chunkReader} uses it
 * instead of the stream's read path. A Web Streams read costs a read request, the
 * underlying source's pull promise and the queue's bookkeeping per chunk; on the path from
 * the socket through the HTTP upgrade to the demultiplexer that was three hops per 64 KiB
 * chunk (profiled on Node 26, Deno 2.5 and Bun 1.4: the socket floor is reached only
 * without them). Every other stream is read through its ordinary reader.
 *
 * The stream stays the public face: it is locked while a chunk reader holds it, and what
 * its producer does on close, error and cancel is what the direct read does too.
 *
 * @module
 */

/** A reader of one chunk at a time; it holds the stream's lock until `releaseLock()`. */
export interface ChunkReader {
  /**
   * The next chunk, or `null` at the end of the stream. Never called concurrently.
   *
   * @throws What the stream errors with.
   */
  read(): Promise<Uint8Array | null>;
  /**
   * Cancels the stream with `reason` (as `reader.cancel(reason)` does).
   *
   * @returns Resolves once the stream was cancelled.
   */
  cancel(reason?: unknown): Promise<void>;
  /** Releases the stream's lock; the reader must not be used afterwards. */
  releaseLock(): void;
}

/** What a producer offering direct reads provides: the read and cancel of its one reader. */
export interface DirectReads {
  /** The next chunk, `null` at the end; only called while the stream is locked to the chunk reader. */
  read(): Promise<Uint8Array | null>;
  /** What cancelling the stream does. */
  cancel(reason?: unknown): Promise<void>;
}

const offers = new WeakMap<ReadableStream<Uint8Array>, DirectReads>();

/**
 * Registers direct reads for `stream`, used by every later {@linkcode chunkReader} of it.
 * The producer must deliver through `reads.read()` exactly the chunks its stream would
 * deliver, and must not enqueue on the stream while a chunk reader holds it (it cannot
 * tell, so a producer offering direct reads enqueues only from its `pull`, which a locked,
 * unread stream never calls).
 *
 * @param stream The stream (pull-based, high-water mark 0).
 * @param reads Its direct read and cancel.
 */
export function offerDirectReads(stream: ReadableStream<Uint8Array>, reads: DirectReads): void {
  offers.set(stream, reads);
}

/**
 * Locks `stream` and returns a reader of its chunks: its direct reads when it offers them
 * ({@linkcode offerDirectReads}), else its default reader.
 *
 * @param stream The bytes to read.
 * @returns The reader; it holds the lock until `releaseLock()`.
 * @throws {TypeError} When `stream` is already locked.
 *
 * @example
 * ```ts
 * import { chunkReader } from "./chunk_reader.ts";
 *
 * const reader = chunkReader(ReadableStream.from([new Uint8Array([1, 2])]));
 * console.log(await reader.read(), await reader.read()); // Uint8Array(2) [ 1, 2 ] null
 * ```
 */
export function chunkReader(stream: ReadableStream<Uint8Array>): ChunkReader {
  const lock = stream.getReader();
  const direct = offers.get(stream);
  if (direct !== undefined) {
    return {
      read: () => direct.read(),
      cancel: (reason) => direct.cancel(reason),
      releaseLock: () => lock.releaseLock(),
    };
  }
  return {
    read: async () => {
      const { done, value } = await lock.read();
      return done ? null : value;
    },
    cancel: (reason) => lock.cancel(reason),
    releaseLock: () => lock.releaseLock(),
  };
}
