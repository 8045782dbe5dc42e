import { test } from "node:test";
import assert from "node:assert/strict";
import { terminalOutput, type TerminalOutputOptions } from "../../../lib/engine/frames/terminal_output.ts";
import { DockerEngineOutputError } from "../../../lib/engine/errors.ts";

const encoder = new TextEncoder();

function recording(overrides: Partial<TerminalOutputOptions> = {}) {
  const faults: DockerEngineOutputError[] = [];
  const options: TerminalOutputOptions = { maxBufferedOutputBytes: 1024, onFault: (error) => void faults.push(error), ...overrides };
  return { faults, options };
}

test("terminalOutput passes the terminal's bytes through unchanged, frame-like bytes included; stderr is empty", async () => {
  // Bytes a frame parser would read as a header (stream 1, length 5) stay text here.
  const chunks = [new Uint8Array([1, 0, 0, 0, 0, 0, 0, 5]), encoder.encode("$ ls\r\n")];
  const { faults, options } = recording();
  const output = terminalOutput(ReadableStream.from(chunks), options);
  const [out, err] = await Promise.all([new Response(output.stdout).arrayBuffer(), new Response(output.stderr).text()]);
  assert.deepEqual(new Uint8Array(out), new Uint8Array([1, 0, 0, 0, 0, 0, 0, 5, ...encoder.encode("$ ls\r\n")]));
  assert.equal(err, "");
  await output.done;
  assert.deepEqual(faults, []);
});

test("terminalOutput faults with output_limit when unread bytes would pass maxBufferedOutputBytes", async () => {
  const { faults, options } = recording({ maxBufferedOutputBytes: 10 });
  const output = terminalOutput(ReadableStream.from([new Uint8Array(6), new Uint8Array(5)]), options);
  await assert.rejects(output.done, (error) => error instanceof DockerEngineOutputError && error.code === "output_limit");
  assert.equal(faults.length, 1);
  assert.match(faults[0].message, /^Cannot read terminal output: unread terminal output would exceed 10 bytes \(maxBufferedOutputBytes\)/);
  await assert.rejects(new Response(output.stdout).text(), (error) => error instanceof DockerEngineOutputError && error.code === "output_limit");
});

test("terminalOutput within the bound while read: 64 chunks of the whole bound arrive", async () => {
  const chunks = Array.from({ length: 64 }, (_, index) => new Uint8Array(1024).fill(index));
  const output = terminalOutput(ReadableStream.from(chunks), recording().options);
  let total = 0;
  for await (const chunk of output.stdout) total += chunk.byteLength;
  assert.equal(total, 64 * 1024);
  await output.done;
});

test("terminalOutput reports a cancelled stdout as abandoned and a failed source as source_failed", async () => {
  const pending = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) });
  const abandoned = recording();
  const first = terminalOutput(pending, abandoned.options);
  await first.stdout.cancel(new Error("gone"));
  await assert.rejects(first.done, (error) => error instanceof DockerEngineOutputError && error.code === "abandoned");
  const failed = recording();
  const broken = new ReadableStream<Uint8Array>({ start: (controller) => controller.error(new Error("reset")) });
  const second = terminalOutput(broken, failed.options);
  await assert.rejects(second.done, (error) => error instanceof DockerEngineOutputError && error.code === "source_failed");
  assert.equal((failed.faults[0].cause as Error).message, "reset");
});

test("terminalOutput closes stdout only once confirmEnd resolves, and errors it when it rejects", async () => {
  const refused = new Error("exit not observed");
  const output = terminalOutput(ReadableStream.from([encoder.encode("cut")]), { ...recording().options, confirmEnd: () => Promise.reject(refused) });
  await output.done;
  await assert.rejects(new Response(output.stdout).text(), (error) => error === refused);
});

test("terminalOutput refuses a bad bound or fault callback with a TypeError", () => {
  for (const maxBufferedOutputBytes of [0, 1.5, Number.MAX_SAFE_INTEGER + 1]) {
    assert.throws(() => terminalOutput(ReadableStream.from([]), { maxBufferedOutputBytes, onFault: () => {} }), TypeError);
  }
  assert.throws(() => terminalOutput(ReadableStream.from([]), { maxBufferedOutputBytes: 1, onFault: 1 as never }), TypeError);
});
