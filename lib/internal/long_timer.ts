/**
 * Largest delay one runtime timer (`setTimeout`) accepts, in milliseconds: 2^31 − 1 (about
 * 24.8 days; larger delays fire at once on every runtime). The one place this limit is
 * written: the Engine client's timeouts, the policy's infrastructure deadlines and the ACP
 * bridge's timeouts are bounded by it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Call `fire` after `delayMs` milliseconds, for any positive safe integer delay: delays past
 * 2^31 − 1 ms (about 24.8 days) chain timers (`maxStepMs`, default 2^31 − 1, exists for tests). Returns a function that cancels it.
 */
export function setLongTimeout(fire: () => void, delayMs: number, maxStepMs: number = MAX_TIMER_MS): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;
  const due = Date.now() + delayMs;
  const arm = (remaining: number) => {
    timer = setTimeout(() => {
      if (cancelled) return;
      const left = due - Date.now();
      if (remaining > maxStepMs && left > 0) arm(left);
      else fire();
    }, Math.min(remaining, maxStepMs));
  };
  arm(delayMs);
  return () => {
    cancelled = true;
    clearTimeout(timer);
  };
}
