// The look-behind reader's buffered fast path: peeking and skipping buffered bytes never
// touches the source, and skipping more than is buffered is refused.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteReader } from "../../../lib/streams/byte_reader.ts";

function counted(chunks: Uint8Array[]): { stream: ReadableStream<Uint8Array>; pulls: () => number } {
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      const chunk = chunks.shift();
      if (chunk === undefined) controller.close();
      else controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
  return { stream, pulls: () => pulls };
}

test("ByteReader peekBuffered and skipBuffered consume buffered bytes without reading the source", async () => {
  const { stream, pulls } = counted([Uint8Array.of(1, 2, 3, 4), Uint8Array.of(5)]);
  const reader = new ByteReader(stream);
  assert.deepEqual(reader.peekBuffered(), new Uint8Array(0));
  assert.deepEqual(await reader.read(1), Uint8Array.of(1));
  const pulled = pulls();
  assert.deepEqual(reader.peekBuffered(), Uint8Array.of(2, 3, 4));
  reader.skipBuffered(2);
  assert.equal(reader.buffered, 1);
  assert.equal(pulls(), pulled, "the source was not read");
  assert.deepEqual(await reader.read(8), Uint8Array.of(4));
  assert.deepEqual(await reader.read(8), Uint8Array.of(5));
  assert.equal(await reader.read(8), null);
});

test("ByteReader skipBuffered refuses more bytes than are buffered with a RangeError", async () => {
  const reader = new ByteReader(counted([Uint8Array.of(1, 2, 3)]).stream);
  await reader.read(1);
  assert.throws(() => reader.skipBuffered(3), { name: "RangeError", message: "Cannot skip 3 bytes: only 2 are buffered" });
  assert.deepEqual(await reader.read(8), Uint8Array.of(2, 3), "nothing was consumed");
});
