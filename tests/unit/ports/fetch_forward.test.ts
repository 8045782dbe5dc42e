// fetch and forwardPort over the relay channel in one process (no engine): the guest servers
// are loopback servers of the test, the relay program runs in-process. Byte-exact bodies,
// chunked decoding, every fetch bound pushed past with its exact error, and a forward with a
// WebSocket echo, its connection bound, byte bound and events.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { type AddressInfo, connect as netConnect, createServer, type Socket } from "node:net";
import { test } from "node:test";
import { SandboxConnectionError, type SandboxForwardEvent } from "../../../lib/sandbox/ports.ts";
import { fetchRelayed } from "../../../lib/docker/ports/fetch.ts";
import { forwardRelayed } from "../../../lib/docker/ports/forward.ts";
import { MAX_SANDBOX_CONNECTIONS } from "../../../lib/sandbox/ports.ts";
import { loopbackRelay } from "./_loopback_relay.ts";
import { webSocketRoundTrip } from "./_websocket.ts";

const running = () => {};

async function httpServer(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ server: HttpServer; port: number }> {
  const server = createHttpServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as AddressInfo).port };
}

async function rawServer(onSocket: (socket: Socket) => void): Promise<{ close: () => void; port: number }> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    onSocket(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

function withChannel() {
  const loop = loopbackRelay();
  const connect = async (port: number, options: { maxBytes?: number; signal?: AbortSignal; timeoutMs?: number }) =>
    await loop.channel.open(port, options.maxBytes).promise;
  return { loop, connect };
}

test("fetchRelayed gets a body byte-exact (length-delimited and chunked) with status and headers", async () => {
  const body = new Uint8Array(1_000_000).map((_, i) => (i * 31) & 0xff);
  const { server, port } = await httpServer((request, response) => {
    if (request.url === "/chunked") {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      for (let offset = 0; offset < body.byteLength; offset += 70_000) response.write(body.subarray(offset, offset + 70_000));
      response.end();
    } else if (request.url === "/echo" && request.method === "POST") {
      const chunks: Uint8Array[] = [];
      request.on("data", (chunk) => chunks.push(chunk));
      request.on("end", () => response.end(`${request.headers.host} ${request.headers["x-test"]} ${Buffer.concat(chunks).byteLength}`));
    } else response.end(body);
  });
  const { loop, connect } = withChannel();
  try {
    const plain = await fetchRelayed(connect, port, "/file");
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get("content-length"), String(body.byteLength));
    assert.deepEqual(new Uint8Array(await plain.arrayBuffer()), body);
    const chunked = await fetchRelayed(connect, port, `http://localhost:${port}/chunked`);
    assert.equal(chunked.headers.get("transfer-encoding"), "chunked");
    assert.deepEqual(new Uint8Array(await chunked.arrayBuffer()), body);
    const posted = await fetchRelayed(connect, port, new Request("http://app.test/echo", { method: "POST", headers: { "x-test": "yes" }, body: "12345" }));
    assert.equal(await posted.text(), "app.test yes 5");
    const head = await fetchRelayed(connect, port, new Request(`http://localhost:${port}/file`, { method: "HEAD" }));
    assert.equal(head.body, null);
  } finally {
    loop.relay.close();
    server.close();
  }
});

