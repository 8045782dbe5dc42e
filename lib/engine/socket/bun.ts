/**
 * Unix-socket connections on Bun (`Bun.connect({ unix })`), and TCP listeners
 * (`Bun.listen`).
 *
 * Bun pushes received data into a `data` handler. To keep reads pull-based the adapter
 * pauses the socket (`socket.pause()`) whenever data arrives and resumes it
 * (`socket.resume()`) only while a read is waiting, so at most the chunks Bun had
 * already read when it paused are queued: one Bun receive buffer (up to 512 KiB,
 * measured on Bun 1.4). Bun does not buffer writes: `socket.write()` returns how many
 * bytes the kernel took, and the adapter waits for `drain` before writing the rest.
 *
 * @module
 */
import { connectWithin } from "./_connect_within.ts";
import { type RawSocket, socketConnectionFromRaw } from "./raw_socket.ts";
import type { AcceptedConnection, ConnectOptions, ListenOptions, SocketConnection, TcpListener } from "./types.ts";

/** The part of Bun's socket API this adapter uses (Bun 1.4). */
interface BunSocket {
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  write(data: Uint8Array): number;
  shutdown(): void;
  terminate(): void;
  pause(): void;
  resume(): void;
}

/** The socket handlers this adapter passes to `Bun.connect`. */
interface BunSocketHandler {
  readonly binaryType: "uint8array";
  data(socket: BunSocket, data: Uint8Array): void;
  drain(socket: BunSocket): void;
  end(socket: BunSocket): void;
  close(socket: BunSocket, error?: Error): void;
  error(socket: BunSocket, error: Error): void;
}

/** The listener handlers: as a connection's, plus `open` for each accepted socket. */
interface BunListenHandler extends BunSocketHandler {
  open(socket: BunSocket): void;
}

declare const Bun: {
  connect(options: {
    unix: string;
    allowHalfOpen: boolean;
    socket: BunSocketHandler;
  }): Promise<BunSocket>;
  listen(options: {
    hostname: string;
    port: number;
    allowHalfOpen: boolean;
    socket: BunListenHandler;
  }): { readonly hostname: string; readonly port: number; stop(closeActiveConnections?: boolean): void };
};

/**
 * Connects to a Unix socket with `Bun.connect({ unix: path, allowHalfOpen: true })`.
 * Reads are pull-based through `pause()`/`resume()`; `closeWrite()` calls
 * `socket.shutdown()`, which sends FIN and keeps the read side open.
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
 * // ignore: runs on Bun only, and needs a listening socket
 * import { connectUnix } from "./bun.ts";
 *
 * const connection = await connectUnix("/var/run/docker.sock", { timeoutMs: 10_000 });
 * await connection.close();
 * ```
 */
export async function connectUnix(
  path: string,
  options: ConnectOptions = {},
): Promise<SocketConnection> {
  const state = new BunSocketState();
  const socket = await connectWithin(
    path,
    options,
    () => Bun.connect({ unix: path, allowHalfOpen: true, socket: state.handler }),
    (late) => late.terminate(),
  );
  return socketConnectionFromRaw(state.raw(socket));
}

/** What the handlers saw on one socket, and the reads and writes waiting for it. */
class BunSocketState {
  readonly #queue: Uint8Array[] = [];
  #ended = false;
  #closed = false;
  #failure: Error | undefined;
  #readWaiter: (() => void) | undefined;
  #drainWaiter: (() => void) | undefined;

  readonly handler: BunSocketHandler = {
    binaryType: "uint8array",
    data: (socket, data) => {
      socket.pause();
      this.#queue.push(data);
      this.#wakeReader();
    },
    drain: () => this.#wakeWriter(),
    end: () => {
      this.#ended = true;
      this.#wakeReader();
    },
    close: (_socket, error) => {
      this.#closed = true;
      if (error !== undefined) this.#failure ??= error;
      this.#wakeReader();
      this.#wakeWriter();
    },
    error: (_socket, error) => {
      this.#failure ??= error;
      this.#wakeReader();
      this.#wakeWriter();
    },
  };

