/**
 * Unix-socket connections and TCP listeners on Node (`node:net`). The only file of the
 * project that uses Node streams.
 *
 * @module
 */
import { createConnection, createServer, type NetConnectOpts, type Socket } from "node:net";
import { connectWithin } from "./_connect_within.ts";
import { type RawSocket, socketConnectionFromRaw } from "./raw_socket.ts";
import type { AcceptedConnection, ConnectOptions, ListenOptions, SocketConnection, TcpListener } from "./types.ts";

/**
 * Connects to a Unix socket with `node:net` `createConnection({ path, allowHalfOpen: true,
 * onread })`: the kernel's bytes are read into one reused 64 KiB buffer and copied out per
 * chunk at their exact length. Pull-based: a chunk that arrives while no read is pending
 * pauses the socket until it is taken (at most one 64 KiB runtime chunk buffered);
 * `closeWrite()` calls `socket.end()`, which sends FIN and keeps the read side open.
 *
 * @param path Absolute path of the Unix socket.
 * @param options Signal and connect deadline.
 * @returns The open connection; close or abort it when done.
 * @throws {TypeError} When `path` is not absolute or an option is invalid.
 * @throws {DockerEngineTransportError} `connection` when connecting fails, `deadline`
 * when `options.timeoutMs` passes first, `aborted` when `options.signal` fires first.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a listening socket
 * import { connectUnix } from "./node.ts";
 *
 * const connection = await connectUnix("/var/run/docker.sock", { timeoutMs: 10_000 });
 * await connection.close();
 * ```
 */
export async function connectUnix(
  path: string,
  options: ConnectOptions = {},
): Promise<SocketConnection> {
  const reads = new NodeReads();
  const socket = await connectWithin(path, options, () => open(path, reads), (late) => late.destroy());
  return socketConnectionFromRaw(nodeSocket(socket, reads));
}

/** Bytes of the read buffer: one runtime chunk. */
const READ_BYTES = 65_536;

/**
 * The one read buffer of every connection of this process. Sharing it is safe: libuv reads
 * into it and Node calls the connection's `onread` callback synchronously before any other
 * read can fill it, and the callback copies the chunk out at once. One buffer instead of a
 * fresh 64 KiB (zero-filled, then garbage) per connection: each Engine request opens one,
 * and that allocation was a visible part of a request's CPU time (profiled on Node 26).
 */
const SHARED_READ_BUFFER = new Uint8Array(READ_BYTES);

/**
 * The reads of one socket, through `onread` (net.Socket's user-buffer mode): the kernel's
 * bytes land in one reused 64 KiB buffer and each chunk is copied out at its exact length,
 * with none of the stream machinery of `socket.read()` (its buffer list, the `readable`
 * event a tick later, a stop and start of reading per chunk), which cost more CPU than the
 * bytes themselves (profiled on Node 26). The buffer is shared by every connection (see
 * {@linkcode SHARED_READ_BUFFER}). Pull-based: a chunk that arrives with no read
 * waiting is kept and the socket paused (the callback returns `false`) until it is taken,
 * so at most one chunk is buffered.
 */
class NodeReads {
  readonly buffer = SHARED_READ_BUFFER;
  #kept: Uint8Array | undefined;
  #paused = false;
  #waiter: ((chunk: Uint8Array | undefined) => void) | undefined;
  ended = false;
  closed = false;
  failure: Error | undefined;

  /** The `onread` callback: returns `false` to pause the socket. */
  readonly received = (length: number): boolean => {
    const chunk = this.buffer.slice(0, length);
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter(chunk);
      return true;
    }
    this.#kept = chunk;
    this.#paused = true;
    return false;
  };

  /** Wakes a waiting read to look at the state again. */
  notify(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(undefined);
  }

  async read(socket: Socket): Promise<Uint8Array | null> {
    for (;;) {
      const kept = this.#kept;
      if (kept !== undefined) {
        this.#kept = undefined;
        if (this.#paused) {
          this.#paused = false;
          socket.resume();
        }
        return kept;
      }
      if (this.failure !== undefined) throw this.failure;
      if (this.ended || this.closed) return null;
      const chunk = await new Promise<Uint8Array | undefined>((resolve) => this.#waiter = resolve);
      if (chunk !== undefined) return chunk;
    }
  }
}

function open(path: string, reads: NodeReads): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socketOptions: NetConnectOpts = {
      path,
      allowHalfOpen: true,
      onread: { buffer: reads.buffer, callback: reads.received },
    };
    const socket = createConnection(socketOptions);
    const onError = (error: Error) => {
      socket.off("connect", onConnect);
      socket.destroy();
      reject(error);
    };
    const onConnect = () => {
      socket.off("error", onError);
      resolve(socket);
    };
    socket.once("error", onError);
    socket.once("connect", onConnect);
  });
}

