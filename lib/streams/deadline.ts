/**
 * One race of a promise against a deadline and an `AbortSignal`, for every layer: the caller
 * says which error each ending becomes, so the engine layer raises engine errors and the
 * sandbox layer sandbox errors.
 *
 * @module
 */

/** How {@linkcode raceDeadline} ends early. */
export interface DeadlineRace {
  /** Milliseconds from the call until `onTimeout()` rejects the race. */
  readonly timeoutMs: number;
  /** Rejects the race with `onAbort(signal.reason)` when it aborts (at once if already aborted). */
  readonly signal?: AbortSignal;
  /** The error for an elapsed deadline. */
  readonly onTimeout: () => Error;
  /** The error for an aborted signal; receives `signal.reason`. */
  readonly onAbort: (reason: unknown) => Error;
}

/**
 * Settle with `task`, or reject once `race.timeoutMs` elapsed or `race.signal` aborted,
 * whichever comes first. The task itself runs on (it is not cancelled); the timer and the
 * abort listener are always released.
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
export function raceDeadline<T>(task: Promise<T>, race: DeadlineRace): Promise<T> {
  const { signal } = race;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => finish(() => reject(race.onAbort(signal?.reason)));
    const timer = setTimeout(() => finish(() => reject(race.onTimeout())), race.timeoutMs);
    let done = false;
    function finish(settle: () => void): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settle();
    }
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    task.then((value) => finish(() => resolve(value)), (error) => finish(() => reject(error)));
  });
}