test("fetchRelayed bounds: maxHeadBytes, maxBodyBytes, timeoutMs and signal each fail with their exact error", async () => {
  const { server, port } = await httpServer((request, response) => {
    if (request.url === "/big-head") response.writeHead(200, { "x-big": "y".repeat(4000) }).end("ok");
    else if (request.url === "/silent") return; // never answers
    else response.end("z".repeat(5000));
  });
  const { loop, connect } = withChannel();
  try {
    await assert.rejects(fetchRelayed(connect, port, "/big-head", { maxHeadBytes: 2048 }), (error: unknown) => {
      assert.equal((error as { code?: string }).code, "quota");
      assert.match((error as Error).message, /^Cannot fetch from port \d+ in the sandbox: the response is larger than options\.maxHeadBytes \(2048 bytes\)$/);
      return true;
    });
    const big = await fetchRelayed(connect, port, "/body", { maxBodyBytes: 4000 });
    await assert.rejects(big.arrayBuffer(), (error: unknown) => {
      assert.equal((error as { code?: string }).code, "quota");
      assert.match((error as Error).message, /larger than options\.maxBodyBytes \(4000 bytes\)$/);
      return true;
    });
    await assert.rejects(fetchRelayed(connect, port, "/silent", { timeoutMs: 300 }), (error: unknown) => {
      assert.equal((error as { code?: string }).code, "deadline");
      assert.match((error as Error).message, /took longer than 300 ms \(options\.timeoutMs\)$/);
      return true;
    });
    const controller = new AbortController();
    const pending = fetchRelayed(connect, port, "/silent", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("enough")), 50);
    await assert.rejects(pending, (error: unknown) => (error as { code?: string }).code === "aborted");
    await assert.rejects(fetchRelayed(connect, 0, "/"), (error: unknown) => {
      assert.equal((error as { code?: string }).code, "configuration");
      assert.match((error as Error).message, /port must be an integer from 1 to 65535/);
      return true;
    });
    await assert.rejects(fetchRelayed(connect, port, "ftp://x/"), /must be a path such as "\/" or an http: URL/);
  } finally {
    loop.relay.close();
    server.close();
  }
});

test("fetchRelayed: a server that closes mid-body or answers garbage fails typed, never a normal end", async () => {
  const raw = await rawServer((socket) => {
    socket.once("data", (chunk: Uint8Array) => {
      const line = new TextDecoder().decode(chunk).split("\r\n")[0];
      if (line.includes("/cut")) socket.end("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..");
      else if (line.includes("/silent-close")) socket.end();
      else socket.end("SSH-2.0-not-http\r\n\r\n");
    });
  });
  const { loop, connect } = withChannel();
  try {
    const cut = await fetchRelayed(connect, raw.port, "/cut");
    await assert.rejects(cut.text(), (error: unknown) => error instanceof SandboxConnectionError && error.reason === "invalid_response" && /10 of 100 bytes/.test(error.message));
    await assert.rejects(fetchRelayed(connect, raw.port, "/silent-close"), (error: unknown) => error instanceof SandboxConnectionError && error.reason === "reset" && /without answering/.test(error.message));
    await assert.rejects(fetchRelayed(connect, raw.port, "/garbage"), (error: unknown) => error instanceof SandboxConnectionError && error.reason === "invalid_response");
  } finally {
    loop.relay.close();
    raw.close();
  }
});

/** A minimal WebSocket echo server (RFC 6455: handshake, unmasked server frames, text and binary echo). */
function webSocketEcho(socket: Socket): void {
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  socket.on("data", (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!upgraded) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const key = /sec-websocket-key: *([^\r\n]+)/iu.exec(buffer.subarray(0, end).toString("latin1"))?.[1] ?? "";
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      buffer = buffer.subarray(end + 4);
      upgraded = true;
    }
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0] & 0x0f;
      let length = buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) (length = buffer.readUInt16BE(2), offset = 4);
      else if (length === 127) (length = Number(buffer.readBigUInt64BE(2)), offset = 10);
      const masked = (buffer[1] & 0x80) !== 0;
      const total = offset + (masked ? 4 : 0) + length;
      if (buffer.length < total) return;
      const mask = masked ? buffer.subarray(offset, offset + 4) : undefined;
      const payload = Buffer.from(buffer.subarray(offset + (masked ? 4 : 0), total));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      buffer = buffer.subarray(total);
      if (opcode === 8) return void socket.end(Buffer.from([0x88, 0]));
      const header = payload.length < 126
        ? Buffer.from([0x80 | opcode, payload.length])
        : Buffer.from([0x80 | opcode, 126, payload.length >> 8, payload.length & 0xff]);
      socket.write(Buffer.concat([header, payload]));
    }
  });
}

