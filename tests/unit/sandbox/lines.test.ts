import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxConfigurationError, SandboxOutputLimitError } from "../../../lib/sandbox/errors.ts";
import { lines } from "../../../lib/sandbox/lines.ts";

const encoder = new TextEncoder();

async function split(parts: (string | Uint8Array)[], maxLineLength?: number): Promise<string[]> {
  const source = ReadableStream.from(parts.map((part) => typeof part === "string" ? encoder.encode(part) : part));
  const seen: string[] = [];
  for await (const line of lines(source, maxLineLength === undefined ? {} : { maxLineLength })) seen.push(line);
  return seen;
}

test("lines splits at \\n, drops one \\r before it, and keeps the text after the last break", async () => {
  assert.deepEqual(await split(["first\r\nsec", "ond\n\nlast"]), ["first", "second", "", "last"]);
  assert.deepEqual(await split(["a\n", "b\n"]), ["a", "b"], "no empty line after the final break");
  assert.deepEqual(await split([]), []);
  assert.deepEqual(await split(["\r\r\n"]), ["\r"]);
  assert.deepEqual(await split(["lone\r"]), ["lone\r"], "a \\r without \\n is text");
});

test("lines decodes UTF-8 across chunk boundaries and replaces malformed bytes", async () => {
  const bytes = encoder.encode("grüße\n");
  assert.deepEqual(await split([bytes.subarray(0, 3), bytes.subarray(3)]), ["grüße"]);
  assert.deepEqual(await split([new Uint8Array([0x61, 0xff, 0x0a])]), ["a\uFFFD"]);
});

test("lines refuses a line longer than maxLineLength with SandboxOutputLimitError and cancels the source", async () => {
  assert.deepEqual(await split(["12345\n", "12345"], 5), ["12345", "12345"]);
  for (const parts of [["123456\n"], ["123", "456", "789"], ["ok\n", "123456"]]) {
    await assert.rejects(split(parts, 5), (error) =>
      error instanceof SandboxOutputLimitError && error.code === "output_limit" &&
      error.message === "Cannot split lines: a line is longer than 5 characters (maxLineLength); raise options.maxLineLength or read the bytes directly");
  }
  let cancelled: unknown;
  const endless = new ReadableStream<Uint8Array>({
    pull: (controller) => controller.enqueue(encoder.encode("x".repeat(1000))),
    cancel: (reason) => void (cancelled = reason),
  });
  await assert.rejects((async () => {
    for await (const _ of lines(endless, { maxLineLength: 10_000 })) { /* never a line */ }
  })(), SandboxOutputLimitError);
  assert.ok(cancelled instanceof SandboxOutputLimitError, "the source was cancelled with the error");
});

test("lines rejects an invalid maxLineLength, naming it", () => {
  for (const bad of [0, 1.5, 2 ** 30 + 1, "1"]) {
    assert.throws(() => lines(ReadableStream.from<Uint8Array>([]), { maxLineLength: bad as number }), (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === "Cannot split lines: options.maxLineLength must be an integer from 1 to 1073741824");
  }
});

test("lines cancels its source when the reader cancels", async () => {
  let cancelled: unknown;
  const source = new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(encoder.encode("one\ntwo\n")),
    cancel: (reason) => void (cancelled = reason),
  });
  const reader = lines(source).getReader();
  assert.deepEqual(await reader.read(), { done: false, value: "one" });
  await reader.cancel("enough");
  assert.equal(cancelled, "enough");
});
