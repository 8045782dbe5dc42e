/**
 * Unix-socket connections on Node (`node:net`). The only file of the project that uses
 * Node streams.
 *
 * @module
 */
import { createConnection, type NetConnectOpts, type Socket } from "node:net";
import { connectWithin } from "./_connect_within.ts";
import { type RawSocket, socketConnectionFromRaw } from "./raw_socket.ts";
import type { ConnectOptions, SocketConnection } from "./types.ts";

/**
 * Connects to a Unix socket with `node:net` `createConnection({ path, allowHalfOpen:
 * true, readableHighWaterMark: 0 })`. The socket reads from the kernel only while a read
 * is pending (at most one 64 KiB runtime chunk buffered); `closeWrite()` calls
 * `socket.end()`, which sends FIN and keeps the read side open.
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
  const socket = await connectWithin(path, options, () => open(path), (late) => late.destroy());
  return socketConnectionFromRaw(nodeSocket(socket));
}

function open(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // net.Socket hands Duplex options on to its stream; @types/node does not list this one.
    // With 0 the socket reads from the kernel only when `read()` finds its buffer empty.
    const socketOptions: NetConnectOpts & { readableHighWaterMark: number } = {
      path,
      allowHalfOpen: true,
      readableHighWaterMark: 0,
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

function nodeSocket(socket: Socket): RawSocket {
  let ended = false;
  let closed = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const waiter = wake;
    wake = undefined;
    waiter?.();
  };
  socket.on("readable", notify);
  socket.on("end", () => {
    ended = true;
    notify();
  });
  socket.on("error", (error) => {
    failure ??= error;
    notify();
  });
  socket.on("close", () => {
    closed = true;
    notify();
  });

  return {
    async read() {
      for (;;) {
        if (failure !== undefined) throw failure;
        const chunk: Uint8Array | null = socket.read();
        if (chunk !== null) {
          return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        }
        if (ended || closed) return null;
        await new Promise<void>((resolve) => wake = resolve);
      }
    },
    write(chunk) {
      // Resolves from the write callback: Node calls it once the kernel has every byte, so
      // the chunk's memory is no longer referenced and its producer may reuse it. A socket
      // that closes first settles the write too, whether or not Node calls back.
      return new Promise((resolve, reject) => {
        if (failure !== undefined) return reject(failure);
        if (closed || socket.writableEnded) return reject(new Error("socket is closed"));
        const onClose = () => reject(failure ?? new Error("socket is closed"));
        socket.once("close", onClose);
        socket.write(chunk, (error) => {
          socket.off("close", onClose);
          if (error) {
            failure ??= error;
            reject(error);
          } else resolve();
        });
      });
    },
    shutdown() {
      return new Promise((resolve, reject) => {
        if (failure !== undefined) return reject(failure);
        if (closed) return reject(new Error("socket is closed"));
        const onClose = () => reject(failure ?? new Error("socket is closed"));
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
