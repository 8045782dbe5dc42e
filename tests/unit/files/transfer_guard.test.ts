// The bounds of one transfer: quotas, deadline, signals, progress, first failure wins.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  SandboxAbortedError,
  SandboxDeadlineError,
  SandboxQuotaError,
  SandboxStoppedError,
} from "../../../lib/sandbox/errors.ts";
import type { NormalizedTransferOptions } from "../../../lib/sandbox/transfer_input.ts";
import { TransferGuard } from "../../../lib/docker/files/_transfer_guard.ts";

function options(overrides: Partial<NormalizedTransferOptions> = {}): NormalizedTransferOptions {
  return {
    deadlineAt: undefined,
    quota: { bytes: undefined, files: undefined },
    signal: undefined,
    onProgress: undefined,
    maxInMemoryPaths: undefined,
    ...overrides,
  };
}

test("TransferGuard admits entries up to the file quota and fails before the next", () => {
  const guard = new TransferGuard("export files", options({ quota: { files: 2, bytes: undefined } }), []);
  guard.admit("a", 0);
  guard.admit("b", 10);
  assert.throws(() => guard.admit("c", 0), (error) => error instanceof SandboxQuotaError && error.code === "quota" && /'c'.*2 entries/.test(error.message));
  // The quota error travels through the byte flow; the exchange is not aborted under it,
  // so what was queued before still reaches the Engine.
  assert.equal(guard.signal.aborted, false);
  assert.ok(guard.failure instanceof SandboxQuotaError);
  assert.throws(() => guard.check(), SandboxQuotaError);
  assert.equal(guard.files, 2);
  // A later asynchronous failure (deadline, signal) still aborts the exchange, with the
  // failure that counts.
  assert.equal(guard.fail(new SandboxDeadlineError("Cannot export files: late")), guard.failure);
  assert.ok(guard.signal.aborted);
  assert.ok(guard.signal.reason instanceof SandboxQuotaError);
});

test("TransferGuard checks the byte quota from declared sizes before anything moves", () => {
  const guard = new TransferGuard("import files", options({ quota: { bytes: 10, files: undefined } }), []);
  guard.admit("a", 6);
  guard.admit("b", 4);
  guard.admit("dir", 0);
  assert.throws(() => guard.admit("c", 1), (error) => error instanceof SandboxQuotaError && /10 bytes/.test(error.message));
  assert.equal(guard.bytes, 0);
});

test("TransferGuard fails at once for a deadline in the past and later for a future one", async () => {
  const past = new TransferGuard("export files", options({ deadlineAt: Date.now() - 1 }), []);
  assert.ok(past.failure instanceof SandboxDeadlineError && past.failure.code === "deadline");
  assert.throws(() => past.check(), SandboxDeadlineError);

  const soon = new TransferGuard("export files", options({ deadlineAt: Date.now() + 30 }), []);
  assert.equal(soon.failure, undefined);
  await new Promise((resolve) => soon.signal.addEventListener("abort", resolve, { once: true }));
  const failure: unknown = soon.failure;
  assert.ok(failure instanceof SandboxDeadlineError);
});

test("TransferGuard names the option to raise when a backend's default deadline passes", async () => {
  const guard = new TransferGuard(
    "read file",
    options({ deadlineAt: Date.now() + 20, deadlineDefault: { ms: 20, source: "policy.deadlines.guestFileMs" } }),
    [],
  );
  await new Promise((resolve) => guard.signal.addEventListener("abort", resolve, { once: true }));
  const failure: unknown = guard.failure;
  assert.ok(failure instanceof SandboxDeadlineError && failure.code === "deadline");
  assert.equal(
    failure.message,
    "Cannot read file: it did not finish within 20 ms (policy.deadlines.guestFileMs, which applies when options.deadlineAt is not set); " +
      "pass options.deadlineAt or raise policy.deadlines.guestFileMs",
  );
});

test("TransferGuard reports the caller's abort and the sandbox's stop; the first failure wins", () => {
  const caller = new AbortController();
  const stop = new AbortController();
  const guard = new TransferGuard("import files", options({ signal: caller.signal }), [stop.signal]);
  caller.abort(new Error("user"));
  stop.abort(new SandboxStoppedError("Cannot continue: stopped"));
  assert.ok(guard.failure instanceof SandboxAbortedError && guard.failure.code === "aborted");
  assert.equal((guard.failure.cause as Error).message, "user");
  assert.equal(guard.settle(new Error("later"), () => new SandboxQuotaError("x")), guard.failure);

  const stopped = new AbortController();
  stopped.abort(new SandboxStoppedError("Cannot continue: stopped"));
  const late = new TransferGuard("import files", options(), [stopped.signal]);
  assert.ok(late.failure instanceof SandboxStoppedError);
});

test("TransferGuard reports progress and turns a throwing callback into an abort", () => {
  const seen: string[] = [];
  const guard = new TransferGuard("export files", options({ onProgress: ({ files, bytes }) => void seen.push(`${files}/${bytes}`) }), []);
  guard.admit("a", 5);
  guard.moved(3);
  guard.moved(2);
  assert.deepEqual(seen, ["1/0", "1/3", "1/5"]);

  const failing = new TransferGuard("export files", options({ onProgress: () => { throw new Error("boom"); } }), []);
  assert.throws(() => failing.admit("a", 0), (error) => error instanceof SandboxAbortedError && (error.cause as Error).message === "boom");
  assert.ok(failing.failure instanceof SandboxAbortedError);
  assert.equal(failing.signal.aborted, false, "thrown into the byte flow, not aborted under it");
});