  #wakeReader(): void {
    const waiter = this.#readWaiter;
    this.#readWaiter = undefined;
    waiter?.();
  }

  #wakeWriter(): void {
    const waiter = this.#drainWaiter;
    this.#drainWaiter = undefined;
    waiter?.();
  }

  raw(socket: BunSocket): RawSocket {
    let released = false;
    return {
      read: async () => {
        for (;;) {
          const chunk = this.#queue.shift();
          if (chunk !== undefined) return chunk;
          if (this.#failure !== undefined) throw this.#failure;
          if (this.#ended || this.#closed) return null;
          const waiting = new Promise<void>((resolve) => this.#readWaiter = resolve);
          socket.resume();
          await waiting;
        }
      },
      write: async (chunk) => {
        let rest = chunk;
        for (;;) {
          if (this.#failure !== undefined) throw this.#failure;
          if (this.#closed) throw new Error("socket is closed");
          const written = socket.write(rest);
          if (written < 0) throw new Error("socket is closed");
          rest = rest.subarray(written);
          if (rest.byteLength === 0) return;
          await new Promise<void>((resolve) => this.#drainWaiter = resolve);
        }
      },
      shutdown: () => {
        socket.shutdown();
        return Promise.resolve();
      },
      destroy: () => {
        if (released) return;
        released = true;
        socket.terminate();
        this.#closed = true;
        this.#wakeReader();
        this.#wakeWriter();
      },
    };
  }
}

/**
 * Listens with `Bun.listen({ hostname, port, allowHalfOpen: true })`; each accepted socket
 * gets the state a connected one has (pull-based reads through `pause()`/`resume()`,
 * `closeWrite()` is `socket.shutdown()`) and becomes a {@linkcode SocketConnection}.
 *
 * @param options Address and port (0: the system chooses).
 * @returns The listener.
 * @throws the runtime's error when it cannot listen
 */
export function listenTcp(options: ListenOptions): Promise<TcpListener> {
  const states = new WeakMap<BunSocket, BunSocketState>();
  const queue: AcceptedConnection[] = [];
  let waiter: ((accepted: AcceptedConnection | null) => void) | undefined;
  let closed = false;
  const each = <A extends unknown[]>(pick: (handler: BunSocketHandler) => (socket: BunSocket, ...rest: A) => void) =>
  (socket: BunSocket, ...rest: A) => {
    const state = states.get(socket);
    if (state) pick(state.handler)(socket, ...rest);
  };
  const server = Bun.listen({
    hostname: options.hostname,
    port: options.port,
    allowHalfOpen: true,
    socket: {
      binaryType: "uint8array",
      open(socket) {
        if (closed) return socket.terminate();
        const state = new BunSocketState();
        states.set(socket, state);
        const host = socket.remoteAddress;
        const peer = host === undefined ? undefined : host.includes(":") ? `[${host}]:${socket.remotePort}` : `${host}:${socket.remotePort}`;
        const accepted = { connection: socketConnectionFromRaw(state.raw(socket)), peer };
        const wake = waiter;
        waiter = undefined;
        if (wake) wake(accepted);
        else queue.push(accepted);
      },
      data: each((handler) => handler.data),
      drain: each((handler) => handler.drain),
      end: each((handler) => handler.end),
      close: each((handler) => handler.close),
      error: each((handler) => handler.error),
    },
  });
  return Promise.resolve({
    hostname: server.hostname,
    port: server.port,
    accept() {
      const next = queue.shift();
      if (next) return Promise.resolve(next);
      if (closed) return Promise.resolve(null);
      return new Promise((resolve) => (waiter = resolve));
    },
    close() {
      if (!closed) {
        closed = true;
        server.stop(false);
        waiter?.(null);
        waiter = undefined;
        for (const accepted of queue.splice(0)) accepted.connection.abort();
      }
      return Promise.resolve();
    },
  });
}
