import { test } from "node:test";
import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxStateError } from "../../../lib/sandbox/errors.ts";
import { AcpPermissionRequest, denyOutcome, type PermissionOption, type RequestPermissionOutcome } from "../../../lib/acp/mod.ts";

const allow: PermissionOption = { optionId: "yes", name: "Allow", kind: "allow_once" };
const always: PermissionOption = { optionId: "always", name: "Always", kind: "allow_always" };
const never: PermissionOption = { optionId: "never", name: "Never", kind: "reject_always" };
const once: PermissionOption = { optionId: "no", name: "Reject", kind: "reject_once" };

/** A request with `options` and the answers it sent. */
function request(options: PermissionOption[]): { request: AcpPermissionRequest; sent: RequestPermissionOutcome[] } {
  const sent: RequestPermissionOutcome[] = [];
  const made = new AcpPermissionRequest(
    { sessionId: "s", toolCall: { toolCallId: "t", title: "Write x" }, options },
    (outcome) => sent.push(outcome),
  );
  return { request: made, sent };
}

test("denyOutcome prefers reject_once, then reject_always, else cancelled", () => {
  assert.deepEqual(denyOutcome([allow, never, once]), { outcome: "selected", optionId: "no" });
  assert.deepEqual(denyOutcome([allow, never]), { outcome: "selected", optionId: "never" });
  assert.deepEqual(denyOutcome([allow, always]), { outcome: "cancelled" });
  assert.deepEqual(denyOutcome([]), { outcome: "cancelled" });
});

test("AcpPermissionRequest.select sends exactly one answer; every further answer throws", () => {
  const { request: permission, sent } = request([allow, once]);
  assert.equal(permission.outcome, undefined);
  permission.select("yes");
  assert.deepEqual(sent, [{ outcome: "selected", optionId: "yes" }]);
  assert.deepEqual(permission.outcome, { outcome: "selected", optionId: "yes" });
  for (const again of [() => permission.select("no"), () => permission.deny(), () => permission.select("yes")]) {
    assert.throws(again, (error) =>
      error instanceof SandboxStateError && error.code === "invalid_state" &&
      error.message === 'Cannot answer permission request: it was already answered (selected "yes"); each request takes one answer');
  }
  permission.cancel("the turn was cancelled");
  assert.equal(sent.length, 1);
  assert.equal(permission.signal.aborted, false);
});

test("AcpPermissionRequest.select refuses an option that was not offered and stays open", () => {
  const { request: permission, sent } = request([allow, once]);
  assert.throws(() => permission.select("maybe"), (error) =>
    error instanceof SandboxConfigurationError && error.code === "configuration" &&
    error.message === 'Cannot answer permission request: optionId "maybe" is not one of the offered options ("yes", "no"); pass one of them');
  assert.deepEqual(sent, []);
  permission.deny();
  assert.deepEqual(sent, [{ outcome: "selected", optionId: "no" }]);
  assert.throws(() => permission.deny(), (error) =>
    error instanceof SandboxStateError &&
    error.message === 'Cannot answer permission request: it was already answered (denied with "no"); each request takes one answer');
});

test("AcpPermissionRequest.deny without a reject option answers cancelled", () => {
  const { request: permission, sent } = request([allow]);
  permission.deny();
  assert.deepEqual(sent, [{ outcome: "cancelled" }]);
  assert.throws(() => permission.select("yes"), (error) =>
    error instanceof SandboxStateError &&
    error.message === "Cannot answer permission request: it was already answered (denied as cancelled); each request takes one answer");
});

test("AcpPermissionRequest cancelled by the bridge aborts its signal and refuses later answers", () => {
  const { request: permission, sent } = request([allow, once]);
  permission.cancel("the turn was cancelled");
  assert.deepEqual(sent, [{ outcome: "cancelled" }]);
  assert.equal(permission.signal.aborted, true);
  assert.throws(() => permission.select("yes"), (error) =>
    error instanceof SandboxStateError &&
    error.message === "Cannot answer permission request: it was already answered (cancelled: the turn was cancelled); each request takes one answer");
  assert.ok(Object.isFrozen(permission.options) && Object.isFrozen(permission.outcome));
});
