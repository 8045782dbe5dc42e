// The stop cause of a keeper that stopped on its own, with and without the OOM killer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { keeperStoppedError } from "../../../lib/docker/keeper/keeper_stopped.ts";
import { SandboxStoppedError } from "../../../lib/sandbox/errors.ts";
import { sandboxExitReceiptSchema } from "../../../lib/sandbox/process.ts";

test("keeperStoppedError names the OOM killer, the memory limit and the fix, and sets oomKilled", () => {
  const error = keeperStoppedError(true, 128 * 1024 * 1024);
  assert.ok(error instanceof SandboxStoppedError);
  assert.equal(error.code, "stopped");
  assert.equal(error.oomKilled, true);
  assert.equal(
    error.message,
    "Cannot continue: the keeper container stopped on its own after the kernel's OOM killer acted at the sandbox's 128 MiB memory limit; raise policy.resources.memoryBytes or run less at once",
  );
});

test("keeperStoppedError without the OOM killer says only that it stopped; no oomKilled property", () => {
  const error = keeperStoppedError(false, 128 * 1024 * 1024);
  assert.equal(error.message, "Cannot continue: the keeper container stopped on its own");
  assert.equal(error.oomKilled, undefined);
  assert.equal(Object.hasOwn(error, "oomKilled"), false);
});

test("sandboxExitReceiptSchema takes oomKilled: true on an exited receipt only", () => {
  assert.deepEqual(sandboxExitReceiptSchema.parse({ kind: "exited", code: 137, oomKilled: true }), { kind: "exited", code: 137, oomKilled: true });
  assert.equal(sandboxExitReceiptSchema.safeParse({ kind: "exited", code: 137, oomKilled: false }).success, false);
  assert.equal(sandboxExitReceiptSchema.safeParse({ kind: "killed", reason: "timeout", code: 137, oomKilled: true }).success, false);
});
