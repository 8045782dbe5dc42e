/**
 * A bounded event queue read as an async iterable: when the reader does not keep up, the
 * oldest event is dropped and counted, so memory stays at most `capacity` events.
 *
 * @module
 */

/** The queue; `end()` lets iteration finish once the queue is empty. */
export class BoundedEvents<T> implements AsyncIterable<T> {
  /** Most events kept unread. */
  readonly capacity: number;
  #queue: T[] = [];
  #dropped = 0;
  #ended = false;
  #waiters: (() => void)[] = [];

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Events dropped because the queue was full (the oldest go first). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Queue one event (dropping the oldest when full). */
  push(event: T): void {
    if (this.#ended) return;
    if (this.#queue.length >= this.capacity) {
      this.#queue.shift();
      this.#dropped++;
    }
    this.#queue.push(event);
    this.#waiters.shift()?.();
  }

  /** No more events: iteration ends once the queue is empty. */
  end(): void {
    this.#ended = true;
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Each event once, in order. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const next = this.#queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((wake) => this.#waiters.push(wake));
    }
  }
}
