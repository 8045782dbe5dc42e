// The byte bound of snapshots, forks, exports and imports without an engine: the option
// wins, then config.defaultExportQuota.bytes, else none; a bad option is named with its fix;
// the refusal's wording names the subject, the bound, its source and the option to raise.
import assert from "node:assert/strict";
import { test } from "node:test";
import { byteBoundError, copyBound, snapshotByteBound } from "../../../lib/docker/snapshots/byte_bound.ts";
import { SandboxConfigurationError, SandboxQuotaError } from "../../../lib/sandbox/errors.ts";

const configured = { defaultExportQuota: { bytes: 100 } };
const unset = { defaultExportQuota: undefined };

test("snapshotByteBound: the option, else the config's default, else none", () => {
  assert.deepEqual(snapshotByteBound(configured, 0, "options.maxBytes", "take a snapshot"), { bytes: 0, source: "options.maxBytes", option: "options.maxBytes" });
  assert.deepEqual(snapshotByteBound(configured, undefined, "request.workspace.maxBytes", "reserve sandbox"), {
    bytes: 100,
    source: "config.defaultExportQuota.bytes, which applies when request.workspace.maxBytes is not set",
    option: "request.workspace.maxBytes",
  });
  assert.equal(snapshotByteBound(unset, undefined, "options.maxBytes", "take a snapshot"), undefined);
  assert.equal(snapshotByteBound(unset, Number.MAX_SAFE_INTEGER, "options.maxBytes", "take a snapshot")?.bytes, Number.MAX_SAFE_INTEGER);
});

test("snapshotByteBound refuses what is not a non-negative safe integer, naming the option", () => {
  for (const bad of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1, "5" as unknown as number]) {
    assert.throws(
      () => snapshotByteBound(configured, bad, "options.maxBytes", "take a snapshot"),
      (error) => error instanceof SandboxConfigurationError && error.message === `Cannot take a snapshot: options.maxBytes must be a non-negative safe integer (bytes); got ${String(bad)}`,
    );
  }
});

test("byteBoundError and copyBound word the refusal once", () => {
  const bound = snapshotByteBound(configured, undefined, "options.maxBytes", "take a snapshot")!;
  const error = byteBoundError("take a snapshot", "the tree of /workspace/work", bound);
  assert.ok(error instanceof SandboxQuotaError);
  assert.equal(error.code, "quota");
  assert.equal(
    error.message,
    "Cannot take a snapshot: the tree of /workspace/work would take its files past 100 bytes (config.defaultExportQuota.bytes, which applies when options.maxBytes is not set); pass a larger options.maxBytes",
  );
  const copy = copyBound(bound, "take a snapshot", "the tree of /workspace/work")!;
  assert.equal(copy.bytes, 100);
  assert.equal(copy.refusal().message, error.message);
  assert.equal(copyBound(undefined, "start sandbox", "snapshot x"), undefined);
});
