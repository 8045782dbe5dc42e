import { test } from "node:test";
import assert from "node:assert/strict";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";
import { normalizeProcessRequest, type SandboxProcessRequest } from "../../../lib/sandbox/process.ts";
import { DEFAULT_TERM, normalizeTerminalSize, type SandboxTerminalSize } from "../../../lib/sandbox/terminal.ts";
import { assertDeepFrozen } from "./_assert.ts";

function reserve(tty: unknown, env?: Record<string, string>) {
  return normalizeProcessRequest({ executable: "/bin/sh", tty, env } as SandboxProcessRequest);
}

function assertRefused(run: () => unknown, message: string): void {
  assert.throws(run, (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === message);
}

test("normalizeProcessRequest tty fills term with xterm-256color and sets TERM", () => {
  const request = reserve({ columns: 80, rows: 24 });
  assert.deepEqual(request.tty, { columns: 80, rows: 24, term: DEFAULT_TERM });
  assert.equal(DEFAULT_TERM, "xterm-256color");
  assert.equal(request.env.TERM, "xterm-256color");
  assert.deepEqual(Object.keys(request.env), ["HOME", "TMPDIR", "PATH", "TERM"]);
  assertDeepFrozen(request);
});

test("normalizeProcessRequest tty keeps term, the bounds 1 and 65535, and an equal env.TERM", () => {
  const request = reserve({ columns: 65535, rows: 1, term: "vt100" }, { TERM: "vt100", LANG: "C" });
  assert.deepEqual(request.tty, { columns: 65535, rows: 1, term: "vt100" });
  assert.equal(request.env.TERM, "vt100");
  assert.equal(reserve({ columns: 1, rows: 65535, term: "screen.xterm-256color" }).env.TERM, "screen.xterm-256color");
});

test("normalizeProcessRequest without tty adds no TERM", () => {
  const request = normalizeProcessRequest({ executable: "/bin/sh" });
  assert.equal(request.tty, undefined);
  assert.equal(Object.hasOwn(request.env, "TERM"), false);
});

test("normalizeProcessRequest tty rejects sizes outside 1 to 65535 naming the field and the range", () => {
  const width = "must be an integer from 1 to 65535: the terminal's width in character cells";
  const height = "must be an integer from 1 to 65535: the terminal's height in character cells";
  for (const columns of [0, 65536, 1.5, -1, "80", Number.NaN]) {
    assertRefused(() => reserve({ columns, rows: 24 }), `Cannot reserve process: request.tty.columns ${width}`);
  }
  for (const rows of [0, 65536, 2.5, null]) {
    assertRefused(() => reserve({ columns: 80, rows }), `Cannot reserve process: request.tty.rows ${height}`);
  }
  assertRefused(() => reserve({ columns: 80 }), "Cannot reserve process: request.tty.rows is required");
});

test("normalizeProcessRequest tty rejects a bad shape, an unknown field and a bad term", () => {
  assertRefused(() => reserve(true), "Cannot reserve process: request.tty must be an object { columns, rows, term? }");
  assertRefused(() => reserve({ columns: 80, rows: 24, cols: 80 }), "Cannot reserve process: request.tty.cols is not a known field");
  const term = 'must be 1 to 64 characters of [A-Za-z0-9._+-], such as "xterm-256color"';
  for (const bad of ["", "xterm 256", "x".repeat(65), "xterm\n", "ü"]) {
    assertRefused(() => reserve({ columns: 80, rows: 24, term: bad }), `Cannot reserve process: request.tty.term ${term}`);
  }
  assertRefused(
    () => reserve({ columns: 80, rows: 24, term: 7 }),
    'Cannot reserve process: request.tty.term must be a string such as "xterm-256color"',
  );
});

test("normalizeProcessRequest tty rejects an env.TERM that differs from tty.term, saying where to set it", () => {
  assertRefused(
    () => reserve({ columns: 80, rows: 24 }, { TERM: "dumb" }),
    'Cannot reserve process: request.env.TERM "dumb" differs from request.tty.term "xterm-256color"; set the terminal type once, as request.tty.term',
  );
});

test("normalizeTerminalSize accepts the bounds and rejects what is out of range naming size.<field>", () => {
  assert.deepEqual(normalizeTerminalSize({ columns: 1, rows: 65535 }), { columns: 1, rows: 65535 });
  const resize = (size: unknown) => () => normalizeTerminalSize(size as SandboxTerminalSize);
  assertRefused(resize({ columns: 0, rows: 10 }), "Cannot resize process: size.columns must be an integer from 1 to 65535: the terminal's width in character cells");
  assertRefused(resize({ columns: 10, rows: 70000 }), "Cannot resize process: size.rows must be an integer from 1 to 65535: the terminal's height in character cells");
  assertRefused(resize({ columns: 10, rows: 10, term: "vt100" }), "Cannot resize process: size.term is not a known field");
  assertRefused(resize(undefined), "Cannot resize process: size is required");
  assertRefused(resize([80, 24]), "Cannot resize process: size must be an object { columns, rows }");
});
