// Bounded memory: a 64 MiB body streams through the reader and the writer one bounded
// chunk at a time, and the source is pulled only as fast as the consumer reads.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readTar } from "../../../lib/tar/read_tar.ts";
import { writeTar } from "../../../lib/tar/write_tar.ts";
import { end, header } from "./_build.ts";

const SIZE = 64 * 1024 * 1024;

/** A lazily generated archive holding one 64 MiB file, in `chunk`-byte source chunks. */
function lazyArchive(chunk: number): { stream: ReadableStream<Uint8Array>; pulls: () => number } {
  let pulls = 0;
  let sent = 0;
  const pieces = function* (): Generator<Uint8Array> {
    yield header({ name: "big.bin", size: SIZE });
    while (sent < SIZE) {
      const length = Math.min(chunk, SIZE - sent);
      sent += length;
      yield new Uint8Array(length).fill(sent % 256);
    }
    yield end();
  }();
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      const { done, value } = pieces.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
  }, { highWaterMark: 0 });
  return { stream, pulls: () => pulls };
}

test("readTar streams a 64 MiB body in bounded chunks, pulling the source lazily", { timeout: 60_000 }, async () => {
  const chunk = 100_000; // larger than 64 KiB: the reader must split it
  const { stream, pulls } = lazyArchive(chunk);
  let largest = 0;
  let total = 0;
  for await (const entry of readTar(stream)) {
    const reader = entry.body.getReader();
    for (let reads = 1;; reads++) {
      const { done, value } = await reader.read();
      if (done) break;
      largest = Math.max(largest, value.length);
      total += value.length;
      // A slow consumer: the source is never more than one chunk ahead of what was read.
      assert.ok(pulls() <= 2 + Math.ceil(total / chunk), `pulls ${pulls()} after ${total} bytes`);
      if (reads % 256 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
  assert.equal(total, SIZE);
  assert.ok(largest <= 65_536, `largest chunk ${largest}`);
});

test("writeTar streams a 64 MiB body in bounded chunks, pulling the body lazily", { timeout: 60_000 }, async () => {
  let pulls = 0;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      if (sent === SIZE) return controller.close();
      const length = Math.min(200_000, SIZE - sent);
      sent += length;
      controller.enqueue(new Uint8Array(length));
    },
  }, { highWaterMark: 0 });
  let largest = 0;
  let total = 0;
  for await (const chunk of writeTar([{ path: "big.bin", type: "file", mode: 0o644, mtime: 0, size: SIZE, body }])) {
    largest = Math.max(largest, chunk.length);
    total += chunk.length;
    assert.ok(pulls <= 2 + Math.ceil(total / 200_000), `pulls ${pulls} after ${total} bytes`);
  }
  assert.equal(total, 512 + SIZE + 1024);
  assert.ok(largest <= 65_536, `largest chunk ${largest}`);
});
