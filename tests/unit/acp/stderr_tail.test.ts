import { test } from "node:test";
import assert from "node:assert/strict";
import { StderrTail } from "../../../lib/acp/_stderr_tail.ts";

const encoder = new TextEncoder();

/** A stream of `chunks`, then its end. */
function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

test("StderrTail keeps the last limitBytes bytes across chunks of every size and counts all", async () => {
  const bytes = new Uint8Array(10_000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
  for (const limit of [1, 7, 64, 1000, 10_000, 20_000]) {
    for (const size of [1, 3, 64, 999, 4096, 10_000]) {
      const chunks: Uint8Array[] = [];
      for (let offset = 0; offset < bytes.length; offset += size) chunks.push(bytes.slice(offset, offset + size));
      const tail = new StderrTail(streamOf(chunks), limit);
      await tail.done;
      assert.equal(tail.totalBytes, bytes.length);
      assert.deepEqual(tail.bytes(), bytes.slice(Math.max(0, bytes.length - limit)), `limit ${limit}, chunks of ${size}`);
    }
  }
});

test("StderrTail drains a stream that errors and keeps what came before", async () => {
  const pieces = ["before ", "stop"];
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const piece = pieces.shift();
      if (piece === undefined) controller.error(new Error("the sandbox stopped"));
      else controller.enqueue(encoder.encode(piece));
    },
  }, { highWaterMark: 0 });
  const tail = new StderrTail(stream, 8);
  await tail.done;
  assert.equal(tail.text(), "ore stop");
  assert.equal(tail.totalBytes, 11);
});

test("StderrTail.text decodes a character cut by the bound as U+FFFD", async () => {
  const tail = new StderrTail(streamOf([encoder.encode("é!")]), 2);
  await tail.done;
  assert.equal(tail.text(), "\uFFFD!");
});
