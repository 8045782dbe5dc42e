import { test } from "node:test";
import assert from "node:assert/strict";
import {
  SandboxAbandonedOutputError,
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxConflictError,
  SandboxDeadlineError,
  SandboxEngineError,
  SandboxError,
  type SandboxErrorCode,
  SandboxFramingError,
  SandboxOutputLimitError,
  SandboxQuotaError,
  SandboxStateError,
  SandboxStoppedError,
  SandboxUnsupportedError,
} from "../../../lib/sandbox/mod.ts";

type Subclass = new (message: string, options?: { cause?: unknown }) => SandboxError;

const SUBCLASSES: [Subclass, string, SandboxErrorCode][] = [
  [SandboxUnsupportedError, "SandboxUnsupportedError", "unsupported"],
  [SandboxConfigurationError, "SandboxConfigurationError", "configuration"],
  [SandboxStoppedError, "SandboxStoppedError", "stopped"],
  [SandboxQuotaError, "SandboxQuotaError", "quota"],
  [SandboxDeadlineError, "SandboxDeadlineError", "deadline"],
  [SandboxConflictError, "SandboxConflictError", "conflict"],
  [SandboxAbortedError, "SandboxAbortedError", "aborted"],
  [SandboxOutputLimitError, "SandboxOutputLimitError", "output_limit"],
  [SandboxFramingError, "SandboxFramingError", "framing"],
  [SandboxAbandonedOutputError, "SandboxAbandonedOutputError", "abandoned_output"],
  [SandboxEngineError, "SandboxEngineError", "engine"],
  [SandboxStateError, "SandboxStateError", "invalid_state"],
];

test("SandboxError subclasses carry their name, stable code, message and cause", () => {
  const codes = new Set<string>();
  for (const [Type, name, code] of SUBCLASSES) {
    const cause = new Error("underlying");
    const error = new Type("Cannot act: because", { cause });
    assert.ok(error instanceof Type);
    assert.ok(error instanceof SandboxError);
    assert.ok(error instanceof Error);
    assert.equal(error.name, name);
    assert.equal(error.code, code);
    assert.equal(error.message, "Cannot act: because");
    assert.equal(error.cause, cause);
    assert.match(String(error), new RegExp(`^${name}: Cannot act: because`));
    codes.add(code);
  }
  assert.equal(codes.size, SUBCLASSES.length, "every subclass has its own code");
});

test("SandboxError leaves cause absent when none is given", () => {
  const error = new SandboxQuotaError("Cannot import files: too many entries");
  assert.equal("cause" in error, false);
  assert.equal(error.cause, undefined);
});

test("SandboxError base class takes an explicit code", () => {
  const error = new SandboxError("conflict", "Cannot start sandbox: already started");
  assert.equal(error.name, "SandboxError");
  assert.equal(error.code, "conflict");
});

test("SandboxEngineError carries the HTTP status when given", () => {
  const answered = new SandboxEngineError("Cannot inspect container: engine answered 500", {
    status: 500,
  });
  assert.equal(answered.code, "engine");
  assert.equal(answered.status, 500);
  const unreachable = new SandboxEngineError("Cannot connect: refused");
  assert.equal(unreachable.status, undefined);
});
