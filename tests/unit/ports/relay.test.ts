// The relay protocol end to end in one process: the controller's channel and the relay
// program, over loopback TCP servers of the test. Binary exactness with many connections at
// once, half-close, refusal, the credit bound, and a lost relay erroring every stream.
import assert from "node:assert/strict";
import { once } from "node:events";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { test } from "node:test";
import { SandboxConnectionError } from "../../../lib/sandbox/ports.ts";
import { encodeFrame, FRAME, FrameDecoder, MAX_FRAME_PAYLOAD, RELAY_WINDOW_BYTES } from "../../../lib/docker/ports/relay_program.ts";
import { loopbackRelay } from "./_loopback_relay.ts";
import { bytes as pattern } from "../../engine/_files.ts";

async function listen(onSocket: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer({ allowHalfOpen: true }, onSocket);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as AddressInfo).port };
}

async function readAll(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(readable).arrayBuffer());
}

test("FrameDecoder joins frames split anywhere and refuses an oversized declaration", () => {
  const frames = [encodeFrame(FRAME.data, 7, new Uint8Array([1, 2, 3])), encodeFrame(FRAME.end, 7), encodeFrame(FRAME.credit, 9, new Uint8Array([0, 0, 1, 0]))];
  const wire = new Uint8Array(frames.reduce((n, f) => n + f.byteLength, 0));
  let offset = 0;
  for (const frame of frames) (wire.set(frame, offset), offset += frame.byteLength);
  const decoder = new FrameDecoder();
  const seen = [];
  for (let i = 0; i < wire.byteLength; i++) seen.push(...decoder.push(wire.subarray(i, i + 1)));
  // A data payload comes out piece by piece (here one byte each); control frames whole.
  assert.deepEqual(seen.map((f) => [f.type, f.id, [...f.payload]]), [
    [FRAME.data, 7, [1]], [FRAME.data, 7, [2]], [FRAME.data, 7, [3]], [FRAME.end, 7, []], [FRAME.credit, 9, [0, 0, 1, 0]],
  ]);
  const whole = new FrameDecoder().push(wire);
  assert.deepEqual(whole.map((f) => [f.type, f.id, [...f.payload]]), [[FRAME.data, 7, [1, 2, 3]], [FRAME.end, 7, []], [FRAME.credit, 9, [0, 0, 1, 0]]]);
  assert.equal(decoder.pendingBytes, 0);
  const header = encodeFrame(FRAME.data, 1).slice(0, 9);
  new DataView(header.buffer).setUint32(5, MAX_FRAME_PAYLOAD + 1);
  assert.throws(() => new FrameDecoder().push(header), RangeError);
});

test("RelayChannel carries 8 concurrent binary echoes exactly, each half-closed", async () => {
  const { server, port } = await listen((socket) => socket.pipe(socket));
  const { channel, relay } = loopbackRelay();
  try {
    await channel.ready;
    const sizes = [0, 1, 65_535, 65_537, RELAY_WINDOW_BYTES + 3, 3 * 1024 * 1024, 17, 200_000];
    await Promise.all(sizes.map(async (size, index) => {
      const connection = await channel.open(port, undefined).promise;
      const data = pattern(size, index + 1);
      const writing = (async () => {
        const writer = connection.writable.getWriter();
        for (let offset = 0; offset < data.byteLength; offset += 100_000) await writer.write(data.subarray(offset, offset + 100_000));
        await writer.close();
      })();
      const echoed = await readAll(connection.readable);
      await writing;
      await connection.closed;
      assert.equal(echoed.byteLength, size);
      assert.deepEqual(echoed, data, `connection ${index}`);
    }));
    assert.equal(channel.size, 0);
    assert.equal(relay.size, 0);
  } finally {
    relay.close();
    server.close();
  }
});

test("RelayChannel open of a port nothing listens on rejects with SandboxConnectionError refused", async () => {
  const { server, port } = await listen(() => {});
  server.close();
  await once(server, "close");
  const { channel, relay } = loopbackRelay();
  try {
    await assert.rejects(channel.open(port, undefined).promise, (error: unknown) => {
      assert.ok(error instanceof SandboxConnectionError);
      assert.equal(error.code, "connection");
      assert.equal(error.reason, "refused");
      assert.match(error.message, new RegExp(`^Cannot connect to port ${port} in the sandbox: connection refused`));
      return true;
    });
  } finally {
    relay.close();
  }
});

