// The floor of an exec round trip: the three Engine calls every client makes for one command
// (create the exec, start it with its attach stream until the stream ends, inspect it for the
// exit code) over bare sockets with hand-written HTTP/1.1 and no client library, so nothing
// but the Engine's own time and the socket remain. Sockets: `node:net` (every runtime) and
// the running runtime's native one (`Deno.connect`, `Bun.connect`); connections: a fresh one
// per call (as our client makes them) or one kept-alive connection for create and inspect
// (as the docker CLI and dockerode's agent do). Benchmark code only: it trusts the Engine's
// framing (a `Content-Length` or chunked body) and calls runtime APIs directly, which is
// what it measures.
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { pollExit } from "./_exec_steps.ts";
import { bunConnect, execStartRequest, HeadThenCount } from "./_floor.ts";

/** Which socket the floor uses: `node:net`, or the running runtime's native socket. */
export type FloorSocket = "node:net" | "native";

/** One bare byte connection: reads are pull-based, `null` at the peer's end. */
interface BareConnection {
  write(bytes: Uint8Array): Promise<void>;
  read(): Promise<Uint8Array | null>;
  close(): void;
}

/** Chunks pushed by a callback-based socket, read one at a time. */
class PushedChunks {
  #chunks: Uint8Array[] = [];
  #ended = false;
  #failure: Error | undefined;
  #waiter: (() => void) | undefined;

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#wake();
  }

  end(failure?: Error): void {
    this.#ended = true;
    this.#failure ??= failure;
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  async read(): Promise<Uint8Array | null> {
    for (;;) {
      const chunk = this.#chunks.shift();
      if (chunk !== undefined) return chunk;
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#waiter = resolve);
    }
  }
}

function openNodeNet(socketPath: string): Promise<BareConnection> {
  return new Promise((resolve, reject) => {
    const chunks = new PushedChunks();
    const socket = connect(socketPath);
    socket.on("data", (chunk: Uint8Array) => chunks.push(chunk));
    socket.on("end", () => chunks.end());
    socket.on("close", () => chunks.end());
    socket.on("error", (error) => chunks.end(error));
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve({
        write: (bytes) => new Promise((done, fail) => socket.write(bytes, (error) => error ? fail(error) : done())),
        read: () => chunks.read(),
        close: () => socket.destroy(),
      });
    });
  });
}

async function openDeno(socketPath: string): Promise<BareConnection> {
  const conn = await Deno.connect({ transport: "unix", path: socketPath });
  const buffer = new Uint8Array(64 * 1024);
  let closed = false;
  return {
    async write(bytes) {
      for (let offset = 0; offset < bytes.byteLength;) offset += await conn.write(bytes.subarray(offset));
    },
    async read() {
      const length = await conn.read(buffer);
      return length === null ? null : buffer.subarray(0, length);
    },
    close() {
      if (closed) return;
      closed = true;
      conn.close();
    },
  };
}

async function openBun(socketPath: string): Promise<BareConnection> {
  const chunks = new PushedChunks();
  const socket = await bunConnect(socketPath, {
    data: (_socket, data) => chunks.push(data),
    end: () => chunks.end(),
    close: () => chunks.end(),
    error: (_socket, error) => chunks.end(error),
  });
  return {
    write(bytes) {
      // The requests here are a few hundred bytes: Bun takes them whole or the floor is wrong.
      if (socket.write(bytes) !== bytes.byteLength) return Promise.reject(new Error("Cannot write the request at once"));
      return Promise.resolve();
    },
    read: () => chunks.read(),
    close: () => socket.end(),
  };
}

/** Opens a bare connection of the given kind to `socketPath`. */
function open(socketPath: string, kind: FloorSocket): Promise<BareConnection> {
  const global = globalThis as { Deno?: unknown; Bun?: unknown };
  if (kind === "native" && global.Deno) return openDeno(socketPath);
  if (kind === "native" && global.Bun) return openBun(socketPath);
  return openNodeNet(socketPath);
}

const HEAD_END = "\r\n\r\n";
const text = (chunk: Uint8Array) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");

/** Sends `request` and reads one response with a `Content-Length` or chunked body. */
async function exchange(connection: BareConnection, request: string): Promise<{ status: number; body: string }> {
  await connection.write(new TextEncoder().encode(request));
  let received = "";
  for (;;) {
    const chunk = await connection.read();
    if (chunk === null) throw new Error("Cannot read the answer: the Engine closed the connection");
    received += text(chunk);
    const headEnd = received.indexOf(HEAD_END);
    if (headEnd < 0) continue;
    const head = received.slice(0, headEnd).toLowerCase();
    const rest = received.slice(headEnd + HEAD_END.length);
    const length = /\r\ncontent-length: *(\d+)/u.exec(head);
    if (length !== null) {
      if (rest.length >= Number(length[1])) return { status: Number(head.slice(9, 12)), body: rest.slice(0, Number(length[1])) };
    } else if (rest.endsWith("0\r\n\r\n")) {
      return { status: Number(head.slice(9, 12)), body: rest.replace(/(^|\r\n)[0-9a-f]+\r\n/gu, "") };
    }
  }
}

/** Starts the exec on its own connection and counts the attach stream's bytes until it ends. */
async function startAndDrain(socketPath: string, kind: FloorSocket, apiVersion: string, execId: string): Promise<number> {
  const connection = await open(socketPath, kind);
  try {
    await connection.write(execStartRequest(apiVersion, execId));
    const counter = new HeadThenCount();
    for (;;) {
      const chunk = await connection.read();
      if (chunk === null) return counter.bytes;
      counter.take(chunk);
    }
  } finally {
    connection.close();
  }
}

/**
 * One exec of `cmd` in `containerId` as `user`, over bare sockets of `kind`; resolves with
 * the exit code. `keepAlive` sends create and inspect on one persistent connection.
 */
export async function rawSocketExec(
  socketPath: string,
  apiVersion: string,
  containerId: string,
  cmd: readonly string[],
  user: { uid: number; gid: number },
  options: { keepAlive: boolean; socket: FloorSocket },
): Promise<number> {
  const prefix = `/v${apiVersion}`;
  const connectionField = options.keepAlive ? "Connection: keep-alive" : "Connection: close";
  const call = async (kept: BareConnection | undefined, method: string, target: string, json?: string) => {
    const connection = kept ?? await open(socketPath, options.socket);
    try {
      const body = json ?? "";
      const reply = await exchange(
        connection,
        `${method} ${prefix}${target} HTTP/1.1\r\nHost: docker\r\n${connectionField}\r\n` +
          (json === undefined ? "" : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`) +
          `\r\n${body}`,
      );
      if (reply.status >= 300) throw new Error(`Cannot ${method} ${target}: the Engine answered ${reply.status} ${reply.body.slice(0, 200)}`);
      return JSON.parse(reply.body);
    } finally {
      if (kept === undefined) connection.close();
    }
  };
  const kept = options.keepAlive ? await open(socketPath, options.socket) : undefined;
  try {
    const created = await call(kept, "POST", `/containers/${containerId}/exec`, JSON.stringify({
      AttachStdout: true,
      AttachStderr: true,
      Cmd: cmd,
      User: `${user.uid}:${user.gid}`,
      WorkingDir: "/workspace/work",
    })) as { Id: string };
    await startAndDrain(socketPath, options.socket, apiVersion, created.Id);
    return await pollExit(() => call(kept, "GET", `/exec/${created.Id}/json`));
  } finally {
    kept?.close();
  }
}
