import { test } from "node:test";
import assert from "node:assert/strict";
import {
  FIXED_GUEST_ENV,
  normalizeProcessRequest,
  type SandboxProcessRequest,
} from "../../../lib/sandbox/mod.ts";
import { sandboxExitReceiptSchema } from "../../../lib/sandbox/process.ts";
import { assertConfigurationError, assertDeepFrozen } from "./_assert.ts";

/** Normalises a request the type system would refuse. */
function normalizeUntyped(request: unknown): unknown {
  return normalizeProcessRequest(request as SandboxProcessRequest);
}

test("FIXED_GUEST_ENV holds the fixed guest values and is frozen", () => {
  assert.deepEqual({ ...FIXED_GUEST_ENV }, {
    HOME: "/home/sandbox",
    TMPDIR: "/tmp",
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  });
  assert.ok(Object.isFrozen(FIXED_GUEST_ENV));
});

test("normalizeProcessRequest fills defaults and the fixed environment", () => {
  const request = normalizeProcessRequest({ executable: "/usr/local/bin/agent" });
  assert.deepEqual(request, {
    executable: "/usr/local/bin/agent",
    args: [],
    env: { ...FIXED_GUEST_ENV },
    cwd: undefined,
    maxBufferedOutputBytes: 4 * 1024 * 1024,
    timeoutMs: undefined,
    killDescendantsOnExit: false,
    stderr: "pipe",
    tty: undefined,
  });
  assertDeepFrozen(request);
});

test("normalizeProcessRequest keeps timeoutMs, killDescendantsOnExit and stderr", () => {
  const request = normalizeProcessRequest({ executable: "/bin/sh", timeoutMs: Number.MAX_SAFE_INTEGER, killDescendantsOnExit: true, stderr: "stdout" });
  assert.equal(request.timeoutMs, Number.MAX_SAFE_INTEGER);
  assert.equal(request.killDescendantsOnExit, true);
  assert.equal(request.stderr, "stdout");
  assert.equal(normalizeProcessRequest({ executable: "/bin/sh", timeoutMs: 1, stderr: "discard" }).stderr, "discard");
});

test("normalizeProcessRequest keeps literal arguments and merges the environment in order", () => {
  const args = ["--flag", "$HOME", "two words", "", "; rm -rf /"];
  const env = { ZED: "last", ALPHA: "x=y", EMPTY: "", _under: "ok" };
  const request = normalizeProcessRequest({
    executable: "/bin/sh",
    args,
    env,
    maxBufferedOutputBytes: 1,
  });
  assert.deepEqual(request.args, args);
  assert.deepEqual(Object.keys(request.env), [
    "HOME",
    "TMPDIR",
    "PATH",
    "ZED",
    "ALPHA",
    "EMPTY",
    "_under",
  ]);
  assert.equal(request.env.ALPHA, "x=y");
  assert.equal(request.maxBufferedOutputBytes, 1);
  args.push("later");
  (env as Record<string, string>).LATER = "1";
  assert.equal(request.args.length, 5, "the request is detached from the caller's array");
  assert.equal(request.env.LATER, undefined, "the request is detached from the caller's env");
  assertDeepFrozen(request);
});

test("normalizeProcessRequest accepts fixed variables with their exact values", () => {
  const request = normalizeProcessRequest({
    executable: "/bin/sh",
    env: { PATH: FIXED_GUEST_ENV.PATH, HOME: "/home/sandbox", TMPDIR: "/tmp" },
  });
  assert.deepEqual(request.env, { ...FIXED_GUEST_ENV });
});

test("normalizeProcessRequest rejects a fixed variable with another value naming it", () => {
  for (const name of ["HOME", "TMPDIR", "PATH"] as const) {
    const error = assertConfigurationError(
      () => normalizeProcessRequest({ executable: "/bin/sh", env: { [name]: "/elsewhere" } }),
      `request.env.${name}`,
    );
    assert.equal(
      error.message,
      `Cannot reserve process: request.env.${name} must equal the fixed guest value ` +
        JSON.stringify(FIXED_GUEST_ENV[name]),
    );
  }
});

test("normalizeProcessRequest keeps a __proto__ variable as an ordinary entry", () => {
  const request = normalizeProcessRequest({
    executable: "/bin/sh",
    env: JSON.parse('{"__proto__":"value","B":"2"}'),
  });
  assert.equal(Object.getPrototypeOf(request.env), Object.prototype);
  assert.deepEqual(Object.entries(request.env).slice(3), [["__proto__", "value"], ["B", "2"]]);
});