test("RelayChannel: a server that answers after end of file gets the request's half-close", async () => {
  const { server, port } = await listen((socket) => {
    let count = 0;
    socket.on("data", (chunk: Uint8Array) => void (count += chunk.byteLength));
    socket.on("end", () => socket.end(`got ${count}`));
  });
  const { channel, relay } = loopbackRelay();
  try {
    const connection = await channel.open(port, undefined).promise;
    const writer = connection.writable.getWriter();
    await writer.write(pattern(300_000, 5));
    await writer.close();
    assert.equal(new TextDecoder().decode(await readAll(connection.readable)), "got 300000");
    await connection.closed;
  } finally {
    relay.close();
    server.close();
  }
});

test("RelayChannel: a guest that resets mid-stream errors the readable with reason reset", async () => {
  const { server, port } = await listen((socket) => {
    socket.write(pattern(10_000, 3));
    setTimeout(() => socket.resetAndDestroy(), 50);
  });
  const { channel, relay } = loopbackRelay();
  try {
    const connection = await channel.open(port, undefined).promise;
    await assert.rejects(readAll(connection.readable), (error: unknown) => error instanceof SandboxConnectionError && error.reason === "reset");
    await assert.rejects(connection.closed, SandboxConnectionError);
  } finally {
    relay.close();
    server.close();
  }
});

test("RelayChannel: a lost relay errors every open stream (a cut output never ends normally)", async () => {
  const { server, port } = await listen((socket) => socket.write(pattern(1000, 1)));
  const loop = loopbackRelay();
  try {
    const connection = await loop.channel.open(port, undefined).promise;
    const reader = connection.readable.getReader();
    assert.equal((await reader.read()).value?.byteLength, 1000);
    loop.cut();
    await assert.rejects(reader.read(), (error: unknown) => error instanceof SandboxConnectionError && error.reason === "relay_lost");
    await assert.rejects(connection.closed, SandboxConnectionError);
    await assert.rejects(loop.channel.open(port, undefined).promise, SandboxConnectionError);
  } finally {
    loop.relay.close();
    server.close();
  }
});

test("RelayChannel: a relay that sends past its credit ends the channel", async () => {
  const { server, port } = await listen(() => {});
  const loop = loopbackRelay();
  try {
    const connection = await loop.channel.open(port, undefined).promise;
    // One window plus one byte that nobody granted, as a broken relay would send it.
    for (let sent = 0; sent <= RELAY_WINDOW_BYTES; sent += MAX_FRAME_PAYLOAD) loop.inject(encodeFrame(FRAME.data, 1, new Uint8Array(MAX_FRAME_PAYLOAD)));
    await assert.rejects(connection.closed, (error: unknown) => error instanceof SandboxConnectionError && /more than its credit/.test(error.message));
  } finally {
    loop.relay.close();
    server.close();
  }
});

