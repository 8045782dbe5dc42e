import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxDeadlineError } from "../../../lib/sandbox/errors.ts";
import { FIXED_GUEST_ENV } from "../../../lib/sandbox/process.ts";
import { markRunOutput, MAX_RUN_OUTPUT_BYTES, normalizeRunRequest, runOutputOf } from "../../../lib/sandbox/run.ts";
import { assertConfigurationError, assertDeepFrozen } from "./_assert.ts";

test("normalizeRunRequest fills defaults and merges the fixed environment", () => {
  const request = normalizeRunRequest("/bin/echo");
  assert.deepEqual(request, {
    executable: "/bin/echo",
    args: [],
    env: { ...FIXED_GUEST_ENV },
    cwd: undefined,
    stdin: undefined,
    timeoutMs: undefined,
    maxOutputBytes: 8 * 1024 * 1024,
    stderr: "pipe",
    killDescendantsOnExit: false,
    signal: undefined,
  });
  assertDeepFrozen(request);
});

test("normalizeRunRequest keeps explicit options and detaches the arguments", () => {
  const args = ["a", "b c"];
  const signal = new AbortController().signal;
  const request = normalizeRunRequest("/bin/echo", args, {
    env: { LANG: "C" },
    stdin: "in",
    timeoutMs: 5,
    maxOutputBytes: MAX_RUN_OUTPUT_BYTES,
    stderr: "discard",
    killDescendantsOnExit: true,
    signal,
    cwd: "/workspace/work/sub",
  });
  args.push("later");
  assert.equal(request.cwd, "/workspace/work/sub");
  assert.deepEqual(request.args, ["a", "b c"]);
  assert.equal(request.env.LANG, "C");
  assert.equal(request.maxOutputBytes, 2 ** 30);
  assert.equal(request.signal, signal);
  assert.equal(normalizeRunRequest("/bin/true", [], { maxOutputBytes: 0 }).maxOutputBytes, 0);
});

test("normalizeRunRequest names the argument or option it refuses", () => {
  const cases: [() => unknown, string][] = [
    [() => normalizeRunRequest("echo"), "executable"],
    [() => normalizeRunRequest(1 as never), "executable"],
    [() => normalizeRunRequest("/bin/echo", "x" as never), "args"],
    [() => normalizeRunRequest("/bin/echo", ["a\0"]), "args.0"],
    [() => normalizeRunRequest("/bin/echo", [], { env: { PATH: "/bin" } }), "options.env.PATH"],
    [() => normalizeRunRequest("/bin/echo", [], { env: { "A-B": "x" } }), "options.env.A-B"],
    [() => normalizeRunRequest("/bin/echo", [], { stdin: 5 as never }), "options.stdin"],
    [() => normalizeRunRequest("/bin/echo", [], { timeoutMs: 0 }), "options.timeoutMs"],
    [() => normalizeRunRequest("/bin/echo", [], { maxOutputBytes: -1 }), "options.maxOutputBytes"],
    [() => normalizeRunRequest("/bin/echo", [], { maxOutputBytes: MAX_RUN_OUTPUT_BYTES + 1 }), "options.maxOutputBytes"],
    [() => normalizeRunRequest("/bin/echo", [], { stderr: "inherit" as never }), "options.stderr"],
    [() => normalizeRunRequest("/bin/echo", [], { killDescendantsOnExit: 1 as never }), "options.killDescendantsOnExit"],
    [() => normalizeRunRequest("/bin/echo", [], { signal: {} as never }), "options.signal"],
    [() => normalizeRunRequest("/bin/echo", [], { cwd: "tmp" }), "options.cwd"],
    [() => normalizeRunRequest("/bin/echo", [], { cwd: "/tmp/../etc" }), "options.cwd"],
    [() => normalizeRunRequest("/bin/echo", [], { cwd: 1 as never }), "options.cwd"],
    [() => normalizeRunRequest("/bin/echo", [], { directory: "/tmp" } as never), "options.directory"],
  ];
  for (const [run, field] of cases) {
    const error = assertConfigurationError(run, field);
    assert.match(error.message, /^Cannot run process: /);
  }
});

test("runOutputOf reads what markRunOutput attached, once, read-only", () => {
  const stdout = new TextEncoder().encode("partial");
  const error = markRunOutput(new SandboxDeadlineError("Cannot run /bin/sleep: its timeoutMs of 5 ms elapsed"), {
    stdout,
    stderr: new Uint8Array(),
    exit: { kind: "killed", reason: "timeout", code: 137 },
  });
  assert.equal(runOutputOf(error)?.stdout, stdout);
  assert.deepEqual(runOutputOf(error)?.exit, { kind: "killed", reason: "timeout", code: 137 });
  markRunOutput(error, { stdout: new Uint8Array(1), stderr: new Uint8Array(), exit: undefined });
  assert.equal(runOutputOf(error)?.stdout, stdout, "the first record stays");
  assert.throws(() => ((error as unknown as { runOutput: unknown }).runOutput = {}), TypeError);
  assert.equal(runOutputOf(new Error("other")), undefined);
  assert.equal(runOutputOf("text"), undefined);
});