test("normalizeProcessRequest rejects invalid fields naming the field path", () => {
  const cases: [unknown, string][] = [
    [undefined, "request"],
    [null, "request"],
    [{}, "request.executable"],
    [{ executable: "/bin/sh", shell: true }, "request.shell"],
    [{ executable: 1 }, "request.executable"],
    [{ executable: "" }, "request.executable"],
    [{ executable: "sh" }, "request.executable"],
    [{ executable: "/" }, "request.executable"],
    [{ executable: "/bin/" }, "request.executable"],
    [{ executable: "//bin/sh" }, "request.executable"],
    [{ executable: "/bin/./sh" }, "request.executable"],
    [{ executable: "/bin/../sh" }, "request.executable"],
    [{ executable: "/bin/s\0h" }, "request.executable"],
    [{ executable: `/${"x".repeat(4096)}` }, "request.executable"],
    [{ executable: "/bin/sh", args: "-c" }, "request.args"],
    [{ executable: "/bin/sh", args: ["ok", "n\0ul"] }, "request.args.1"],
    [{ executable: "/bin/sh", args: [1] }, "request.args.0"],
    [{ executable: "/bin/sh", env: "A=1" }, "request.env"],
    [{ executable: "/bin/sh", env: [["A", "1"]] }, "request.env"],
    [{ executable: "/bin/sh", env: new Map([["A", "1"]]) }, "request.env"],
    [{ executable: "/bin/sh", env: { "1A": "x" } }, "request.env.1A"],
    [{ executable: "/bin/sh", env: { "A-B": "x" } }, "request.env.A-B"],
    [{ executable: "/bin/sh", env: { "A=B": "x" } }, "request.env.A=B"],
    [{ executable: "/bin/sh", env: { "": "x" } }, "request.env."],
    [{ executable: "/bin/sh", env: { A: 1 } }, "request.env.A"],
    [{ executable: "/bin/sh", env: { A: "a\0b" } }, "request.env.A"],
    [{ executable: "/bin/sh", maxBufferedOutputBytes: 0 }, "request.maxBufferedOutputBytes"],
    [
      { executable: "/bin/sh", maxBufferedOutputBytes: 2 ** 30 + 1 },
      "request.maxBufferedOutputBytes",
    ],
    [{ executable: "/bin/sh", maxBufferedOutputBytes: 1.5 }, "request.maxBufferedOutputBytes"],
    [{ executable: "/bin/sh", timeoutMs: 0 }, "request.timeoutMs"],
    [{ executable: "/bin/sh", timeoutMs: 1.5 }, "request.timeoutMs"],
    [{ executable: "/bin/sh", timeoutMs: Number.MAX_SAFE_INTEGER + 2 }, "request.timeoutMs"],
    [{ executable: "/bin/sh", killDescendantsOnExit: "yes" }, "request.killDescendantsOnExit"],
    [{ executable: "/bin/sh", stderr: "inherit" }, "request.stderr"],
    [{ executable: "/bin/sh", cwd: "work" }, "request.cwd"],
    [{ executable: "/bin/sh", cwd: "/workspace/work/" }, "request.cwd"],
    [{ executable: "/bin/sh", cwd: "/workspace/./work" }, "request.cwd"],
    [{ executable: "/bin/sh", cwd: 5 }, "request.cwd"],
  ];
  for (const [input, field] of cases) {
    const error = assertConfigurationError(() => normalizeUntyped(input), field);
    assert.match(error.message, /^Cannot reserve process: /);
  }
});

test("normalizeProcessRequest accepts the largest output bound", () => {
  const request = normalizeProcessRequest({
    executable: "/bin/sh",
    maxBufferedOutputBytes: 2 ** 30,
  });
  assert.equal(request.maxBufferedOutputBytes, 2 ** 30);
});

test("sandboxExitReceiptSchema accepts exactly the three receipt shapes", () => {
  assert.deepEqual(sandboxExitReceiptSchema.parse({ kind: "exited", code: 137 }), {
    kind: "exited",
    code: 137,
  });
  for (const reason of ["timeout", "output_limit", "abandoned_output", "framing", "connection", "aborted", "requested"]) {
    assert.deepEqual(sandboxExitReceiptSchema.parse({ kind: "killed", reason, code: 137 }), { kind: "killed", reason, code: 137 });
  }
  assert.deepEqual(
    sandboxExitReceiptSchema.parse({ kind: "unavailable", reason: "sandbox_stopped" }),
    { kind: "unavailable", reason: "sandbox_stopped" },
  );
  for (
    const bad of [
      { kind: "exited" },
      { kind: "exited", code: 1.5 },
      { kind: "exited", code: 0, signal: 9 },
      { kind: "unavailable", reason: "other" },
      { kind: "killed", reason: "timeout" },
      { kind: "killed", reason: "oom", code: 137 },
      { kind: "running" },
    ]
  ) {
    assert.equal(sandboxExitReceiptSchema.safeParse(bad).success, false, JSON.stringify(bad));
  }
});
