/**
 * Steps a caller of the library adds to one sandbox's `destroy()`: run after the sandbox's
 * own resources are gone, in the order added (`openSandbox()` removes the spill directory
 * and the record it made this way). A step that fails fails that `destroy()`; a retry runs
 * every step again, so each must be idempotent.
 *
 * @module
 */

const steps = new WeakMap<object, (() => Promise<void>)[]>();

/** Add `step` to what `destroy()` of `sandbox` does last. */
export function addDestroyStep(sandbox: object, step: () => Promise<void>): void {
  const list = steps.get(sandbox);
  if (list === undefined) steps.set(sandbox, [step]);
  else list.push(step);
}

/** Run the steps added to `sandbox`, one after another; the first failure rejects. */
export async function runDestroySteps(sandbox: object): Promise<void> {
  for (const step of steps.get(sandbox) ?? []) await step();
}
