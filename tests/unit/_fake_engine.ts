/**
 * A scripted fake Docker Engine on a Unix socket the test owns, for faults a real Engine
 * will not produce on demand (truncated bodies, bad framing, stalls, early answers).
 * It uses a `node:net` server, which Deno, Bun and Node all provide.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { concatBytes } from "../../lib/streams/concat_bytes.ts";

/** A request the fake engine read: its head (text, without the blank line) and body. */
export interface FakeRequest {
  readonly head: string;
  readonly body: Uint8Array;
}

/** One accepted connection, as a script sees it. */
export interface FakeConnection {
  /** Reads up to and including the blank line; returns the head without it. */
  readHead(): Promise<string>;
  /** Reads a head and its `Content-Length` or chunked body (decoded). */
  readRequest(): Promise<FakeRequest>;
  /** Reads until the client half-closes (FIN); returns the bytes. */
  readToEnd(): Promise<Uint8Array>;
  /** Writes bytes (strings as latin1) and waits until they were flushed. */
  write(data: string | Uint8Array): Promise<void>;
  /** Waits `ms` milliseconds, or less when the connection closes first. */
  sleep(ms: number): Promise<void>;
  /** Half-closes: sends FIN, keeps reading. */
  end(): Promise<void>;
  /** Destroys the connection. */
  destroy(): void;
  /** Resolves once the client has closed its side (FIN) or the connection is gone. */
  readonly closed: Promise<void>;
  /** Bytes the client has sent so far. */
  readonly received: () => number;
  /** The underlying socket, for the few tests that need it. */
  readonly socket: Socket;
}

