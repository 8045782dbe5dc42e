/**
 * Unix-socket connections on Bun (`Bun.connect({ unix })`).
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
import type { ConnectOptions, SocketConnection } from "./types.ts";

/** The part of Bun's socket API this adapter uses (Bun 1.4). */
interface BunSocket {
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

declare const Bun: {
  connect(options: {
    unix: string;
    allowHalfOpen: boolean;
    socket: BunSocketHandler;
  }): Promise<BunSocket>;
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
