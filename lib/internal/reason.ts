/**
 * The reason of a failure, worded to be wrapped: "Cannot <action>: <reason>" with the inner
 * error's own "Cannot " taken off, so a wrapped message reads as one chain of steps
 * ("Cannot start process: create exec: the Engine answered 409 (…)") instead of
 * "Cannot start process: Cannot create exec: …".
 *
 * @module
 */

/** "Cannot " where a message or one of its chained steps begins. */
const STEP_PREFIX = /(^|: )Cannot (?=\S)/gu;

/**
 * The message of `error` as the reason of a wrapping error: every "Cannot " that begins the
 * message or one of its `: `-separated steps is dropped, and leading steps equal to
 * `outerAction` are dropped too ("Cannot start sandbox: Cannot start sandbox: x" → "x").
 *
 * @param error What failed: an `Error` (its message is used) or any value (`String(value)`).
 * @param outerAction The action of the wrapping message ("start process"), when known.
 * @returns The reason, e.g. "create exec: the Engine answered 409 (…)".
 */
export function reasonOf(error: unknown, outerAction?: string): string {
  const message = error instanceof Error ? error.message : String(error);
  let reason = message.replace(STEP_PREFIX, "$1");
  while (outerAction !== undefined && reason.startsWith(`${outerAction}: `)) reason = reason.slice(outerAction.length + 2);
  return reason;
}
