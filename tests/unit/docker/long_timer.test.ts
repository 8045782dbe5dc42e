import assert from "node:assert/strict";
import { test } from "node:test";
import { setLongTimeout } from "../../../lib/docker/_long_timer.ts";

test("setLongTimeout chains timers past the single-timer step", async () => {
  const started = Date.now();
  await new Promise<void>((resolve) => setLongTimeout(resolve, 120, 25));
  assert.ok(Date.now() - started >= 115);
});

test("setLongTimeout can be cancelled between steps", async () => {
  let fired = false;
  const cancel = setLongTimeout(() => (fired = true), 100, 20);
  await new Promise((resolve) => setTimeout(resolve, 50));
  cancel();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(fired, false);
});
