import assert from "node:assert/strict";
import { test } from "node:test";
import { connectUnixSocket, detectRuntime } from "../../../lib/engine/socket/mod.ts";
import { DockerEngineTransportError } from "../../../lib/engine/errors.ts";
import { connectWithin } from "../../../lib/engine/socket/_connect_within.ts";
import { bytes, concat, startFakeEngine } from "../_fake_engine.ts";

const decoder = new TextDecoder();

async function readAll(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of readable) parts.push(part);
  return concat(parts);
}

test("detectRuntime names the running runtime", () => {
  const expected = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";
  assert.equal(detectRuntime(), expected);
});

test("connectUnixSocket half-close sends FIN and keeps reading", async () => {
  const engine = await startFakeEngine(async (connection) => {
    const received = await connection.readToEnd();
    await connection.write(`got ${received.byteLength} bytes then EOF;`);
    await connection.sleep(20);
    await connection.write("more after EOF");
    await connection.end();
  });
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const writer = connection.writable.getWriter();
    await writer.write(bytes("hello"));
    writer.releaseLock();
    await connection.closeWrite();
    await connection.closeWrite(); // idempotent
    const answer = decoder.decode(await readAll(connection.readable));
    assert.equal(answer, "got 5 bytes then EOF;more after EOF");
    await connection.close();
    assert.deepEqual(engine.scriptErrors, []);
  } finally {
    await engine.close();
  }
});

test("connectUnixSocket closing the writable sends FIN", async () => {
  const engine = await startFakeEngine(async (connection) => {
    const received = await connection.readToEnd();
    await connection.write(received.reverse());
    await connection.end();
  });
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const writer = connection.writable.getWriter();
    await writer.write(bytes("abc"));
    await writer.close();
    assert.equal(decoder.decode(await readAll(connection.readable)), "cba");
    await connection.close();
  } finally {
    await engine.close();
  }
});

test("connectUnixSocket rejects a missing socket with code connection", async () => {
  await assert.rejects(
    connectUnixSocket("/nonexistent-agentcell-dir/engine.sock"),
    (error: unknown) =>
      error instanceof DockerEngineTransportError && error.code === "connection" &&
      error.message.startsWith("Cannot connect to /nonexistent-agentcell-dir/engine.sock: "),
  );
});

test("connectUnixSocket rejects a relative path with TypeError", async () => {
  await assert.rejects(connectUnixSocket("docker.sock"), TypeError);
  await assert.rejects(connectUnixSocket("/a.sock", { timeoutMs: 0 }), TypeError);
});

test("connectUnixSocket rejects an aborted signal with code aborted", async () => {
  const reason = new Error("stop");
  await assert.rejects(
    connectUnixSocket("/tmp/any.sock", { signal: AbortSignal.abort(reason) }),
    (error: unknown) =>
      error instanceof DockerEngineTransportError && error.code === "aborted" &&
      error.cause === reason,
  );
});

test("connectUnix adapters fail with deadline past timeoutMs and discard a late connection", async () => {
  let arrive!: (value: string) => void;
  const discarded: string[] = [];
  const attempt = connectWithin(
    "/tmp/slow.sock",
    { timeoutMs: 30 },
    () => new Promise<string>((resolve) => arrive = resolve),
    (late) => discarded.push(late),
  );
  await assert.rejects(
    attempt,
    (error: unknown) =>
      error instanceof DockerEngineTransportError && error.code === "deadline" &&
      error.message === "Cannot connect to /tmp/slow.sock: no connection within 30 ms",
  );
  arrive("late connection");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(discarded, ["late connection"]);
});

test("SocketConnection abort errors a pending read with the reason", async () => {
  const engine = await startFakeEngine((connection) => connection.closed);
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const reader = connection.readable.getReader();
    const pending = reader.read();
    const reason = new Error("gone");
    connection.abort(reason);
    await assert.rejects(pending, (error: unknown) => error === reason);
    const writer = connection.writable.getWriter();
    await assert.rejects(writer.write(bytes("x")), (error: unknown) => error === reason);
  } finally {
    await engine.close();
  }
});

test("SocketConnection close ends a pending read", async () => {
  const engine = await startFakeEngine((connection) => connection.closed);
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const reader = connection.readable.getReader();
    const pending = reader.read();
    await connection.close();
    assert.deepEqual(await pending, { done: true, value: undefined });
  } finally {
    await engine.close();
  }
});

test("SocketConnection readable reads no more than a bounded amount ahead", async () => {
  const total = 8 * 1024 * 1024;
  let flushed = 0;
  let stalled!: () => void;
  const measured = new Promise<void>((resolve) => stalled = resolve);
  const engine = await startFakeEngine(async (connection) => {
    const piece = new Uint8Array(64 * 1024).fill(0x61);
    const writes: Promise<void>[] = [];
    for (let sent = 0; sent < total; sent += piece.byteLength) {
      writes.push(
        connection.write(piece).then(() => {
          flushed += piece.byteLength;
        }),
      );
    }
    await measured;
    await Promise.all(writes);
    await connection.end();
  });
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const reader = connection.readable.getReader();
    let delivered = (await reader.read()).value!.byteLength;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Kernel socket buffers hold a few hundred KiB; an unbounded reader would take all 8 MiB.
    assert.ok(flushed - delivered < 2 * 1024 * 1024, `flushed ${flushed}, delivered ${delivered}`);
    stalled();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      delivered += value.byteLength;
    }
    assert.equal(delivered, total);
    await connection.close();
  } finally {
    stalled();
    await engine.close();
  }
});

test("SocketConnection writable resolves only when the peer drains", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const engine = await startFakeEngine(async (connection) => {
    connection.socket.pause();
    await released;
    connection.socket.resume();
    await connection.readToEnd();
  });
  try {
    const connection = await connectUnixSocket(engine.socketPath);
    const writer = connection.writable.getWriter();
    let accepted = 0;
    const big = new Uint8Array(16 * 1024 * 1024);
    const write = writer.write(big).then(() => accepted = big.byteLength);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(accepted, 0);
    release();
    await write;
    await writer.close();
    await engine.scriptDone();
    await connection.close();
  } finally {
    release();
    await engine.close();
  }
});
