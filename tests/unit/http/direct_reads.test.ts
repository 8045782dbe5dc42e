// Direct reads (lib/streams/chunk_reader.ts) of a socket connection's readable deliver what
// its stream reads deliver: the same bytes, the end, the failure, and the cancel.
import assert from "node:assert/strict";
import { test } from "node:test";
import { connectUnixSocket } from "../../../lib/engine/socket/mod.ts";
import { type RawSocket, socketConnectionFromRaw } from "../../../lib/engine/socket/raw_socket.ts";
import { DockerEngineTransportError } from "../../../lib/engine/errors.ts";
import { chunkReader } from "../../../lib/streams/chunk_reader.ts";
import { concat, startFakeEngine } from "../_fake_engine.ts";

/** A raw socket whose reads wait until the test hands out a chunk, an end or an error. */
function scriptedRaw() {
  const waiting: { resolve: (chunk: Uint8Array | null) => void; reject: (error: unknown) => void }[] = [];
  let destroyed = 0;
  const raw: RawSocket = {
    read: () => new Promise((resolve, reject) => waiting.push({ resolve, reject })),
    write: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
    destroy: () => {
      destroyed += 1;
      // As the adapters do: a pending read settles soon after the socket is released.
      queueMicrotask(() => waiting.shift()?.resolve(null));
    },
  };
  return { raw, waiting, destroyed: () => destroyed };
}

test("direct reads of a socket deliver its bytes, then the end, and close its readable", async () => {
  const payload = new Uint8Array(300 * 1024).map((_, index) => index % 251);
  const engine = await startFakeEngine(async (connection) => {
    await connection.write(payload);
    await connection.end();
  });
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const reader = chunkReader(connection.readable);
    // One runtime chunk: 64 KiB on Deno and Node, one Bun receive buffer (up to 512 KiB).
    const maxChunk = "Bun" in globalThis ? 512 * 1024 : 65_536;
    const parts: Uint8Array[] = [];
    for (let chunk = await reader.read(); chunk !== null; chunk = await reader.read()) {
      assert.ok(chunk.byteLength > 0 && chunk.byteLength <= maxChunk, `a chunk of ${chunk.byteLength} bytes`);
      parts.push(chunk);
    }
    assert.deepEqual(concat(parts), payload);
    assert.equal(await reader.read(), null, "the end stays the end");
    reader.releaseLock();
    assert.deepEqual(await connection.readable.getReader().read(), { done: true, value: undefined });
    await connection.close();
  } finally {
    await engine.close();
  }
});

test("a direct read pending when the connection is aborted rejects with the abort reason", async () => {
  const { raw, destroyed } = scriptedRaw();
  const connection = socketConnectionFromRaw(raw);
  const reader = chunkReader(connection.readable);
  const pending = reader.read();
  const reason = new DockerEngineTransportError("deadline", "Cannot read: the deadline passed");
  connection.abort(reason);
  await assert.rejects(pending, (error) => error === reason);
  await assert.rejects(reader.read(), (error) => error === reason);
  assert.equal(destroyed(), 1);
});

test("a direct read pending when the connection is closed ends, and so does the readable", async () => {
  const { raw } = scriptedRaw();
  const connection = socketConnectionFromRaw(raw);
  const reader = chunkReader(connection.readable);
  const pending = reader.read();
  await connection.close();
  assert.equal(await pending, null);
  reader.releaseLock();
  assert.deepEqual(await connection.readable.getReader().read(), { done: true, value: undefined });
});

test("a failing socket read fails the direct read and errors the readable with one connection error", async () => {
  const { raw, waiting } = scriptedRaw();
  const connection = socketConnectionFromRaw(raw);
  const reader = chunkReader(connection.readable);
  const pending = reader.read();
  await Promise.resolve();
  waiting.shift()!.reject(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }));
  const failure = await pending.then(() => assert.fail("the read resolved"), (error: unknown) => error);
  assert.ok(failure instanceof DockerEngineTransportError);
  assert.equal(failure.code, "connection");
  assert.equal(failure.message, "Cannot read from the socket: read ECONNRESET");
  reader.releaseLock();
  await assert.rejects(connection.readable.getReader().read(), (error) => error === failure);
});

test("cancelling through a chunk reader releases the socket once; after the end it does nothing", async () => {
  const first = scriptedRaw();
  const cancelled = chunkReader(socketConnectionFromRaw(first.raw).readable);
  await cancelled.cancel(new Error("not needed"));
  assert.equal(first.destroyed(), 1);

  const second = scriptedRaw();
  const ended = chunkReader(socketConnectionFromRaw(second.raw).readable);
  const pending = ended.read();
  await Promise.resolve();
  second.waiting.shift()!.resolve(null);
  assert.equal(await pending, null);
  await ended.cancel(new Error("late"));
  assert.equal(second.destroyed(), 0, "a readable that ended is not destroyed by a cancel");
});

test("chunkReader reads a stream without direct reads through its default reader", async () => {
  const reader = chunkReader(ReadableStream.from([new Uint8Array([1, 2]), new Uint8Array([3])]));
  assert.deepEqual(await reader.read(), new Uint8Array([1, 2]));
  assert.deepEqual(await reader.read(), new Uint8Array([3]));
  assert.equal(await reader.read(), null);
});
