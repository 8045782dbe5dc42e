/**
 * Unix-socket connections on Deno (`Deno.connect({ transport: "unix" })`), and TCP
 * listeners (`Deno.listen`).
 *
 * @module
 */
import { connectWithin } from "./_connect_within.ts";
import { type RawSocket, socketConnectionFromRaw } from "./raw_socket.ts";
import type { AcceptedConnection, ConnectOptions, ListenOptions, SocketConnection, TcpListener } from "./types.ts";

/** Bytes asked for per `conn.read()`: one runtime chunk. */
const READ_BYTES = 65_536;

/**
 * Connects to a Unix socket with `Deno.connect({ transport: "unix", path })`. Reads
 * are pull-based, at most 64 KiB each; `closeWrite()` calls `conn.closeWrite()`
 * (`shutdown(2)`, FIN).
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
 * // ignore: runs on Deno only, and needs a listening socket
 * import { connectUnix } from "./deno.ts";
 *
 * const connection = await connectUnix("/var/run/docker.sock", { timeoutMs: 10_000 });
 * await connection.close();
 * ```
 */
export async function connectUnix(
  path: string,
  options: ConnectOptions = {},
): Promise<SocketConnection> {
  const conn = await connectWithin(
    path,
    options,
    () => Deno.connect({ transport: "unix", path }),
    (late) => late.close(),
  );
  return socketConnectionFromRaw(denoSocket(conn));
}

function denoSocket(conn: Deno.UnixConn | Deno.TcpConn): RawSocket {
  let released = false;
  // Reads are never concurrent, so one buffer serves them all; each chunk is copied out at
  // its exact length. A fresh 64 KiB buffer per read cost more: the Engine's pieces average
  // ~25 KiB, so most of each buffer was zero-filled for nothing and pinned with the chunk.
  const buffer = new Uint8Array(READ_BYTES);
  return {
    async read() {
      const length = await conn.read(buffer);
      if (length === null) return null;
      return buffer.slice(0, length);
    },
    async write(chunk) {
      let offset = 0;
      while (offset < chunk.byteLength) {
        offset += await conn.write(chunk.subarray(offset));
      }
    },
    shutdown: () => conn.closeWrite(),
    destroy() {
      if (released) return;
      released = true;
      try {
        conn.close();
      } catch {
        // Already closed by the runtime.
      }
    },
  };
}

/**
 * Listens with `Deno.listen({ hostname, port, transport: "tcp" })`; each accepted
 * `Deno.TcpConn` becomes a {@linkcode SocketConnection} like a Unix one (pull-based reads,
 * `closeWrite()` is `conn.closeWrite()`). Needs `--allow-net=<hostname>` (Deno throws
 * `NotCapable` otherwise).
 *
 * @param options Address and port (0: the system chooses).
 * @returns The listener.
 * @throws the runtime's error when it cannot listen
 */
export function listenTcp(options: ListenOptions): Promise<TcpListener> {
  const listener = Deno.listen({ hostname: options.hostname, port: options.port, transport: "tcp" });
  const address = listener.addr as Deno.NetAddr;
  let closed = false;
  return Promise.resolve({
    hostname: address.hostname,
    port: address.port,
    async accept(): Promise<AcceptedConnection | null> {
      if (closed) return null;
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (closed) return null;
        throw error;
      }
      const remote = conn.remoteAddr as Deno.NetAddr;
      const peer = remote.hostname.includes(":") ? `[${remote.hostname}]:${remote.port}` : `${remote.hostname}:${remote.port}`;
      return { connection: socketConnectionFromRaw(denoSocket(conn)), peer };
    },
    close() {
      if (!closed) {
        closed = true;
        try {
          listener.close();
        } catch {
          // Closed already.
        }
      }
      return Promise.resolve();
    },
  });
}
