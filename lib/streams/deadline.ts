/**
 * One race of a promise against a deadline and an `AbortSignal`, for every layer: the caller
 * says which error each ending becomes, so the engine layer raises engine errors and the
 * sandbox layer sandbox errors.
 *
 * @module
 */

/** How {@linkcode raceDeadline} ends early. */
export interface DeadlineRace<T = unknown> {
  /**
   * Milliseconds from the call until `onTimeout()` rejects the race.
   *
   * @default undefined (no deadline: only the signal ends the race early)
   */
  readonly timeoutMs?: number;
  /**
   * Rejects the race with `onAbort(signal.reason)` when it aborts (at once if already aborted).
   *
   * @default undefined (no signal)
   */
  readonly signal?: AbortSignal;
  /**
   * The error for an elapsed deadline; required with `timeoutMs`.
   *
   * @default undefined
   */
  readonly onTimeout?: () => unknown;
  /** The error for an aborted signal; receives `signal.reason`. */
  readonly onAbort: (reason: unknown) => unknown;
  /**
   * Receives what `task` resolves with after the race already ended (a connection that
   * arrived too late, say), so the caller can release it. Not called for a rejection.
   *
   * @default undefined (a late value is dropped)
   */
  readonly onLate?: (value: T) => void;
}

/**
 * Settle with `task`, or reject once `race.timeoutMs` elapsed or `race.signal` aborted,
 * whichever comes first. The task itself runs on (it is not cancelled); what it resolves
 * with afterwards goes to `race.onLate`. The timer and the abort listener are always
 * released.
 *
 * @param task the work to wait for
 * @param race the deadline, the signal and the errors they become
 * @returns what `task` resolves with
 *
 * @example
 * ```ts
 * import { raceDeadline } from "./deadline.ts";
 *
 * const value = await raceDeadline(Promise.resolve(42), {
 *   timeoutMs: 1_000,
 *   onTimeout: () => new Error("Cannot wait: 1000 ms elapsed"),
 *   onAbort: (reason) => new Error("Cannot wait: aborted", { cause: reason }),
 * });
 * console.assert(value === 42);
 * ```
 */
export function raceDeadline<T>(task: Promise<T>, race: DeadlineRace<T>): Promise<T> {
  const { signal, timeoutMs } = race;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (settle: () => void): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settle();
    };
    const onAbort = () => finish(() => reject(race.onAbort(signal?.reason)));
    task.then(
      (value) => (done ? race.onLate?.(value) : finish(() => resolve(value))),
      (error) => finish(() => reject(error)),
    );
    if (signal?.aborted) return onAbort();
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => finish(() => reject(race.onTimeout?.() ?? new Error(`Cannot wait: ${timeoutMs} ms elapsed`))), timeoutMs);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
