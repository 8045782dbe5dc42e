import assert from "node:assert/strict";
import { test } from "node:test";
import {
  exchange,
  type SocketConnection,
  type UnixConnector,
} from "../../../lib/engine/http/mod.ts";
import { connectUnixSocket } from "../../../lib/engine/socket/mod.ts";
import { bytes, startFakeEngine } from "../_fake_engine.ts";
import { delay } from "./_helpers.ts";

/** Wraps the runtime adapter and counts the bytes the HTTP client pulled from it. */
function countingConnector(): { connector: UnixConnector; adapterBytes: () => number } {
  let adapterBytes = 0;
  const connector: UnixConnector = async (path, options) => {
    const inner = await connectUnixSocket(path, options);
    const reader = inner.readable.getReader();
    const readable = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        adapterBytes += value.byteLength;
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
    const connection: SocketConnection = {
      readable,
      writable: inner.writable,
      closeWrite: () => inner.closeWrite(),
      close: () => inner.close(),
      abort: (reason) => inner.abort(reason),
    };
    return connection;
  };
  return { connector, adapterBytes: () => adapterBytes };
}

for (const framing of ["Content-Length", "chunked"] as const) {
  test(`exchange reads a slowly consumed ${framing} body with bounded read-ahead`, async () => {
    const total = 8 * 1024 * 1024;
    const piece = new Uint8Array(256 * 1024).map((_, index) => index % 253);
    let flushed = 0;
    const engine = await startFakeEngine(async (connection) => {
      await connection.readRequest();
      const chunked = framing === "chunked";
      await connection.write(
        `HTTP/1.1 200 OK\r\n${
          chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${total}`
        }\r\n\r\n`,
      );
      for (let sent = 0; sent < total; sent += piece.byteLength) {
        if (chunked) await connection.write(`${piece.byteLength.toString(16)}\r\n`);
        await connection.write(piece);
        if (chunked) await connection.write("\r\n");
        flushed += piece.byteLength;
      }
      if (chunked) await connection.write("0\r\n\r\n");
      await connection.end();
    });
    try {
      const { connector, adapterBytes } = countingConnector();
      const response = await exchange({
        socketPath: engine.socketPath,
        method: "GET",
        target: "/export",
        connector,
      });
      const reader = response.body.getReader();
      let delivered = 0;
      let maxAhead = 0;
      let maxFlushedAhead = 0;
      let reads = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        assert.ok(value.byteLength <= 65_536);
        for (let index = 0; index < value.byteLength; index += 4_099) {
          assert.equal(value[index], (delivered + index) % piece.byteLength % 253);
        }
        delivered += value.byteLength;
        // Read-ahead inside the client: what it took from the adapter and has not delivered.
        maxAhead = Math.max(maxAhead, adapterBytes() - delivered);
        if (++reads % 8 === 0) {
          await delay(2);
          // What the engine got rid of but the consumer has not seen (kernel buffers included).
          maxFlushedAhead = Math.max(maxFlushedAhead, flushed - delivered);
        }
      }
      assert.equal(delivered, total);
      assert.equal(response.downloadedBytes(), BigInt(total));
      // At most one runtime chunk (64 KiB on Deno and Node, one Bun receive buffer) plus framing.
      assert.ok(maxAhead <= 512 * 1024 + 64, `client read ${maxAhead} bytes ahead`);
      assert.ok(maxFlushedAhead < 2 * 1024 * 1024, `engine flushed ${maxFlushedAhead} bytes ahead`);
    } finally {
      await engine.close();
    }
  });
}

test("exchange writes a streamed upload only as fast as the Engine reads it", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const engine = await startFakeEngine(async (connection) => {
    connection.socket.pause();
    await released;
    connection.socket.resume();
    const request = await connection.readRequest();
    await connection.write(
      `HTTP/1.1 200 OK\r\nContent-Length: ${String(request.body.byteLength).length}\r\n\r\n`,
    );
    await connection.write(String(request.body.byteLength));
    await connection.end();
  });
  try {
    let produced = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (produced >= 32 * 1024 * 1024) return controller.close();
        produced += 65_536;
        controller.enqueue(new Uint8Array(65_536));
      },
    }, { highWaterMark: 0 });
    const pending = exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/archive",
      body: upload,
    });
    await delay(200);
    // Kernel buffers take a few hundred KiB; the producer must not run ahead of them.
    assert.ok(
      produced < 4 * 1024 * 1024,
      `produced ${produced} bytes while the Engine read nothing`,
    );
    release();
    const response = await pending;
    assert.equal(
      new TextDecoder().decode(await new Response(response.body).arrayBuffer()),
      String(32 * 1024 * 1024),
    );
    assert.equal(response.uploadedBytes(), BigInt(32 * 1024 * 1024));
  } finally {
    release();
    await engine.close();
  }
});

test("exchange keeps the request head and a small body in one write", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 204 No Content\r\n\r\n");
    await connection.end();
  });
  try {
    const writes: number[] = [];
    const connector: UnixConnector = async (path, options) => {
      const inner = await connectUnixSocket(path, options);
      const writer = inner.writable.getWriter();
      return {
        readable: inner.readable,
        writable: new WritableStream<Uint8Array>({
          write: (chunk) => {
            writes.push(chunk.byteLength);
            return writer.write(chunk);
          },
        }),
        closeWrite: () => inner.closeWrite(),
        close: () => inner.close(),
        abort: (reason) => inner.abort(reason),
      };
    };
    const body = bytes(JSON.stringify({ Cmd: ["true"] }));
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/x",
      body,
      connector,
    });
    await response.body.cancel();
    assert.equal(writes.length, 1);
  } finally {
    await engine.close();
  }
});
