/**
 * Read buffers an import reuses. Reading a host file into fresh memory costs a page fault
 * per 4 KiB and leaves the collector a buffer per read (measured: a 512 MiB file read in
 * 1 MiB pieces took 0.97 s into fresh buffers, 0.21 s into one reused buffer, on Node 26).
 * A pool lends buffers to host-file bodies and takes each back once the Engine connection
 * has handed every byte of it to the kernel (`onBodyChunkSent`).
 *
 * @module
 */

/** Size of one pooled read buffer, in bytes. */
export const READ_BUFFER_BYTES = 1024 * 1024;

/** Free buffers a pool keeps; more are left to the collector. */
const KEPT_BUFFERS = 4;

/**
 * Buffers lent to producers and taken back piece by piece: a buffer is free again once
 * views covering every byte that was handed out of it have come back.
 */
export class ReadBufferPool {
  readonly #free: ArrayBuffer[] = [];
  /** Bytes of each lent buffer that have not come back yet. */
  readonly #outstanding = new WeakMap<ArrayBufferLike, number>();

  /**
   * A buffer of {@linkcode READ_BUFFER_BYTES}, free or new.
   *
   * @returns The whole buffer; hand part of it out with {@linkcode ReadBufferPool.lend}
   *   or return it unused with {@linkcode ReadBufferPool.putBack}.
   */
  take(): Uint8Array {
    const free = this.#free.pop();
    return free === undefined ? new Uint8Array(READ_BUFFER_BYTES) : new Uint8Array(free);
  }

  /**
   * Records the view of a taken buffer that leaves for the consumer.
   *
   * @param view A non-empty view starting in a buffer from {@linkcode ReadBufferPool.take}.
   * @returns `view`.
   */
  lend(view: Uint8Array): Uint8Array {
    this.#outstanding.set(view.buffer, view.byteLength);
    return view;
  }

  /**
   * Takes back a buffer that was never handed out.
   *
   * @param buffer From {@linkcode ReadBufferPool.take}.
   */
  putBack(buffer: Uint8Array): void {
    this.#keep(buffer.buffer);
  }

  /**
   * Takes back the bytes of one sent chunk; chunks of other origins are ignored.
   *
   * @param chunk A view into a lent buffer whose bytes are no longer referenced.
   */
  release(chunk: Uint8Array): void {
    const left = this.#outstanding.get(chunk.buffer);
    if (left === undefined) return;
    if (left > chunk.byteLength) {
      this.#outstanding.set(chunk.buffer, left - chunk.byteLength);
      return;
    }
    this.#outstanding.delete(chunk.buffer);
    this.#keep(chunk.buffer);
  }

  #keep(buffer: ArrayBufferLike): void {
    if (this.#free.length < KEPT_BUFFERS && buffer instanceof ArrayBuffer) this.#free.push(buffer);
  }
}

/** Bodies that can read into a pool, with the call that hands them one. */
const poolable = new WeakMap<ReadableStream<Uint8Array>, (pool: ReadBufferPool) => void>();

/**
 * Marks a body that reads through `usePool`'s pool once given one.
 *
 * @param body A body stream that has not been read.
 * @param usePool Gives the body its pool.
 */
export function markPoolable(body: ReadableStream<Uint8Array>, usePool: (pool: ReadBufferPool) => void): void {
  poolable.set(body, usePool);
}

/**
 * Gives `pool` to `body` when the body was marked poolable and nothing has read it yet.
 * Call it right before the only reader of `body` locks it: that reader's consumer then owns
 * every chunk and must {@linkcode ReadBufferPool.release} them once it no longer uses them.
 *
 * @param body An entry body.
 * @param pool The import's pool.
 * @returns Whether the body reads into the pool.
 */
export function adoptPool(body: ReadableStream<Uint8Array>, pool: ReadBufferPool): boolean {
  const usePool = poolable.get(body);
  if (usePool === undefined || body.locked) return false;
  poolable.delete(body);
  usePool(pool);
  return true;
}
