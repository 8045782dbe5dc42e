// onBodyChunkSent: a producer may reuse a chunk's memory once told, and is told only of
// chunks whose bytes all left.
import assert from "node:assert/strict";
import { test } from "node:test";
import { exchange } from "../../../lib/engine/http/mod.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { readText, transportError } from "./_helpers.ts";

const CHUNK = 100_000;

/**
 * A body that owns two buffers and refills one only after the exchange reported it sent;
 * chunk `i` is filled with byte `i % 251`.
 */
function recyclingBody(chunks: number) {
  const free: Uint8Array[] = [new Uint8Array(CHUNK), new Uint8Array(CHUNK)];
  const enqueued: Uint8Array[] = [];
  let waiting: (() => void) | undefined;
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next === chunks) return controller.close();
      while (free.length === 0) await new Promise<void>((resolve) => waiting = resolve);
      const buffer = free.pop()!.fill(next++ % 251);
      enqueued.push(buffer);
      controller.enqueue(buffer);
    },
  }, { highWaterMark: 0 });
  const sent = (chunk: Uint8Array) => {
    free.push(chunk);
    waiting?.();
  };
  return { body, enqueued, sent };
}

test("onBodyChunkSent hands back each chunk in order once sent, so two buffers carry a whole upload intact", async () => {
  const chunks = 40;
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    let intact = request.body.byteLength === chunks * CHUNK;
    for (let i = 0; intact && i < chunks; i++) {
      intact = request.body.subarray(i * CHUNK, (i + 1) * CHUNK).every((byte) => byte === i % 251);
    }
    const answer = intact ? "intact" : "corrupt";
    await connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${answer.length}\r\n\r\n${answer}`);
    await connection.end();
  });
  try {
    const { body, enqueued, sent } = recyclingBody(chunks);
    const reported: Uint8Array[] = [];
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/containers/c/archive?path=%2F",
      body,
      onBodyChunkSent: (chunk) => {
        reported.push(chunk);
        sent(chunk);
      },
    });
    assert.equal(await readText(response.body), "intact");
    assert.equal(reported.length, chunks);
    reported.forEach((chunk, index) => assert.equal(chunk, enqueued[index], `chunk ${index} is the one enqueued`));
  } finally {
    await engine.close();
  }
});

test("onBodyChunkSent is not told of chunks that were not sent when the Engine answers early", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readHead();
    await connection.write("HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 0\r\n\r\n");
    await connection.end();
  });
  try {
    let enqueued = 0;
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        enqueued += 1;
        controller.enqueue(new Uint8Array(CHUNK));
      },
    }, { highWaterMark: 0 });
    let reportedBytes = 0;
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/containers/c/archive?path=%2F",
      body,
      onBodyChunkSent: (chunk) => void (reportedBytes += chunk.byteLength),
    });
    assert.equal(response.status, 413);
    await readText(response.body);
    assert.ok(reportedBytes <= Number(response.uploadedBytes()), `${reportedBytes} reported, ${response.uploadedBytes()} sent`);
    assert.ok(reportedBytes < enqueued * CHUNK, "the chunk in flight was not reported");
  } finally {
    await engine.close();
  }
});

test("a throwing onBodyChunkSent fails the exchange with aborted", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readHead();
    await connection.closed;
  });
  try {
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(CHUNK)),
    }, { highWaterMark: 0 });
    await assert.rejects(
      exchange({
        socketPath: engine.socketPath,
        method: "PUT",
        target: "/containers/c/archive?path=%2F",
        body,
        onBodyChunkSent: () => {
          throw new Error("pool broke");
        },
      }),
      transportError("aborted", /onBodyChunkSent failed: pool broke/),
    );
  } finally {
    await engine.close();
  }
});

test("exchange rejects a non-function onBodyChunkSent with TypeError before connecting", async () => {
  await assert.rejects(
    exchange({
      socketPath: "/fake.sock",
      method: "PUT",
      target: "/",
      body: new Uint8Array(1),
      onBodyChunkSent: 1 as unknown as () => void,
    }),
    TypeError,
  );
});
