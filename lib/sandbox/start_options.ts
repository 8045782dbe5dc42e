/**
 * Options shared by every inert reservation's `start()`.
 *
 * @module
 */

/**
 * Options of a reservation's `start()` (sandbox or process).
 *
 * @example
 * ```ts
 * import type { SandboxStartOptions } from "./start_options.ts";
 *
 * const options: SandboxStartOptions = { signal: AbortSignal.timeout(30_000) };
 * ```
 */
export interface SandboxStartOptions {
  /**
   * Cancels startup. An abort rejects `start()` with a `SandboxAbortedError` whose `cause` is
   * the signal's reason; work already entered is joined and cleaned up before it rejects. An
   * abort after `start()` has resolved has no effect.
   *
   * @default {undefined} no cancellation
   */
  readonly signal?: AbortSignal;
}
