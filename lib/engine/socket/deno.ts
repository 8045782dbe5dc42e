/**
 * Unix-socket connections on Deno (`Deno.connect({ transport: "unix" })`).
 *
 * @module
 */
import { connectWithin } from "./_connect_within.ts";
import { type RawSocket, socketConnectionFromRaw } from "./raw_socket.ts";
import type { ConnectOptions, SocketConnection } from "./types.ts";

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

function denoSocket(conn: Deno.UnixConn): RawSocket {
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
