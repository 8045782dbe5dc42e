/**
 * The clean end of an attach stream's outputs, shared by the demultiplexer and the terminal
 * reader: the streams close at once, or — with `confirmEnd` (the caller knows whether the end
 * is real, say once an exec's exit was observed) — when its promise resolves, and error with
 * its rejection reason when it rejects. A stream its consumer cancelled meanwhile is left as
 * it is.
 *
 * @module
 */

/**
 * Close `controllers`, or settle them as `confirmEnd()` says.
 *
 * @param controllers the output streams' controllers
 * @param confirmEnd the caller's confirmation, or `undefined` to close at once
 */
export function endOutputs(
  controllers: readonly ReadableStreamDefaultController<Uint8Array>[],
  confirmEnd: (() => Promise<void>) | undefined,
): void {
  const each = (settle: (controller: ReadableStreamDefaultController<Uint8Array>) => void) => {
    for (const controller of controllers) {
      try {
        settle(controller);
      } catch {
        // Already cancelled by its consumer.
      }
    }
  };
  if (confirmEnd === undefined) return each((controller) => controller.close());
  let confirmed: Promise<void>;
  try {
    confirmed = confirmEnd();
  } catch (error) {
    confirmed = Promise.reject(error);
  }
  confirmed.then(() => each((controller) => controller.close()), (failure: unknown) => each((controller) => controller.error(failure)));
}