test("RelayConnection maxBytes resets the connection past the bound with SandboxQuotaError", async () => {
  const { server, port } = await listen((socket) => socket.pipe(socket));
  const { channel, relay } = loopbackRelay();
  try {
    const connection = await channel.open(port, 1000).promise;
    const writer = connection.writable.getWriter();
    await assert.rejects(writer.write(new Uint8Array(1001)), (error: unknown) => {
      assert.equal((error as { code?: string }).code, "quota");
      assert.match((error as Error).message, /options\.maxBytesPerConnection \(1000 bytes/);
      return true;
    });
  } finally {
    relay.close();
    server.close();
  }
});

test("the relay program runs as its own node process from its text on the command line, as in the relay container", async () => {
  const { spawn } = await import("node:child_process");
  const { readFile } = await import("node:fs/promises");
  const { RelayChannel } = await import("../../../lib/docker/ports/_channel.ts");
  const text = await readFile(new URL("../../../lib/docker/ports/relay_program.ts", import.meta.url), "utf8");
  // The pinned Node of the toolchain (node_modules/.bin), whichever runtime runs this test.
  const child = spawn("node", ["--input-type=module-typescript", "-e", text, "agentcell-relay"], { stdio: ["pipe", "pipe", "pipe"] });
  const { server, port } = await listen((socket) => socket.pipe(socket));
  try {
    const output = new ReadableStream<Uint8Array>({
      start(controller) {
        child.stdout!.on("data", (chunk: Uint8Array) => controller.enqueue(new Uint8Array(chunk)));
        child.stdout!.on("end", () => controller.close());
      },
    });
    const channel = new RelayChannel(output, {
      write: (bytes) => new Promise((resolve, reject) => child.stdin!.write(bytes, (error) => error ? reject(error) : resolve())),
    }, (why) => new SandboxConnectionError("relay_lost", `Cannot relay: lost (${why})`));
    await channel.ready;
    const connection = await channel.open(port, undefined).promise;
    const data = pattern(2_500_000, 9);
    const writer = connection.writable.getWriter();
    const writing = writer.write(data).then(() => writer.close());
    const echoed = await readAll(connection.readable);
    await writing;
    assert.deepEqual(echoed, data);
    child.stdin!.end();
    const [code] = await once(child, "exit");
    assert.equal(code, 0, "the relay exits when its stdin ends");
    await assert.rejects(channel.open(port, undefined).promise, (error: unknown) => error instanceof SandboxConnectionError && error.reason === "relay_lost");
  } finally {
    child.kill();
    server.close();
  }
});

test("startRelay sends a guest chunk larger than its credit in order, exactly once, as credit arrives", async () => {
  const { startRelay, u32 } = await import("../../../lib/docker/ports/relay_program.ts");
  const handlers: Record<string, (value?: unknown) => void> = {};
  let paused = false;
  const socket = {
    write: () => true,
    end: () => {},
    destroy: () => {},
    pause: () => void (paused = true),
    resume: () => void (paused = false),
    setNoDelay: () => {},
    on: (event: string, listener: (value?: unknown) => void) => void (handlers[event] = listener),
  };
  const out = new FrameDecoder();
  const received: Uint8Array[] = [];
  const relay = startRelay({
    connect: () => socket as never,
    write: (bytes) => {
      for (const frame of out.push(bytes.slice())) if (frame.type === FRAME.data) received.push(frame.payload.slice());
      return true;
    },
  });
  relay.receive(encodeFrame(FRAME.open, 5, new Uint8Array([0, 80])));
  handlers.connect();
  const chunk = pattern(RELAY_WINDOW_BYTES + 1000, 11);
  handlers.data(chunk);
  const total = () => received.reduce((sum, piece) => sum + piece.byteLength, 0);
  assert.equal(total(), RELAY_WINDOW_BYTES, "exactly the credit is sent");
  assert.equal(paused, true, "the socket is paused while bytes are held");
  relay.receive(encodeFrame(FRAME.credit, 5, u32(600)));
  assert.equal(total(), RELAY_WINDOW_BYTES + 600);
  relay.receive(encodeFrame(FRAME.credit, 5, u32(10_000)));
  assert.equal(total(), RELAY_WINDOW_BYTES + 1000);
  assert.equal(paused, false);
  const joined = new Uint8Array(total());
  let offset = 0;
  for (const piece of received) (joined.set(piece, offset), offset += piece.byteLength);
  assert.deepEqual(joined, chunk, "in order, each byte once");
  relay.close();
});

test("startRelay: a guest that sends past its credit, ends and closes gets every byte, then END, then CLOSED", async () => {
  const { startRelay, u32 } = await import("../../../lib/docker/ports/relay_program.ts");
  const handlers: Record<string, (value?: unknown) => void> = {};
  const socket = {
    write: () => true,
    end: () => {},
    destroy: () => {},
    pause: () => {},
    resume: () => {},
    setNoDelay: () => {},
    on: (event: string, listener: (value?: unknown) => void) => void (handlers[event] = listener),
  };
  const out = new FrameDecoder();
  const frames: { type: number; bytes: number }[] = [];
  const relay = startRelay({
    connect: () => socket as never,
    write: (bytes) => {
      for (const frame of out.push(bytes.slice())) frames.push({ type: frame.type, bytes: frame.payload.byteLength });
      return true;
    },
  });
  relay.receive(encodeFrame(FRAME.open, 5, new Uint8Array([0, 80])));
  handlers.connect();
  // The host half-closed first (as a download does); the guest then writes past the window,
  // ends, and its socket closes (both sides ended) while bytes wait for credit.
  relay.receive(encodeFrame(FRAME.end, 5));
  handlers.data(pattern(RELAY_WINDOW_BYTES + 1000, 2));
  handlers.end();
  handlers.close();
  const kinds = () => frames.filter((frame) => frame.type !== FRAME.data && frame.type !== FRAME.ready && frame.type !== FRAME.opened).map((frame) => frame.type);
  assert.deepEqual(kinds(), [], "neither END nor CLOSED before the held bytes went out");
  assert.equal(relay.size, 1, "the link is kept while bytes wait");
  relay.receive(encodeFrame(FRAME.credit, 5, u32(1000)));
  const sent = frames.filter((frame) => frame.type === FRAME.data).reduce((sum, frame) => sum + frame.bytes, 0);
  assert.equal(sent, RELAY_WINDOW_BYTES + 1000);
  assert.deepEqual(kinds(), [FRAME.end, FRAME.closed]);
  assert.equal(relay.size, 0);
  relay.close();
});