test("forwardRelayed relays a WebSocket echo (the runtime's own WebSocket client) and reports opened and closed", async () => {
  const raw = await rawServer(webSocketEcho);
  const { loop, connect } = withChannel();
  const forward = await forwardRelayed(connect, raw.port, {}, running);
  try {
    assert.equal(forward.hostname, "127.0.0.1");
    assert.match(forward.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const seen = await webSocketRoundTrip(forward, new Uint8Array(5000).map((_, i) => i & 0xff));
    assert.deepEqual(seen.map((event) => event.event), ["opened", "closed"]);
    assert.equal(seen[1].connection, 1);
    assert.ok((seen[1].bytesIn ?? 0) > 5000 && (seen[1].bytesOut ?? 0) > 5000);
  } finally {
    await forward.close();
    loop.relay.close();
    raw.close();
  }
  await assert.rejects(new Promise((resolve, reject) => {
    const probe = netConnect({ host: "127.0.0.1", port: forward.port });
    probe.on("connect", () => resolve(probe.destroy()));
    probe.on("error", reject);
  }), /ECONNREFUSED/, "the listener is gone after close()");
});

test("forwardRelayed bounds: one connection past maxConnections is refused; past maxBytesPerConnection it is reset", async () => {
  const raw = await rawServer((socket) => socket.pipe(socket));
  const { loop, connect } = withChannel();
  const forward = await forwardRelayed(connect, raw.port, { maxConnections: 1, maxBytesPerConnection: 100 }, running);
  const events: SandboxForwardEvent[] = [];
  const reading = (async () => {
    for await (const event of forward.events) events.push(event);
  })();
  try {
    const first = netConnect({ host: "127.0.0.1", port: forward.port });
    first.on("error", () => {});
    await once(first, "connect");
    first.write("abc");
    await once(first, "data");
    const second = netConnect({ host: "127.0.0.1", port: forward.port });
    second.on("error", () => {});
    await new Promise((resolve) => second.once("close", resolve));
    first.write("x".repeat(200));
    await new Promise((resolve) => first.once("close", resolve));
  } finally {
    await forward.close();
    await reading;
    loop.relay.close();
    raw.close();
  }
  assert.deepEqual(events.map((event) => [event.event, event.connection, event.reason]), [
    ["opened", 1, undefined],
    ["refused", 2, "max_connections"],
    ["closed", 1, "max_bytes"],
  ]);
  assert.match(events[2].message ?? "", /options\.maxBytesPerConnection \(100 bytes/);
});

test("forwardRelayed reports a guest port nothing listens on as refused guest_refused; options are validated", async () => {
  const raw = await rawServer(() => {});
  const port = raw.port;
  raw.close();
  const { loop, connect } = withChannel();
  const forward = await forwardRelayed(connect, port, {}, running);
  try {
    const client = netConnect({ host: "127.0.0.1", port: forward.port });
    client.on("error", () => {});
    await new Promise((resolve) => client.once("close", resolve));
    const [event] = await (async () => {
      for await (const event of forward.events) return [event];
      return [];
    })();
    assert.equal(event?.event, "refused");
    assert.equal(event?.reason, "guest_refused");
  } finally {
    await forward.close();
    loop.relay.close();
  }
  await assert.rejects(forwardRelayed(connect, 80, { maxConnections: MAX_SANDBOX_CONNECTIONS + 1 }, running), (error: unknown) => {
    assert.equal((error as { code?: string }).code, "configuration");
    assert.match((error as Error).message, /options\.maxConnections must be an integer from 1 to 64 connections/);
    return true;
  });
  await assert.rejects(forwardRelayed(connect, 80, { hostname: "192.0.2.1" }, running), (error: unknown) => {
    assert.equal((error as { code?: string }).code, "configuration");
    assert.match((error as Error).message, /options\.hostname 192\.0\.2\.1 is not an address of this host/);
    return true;
  });
});

test("fetchRelayed refuses what it cannot send with SandboxConfigurationError naming the request or port", async () => {
  const { SandboxConfigurationError } = await import("../../../lib/sandbox/errors.ts");
  const never = () => Promise.reject(new Error("no connection is made"));
  await assert.rejects(fetchRelayed(never, 8080, "https://example.test/"), (error: unknown) =>
    error instanceof SandboxConfigurationError &&
    error.message === 'Cannot fetch from port 8080 in the sandbox: request must be a path such as "/" or an http: URL, not a https: URL');
  await assert.rejects(fetchRelayed(never, "8080", "/"), (error: unknown) =>
    error instanceof SandboxConfigurationError && error.message.startsWith('Cannot fetch from port "8080" in the sandbox: port '));
});