/** A running fake engine. */
export interface FakeEngine {
  /** Absolute path of its Unix socket. */
  readonly socketPath: string;
  /** Requests read through `readRequest()`/`readHead()`, in order. */
  readonly requests: FakeRequest[];
  /** Errors thrown by scripts (a test may assert there were none). */
  readonly scriptErrors: unknown[];
  /** Resolves when the `n`-th connection's script has finished. */
  scriptDone(n?: number): Promise<void>;
  /** Destroys live connections, waits for scripts, stops listening, removes the socket. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const singleByte = new TextDecoder("latin1");
const latin1 = (bytes: Uint8Array) => singleByte.decode(bytes);

/**
 * Starts a fake engine that runs `script` on every accepted connection.
 *
 * @param script What to do with one connection.
 * @returns The running engine; `close()` it in `finally`.
 */
export async function startFakeEngine(
  script: (connection: FakeConnection) => Promise<void>,
): Promise<FakeEngine> {
  const directory = mkdtempSync(join(tmpdir(), "agentcell-fake-"));
  const socketPath = join(directory, "engine.sock");
  const requests: FakeRequest[] = [];
  const scriptErrors: unknown[] = [];
  const sockets = new Set<Socket>();
  const scripts: Promise<void>[] = [];
  const scriptWaiters: Array<() => void> = [];

  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    const connection = fakeConnection(socket, requests);
    const run = script(connection).catch((error) => {
      scriptErrors.push(error);
    }).finally(() => {
      socket.end();
      sockets.delete(socket);
    });
    scripts.push(run);
    for (const wake of scriptWaiters.splice(0)) wake();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });

  return {
    socketPath,
    requests,
    scriptErrors,
    async scriptDone(n = 1) {
      while (scripts.length < n) await new Promise<void>((wake) => scriptWaiters.push(wake));
      await scripts[n - 1];
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(scripts);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function fakeConnection(socket: Socket, requests: FakeRequest[]): FakeConnection {
  let buffer: Uint8Array = new Uint8Array(0);
  let pending: Uint8Array[] = [];
  let ended = false;
  let isClosed = false;
  let received = 0;
  let wake: (() => void) | undefined;
  const notify = () => {
    const waiter = wake;
    wake = undefined;
    waiter?.();
  };
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => markClosed = resolve);
  socket.on("data", (data: Uint8Array) => {
    received += data.byteLength;
    pending.push(data);
    notify();
  });
  socket.on("end", () => {
    ended = true;
    markClosed();
    notify();
  });
  socket.on("error", () => {});
  socket.on("close", () => {
    isClosed = true;
    markClosed();
    notify();
  });

  // Received chunks are joined only when a script looks at them.
  const gather = () => {
    if (pending.length === 0) return;
    buffer = concatBytes([buffer, ...pending]);
    pending = [];
  };
  const waitForData = async () => {
    if (ended || isClosed) throw new Error("fake engine: client closed before the expected bytes");
    await new Promise<void>((resolve) => wake = resolve);
  };
  const take = (length: number) => {
    gather();
    const taken = buffer.slice(0, length);
    buffer = buffer.subarray(length);
    return taken;
  };
  const indexOf = (needle: string) => {
    gather();
    const bytes = Uint8Array.from(needle, (char) => char.charCodeAt(0));
    for (let at = buffer.indexOf(bytes[0]); at !== -1; at = buffer.indexOf(bytes[0], at + 1)) {
      if (bytes.every((byte, offset) => buffer[at + offset] === byte)) return at;
    }
    return -1;
  };
  const readLine = async () => {
    for (;;) {
      const at = indexOf("\r\n");
      if (at !== -1) return latin1(take(at + 2)).slice(0, -2);
      await waitForData();
    }
  };
  const readBytes = async (length: number) => {
    for (gather(); buffer.byteLength < length; gather()) await waitForData();
    return take(length);
  };
  const readHead = async () => {
    for (;;) {
      const at = indexOf("\r\n\r\n");
      if (at !== -1) return latin1(take(at + 4)).slice(0, -4);
      await waitForData();
    }
  };

  return {
    socket,
    closed,
    received: () => received,
    async readHead() {
      const head = await readHead();
      requests.push({ head, body: new Uint8Array(0) });
      return head;
    },
    async readRequest() {
      const head = await readHead();
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      let body: Uint8Array;
      if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
        const parts: Uint8Array[] = [];
        for (;;) {
          const size = parseInt(await readLine(), 16);
          if (size === 0) {
            await readLine();
            break;
          }
          parts.push(await readBytes(size));
          if ((await readLine()) !== "") throw new Error("fake engine: bad chunk end");
        }
        body = concatBytes(parts);
      } else {
        body = await readBytes(length === null ? 0 : Number(length[1]));
      }
      const request = { head, body };
      requests.push(request);
      return request;
    },
    async readToEnd() {
      while (!ended && !isClosed) await new Promise<void>((resolve) => wake = resolve);
      gather();
      return take(buffer.byteLength);
    },
    write(data) {
      const bytes = typeof data === "string"
        ? Uint8Array.from(data, (char) => char.charCodeAt(0))
        : data;
      return new Promise((resolve, reject) => {
        socket.write(bytes, (error) => error ? reject(error) : resolve());
      });
    },
    sleep(ms) {
      return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        closed.then(done);
      });
    },
    end() {
      return new Promise((resolve) => socket.end(() => resolve()));
    },
    destroy() {
      socket.destroy();
    },
  };
}

/** Joins byte chunks into one array (the library's own helper). */
export { concatBytes as concat };

/** Encodes text as UTF-8 bytes. */
export function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The `GET /version` reply {@linkcode startVersionedFakeEngine} gives: API 1.51. */
export const FAKE_VERSION = JSON.stringify({ Version: "x", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });

/**
 * A fake engine that answers `GET /version` itself (API 1.51) and hands every other
 * connection, with its request head already read, to `script`.
 *
 * @param script What to do with one connection after its request was read.
 * @returns The running engine; `close()` it in `finally`.
 */
export function startVersionedFakeEngine(script: (connection: FakeConnection, head: string) => Promise<void>): Promise<FakeEngine> {
  return startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    if (request.head.startsWith("GET /version ")) {
      await connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${FAKE_VERSION.length}\r\n\r\n${FAKE_VERSION}`);
      await connection.end();
      return;
    }
    await script(connection, request.head);
  });
}