/** What {@linkcode nodeSocket} needs of a socket's reads. */
interface SocketReads {
  ended: boolean;
  closed: boolean;
  failure: Error | undefined;
  notify(): void;
  read(socket: Socket): Promise<Uint8Array | null>;
}

/**
 * The reads of an accepted socket (a server's sockets cannot take `onread`): each `data`
 * chunk is kept and the socket paused until a read takes it, so at most one chunk is
 * buffered.
 */
class DataEventReads implements SocketReads {
  /** Chunks received and not yet read: one, as the socket pauses at each (a queue all the same). */
  readonly #kept: Uint8Array[] = [];
  #waiter: (() => void) | undefined;
  ended = false;
  closed = false;
  failure: Error | undefined;

  constructor(socket: Socket) {
    socket.on("data", (chunk: Uint8Array) => {
      socket.pause();
      this.#kept.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.notify();
    });
  }

  notify(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  async read(socket: Socket): Promise<Uint8Array | null> {
    for (;;) {
      const kept = this.#kept.shift();
      if (kept !== undefined) return kept;
      if (this.failure !== undefined) throw this.failure;
      if (this.ended || this.closed) return null;
      const waiting = new Promise<void>((resolve) => this.#waiter = resolve);
      socket.resume();
      await waiting;
    }
  }
}

/**
 * Listens with `node:net` `createServer({ allowHalfOpen: true, pauseOnConnect: true })`;
 * each accepted socket becomes a {@linkcode SocketConnection} (pull-based reads through
 * `pause()`/`resume()`, `closeWrite()` is `socket.end()`).
 *
 * @param options Address and port (0: the system chooses).
 * @returns The listener.
 * @throws the runtime's error when it cannot listen (`EADDRINUSE`, `EADDRNOTAVAIL`)
 */
export function listenTcp(options: ListenOptions): Promise<TcpListener> {
  const queue: AcceptedConnection[] = [];
  let waiter: ((accepted: AcceptedConnection | null) => void) | undefined;
  let closed = false;
  const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    if (closed) return void socket.destroy();
    const peer = socket.remoteAddress === undefined
      ? undefined
      : socket.remoteAddress.includes(":") ? `[${socket.remoteAddress}]:${socket.remotePort}` : `${socket.remoteAddress}:${socket.remotePort}`;
    const accepted = { connection: socketConnectionFromRaw(nodeSocket(socket, new DataEventReads(socket))), peer };
    const wake = waiter;
    waiter = undefined;
    if (wake) wake(accepted);
    else queue.push(accepted);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      // A failed accept later (EMFILE) must not end the process: the server goes on.
      server.on("error", () => {});
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : options.port;
      resolve({
        hostname: typeof address === "object" && address !== null ? address.address : options.hostname,
        port,
        accept() {
          const next = queue.shift();
          if (next) return Promise.resolve(next);
          if (closed) return Promise.resolve(null);
          return new Promise((wake) => (waiter = wake));
        },
        close() {
          if (closed) return Promise.resolve();
          closed = true;
          waiter?.(null);
          waiter = undefined;
          for (const accepted of queue.splice(0)) accepted.connection.abort();
          // `server.close(callback)` would wait for every accepted connection to end; the
          // listening socket itself is released at once.
          server.close();
          return new Promise((done) => setTimeout(done, 0));
        },
      });
    });
  });
}

function nodeSocket(socket: Socket, reads: SocketReads): RawSocket {
  socket.on("end", () => {
    reads.ended = true;
    reads.notify();
  });
  socket.on("error", (error) => {
    reads.failure ??= error;
    reads.notify();
  });
  socket.on("close", () => {
    reads.closed = true;
    reads.notify();
  });

  return {
    read: () => reads.read(socket),
    write(chunk) {
      // Resolves from the write callback: Node calls it once the kernel has every byte, so
      // the chunk's memory is no longer referenced and its producer may reuse it. A socket
      // that closes first settles the write too, whether or not Node calls back.
      return new Promise((resolve, reject) => {
        if (reads.failure !== undefined) return reject(reads.failure);
        if (reads.closed || socket.writableEnded) return reject(new Error("socket is closed"));
        const onClose = () => reject(reads.failure ?? new Error("socket is closed"));
        socket.once("close", onClose);
        socket.write(chunk, (error) => {
          socket.off("close", onClose);
          if (error) {
            reads.failure ??= error;
            reject(error);
          } else resolve();
        });
      });
    },
    shutdown() {
      return new Promise((resolve, reject) => {
        if (reads.failure !== undefined) return reject(reads.failure);
        if (reads.closed) return reject(new Error("socket is closed"));
        const onClose = () => reject(reads.failure ?? new Error("socket is closed"));
        socket.once("close", onClose);
        socket.end(() => {
          socket.off("close", onClose);
          resolve();
        });
      });
    },
    destroy() {
      socket.destroy();
    },
  };
}
