import assert from "node:assert/strict";
import { test } from "node:test";
import { setLongTimeout } from "../../../lib/internal/long_timer.ts";

test("setLongTimeout chains timers past the single-timer step", async () => {
  const started = Date.now();
  await new Promise<void>((resolve) => setLongTimeout(resolve, 120, 25));
  assert.ok(Date.now() - started >= 115);
});

test("setLongTimeout can be cancelled between steps", async () => {
  let fired = false;
  // Cancelled after a few 20 ms steps, far (950 ms) ahead of the due time; checked after it.
  const started = Date.now();
  const cancel = setLongTimeout(() => (fired = true), 1_000, 20);
  await new Promise((resolve) => setTimeout(resolve, 50));
  cancel();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 1_100 - Date.now())));
  assert.equal(fired, false);
});
