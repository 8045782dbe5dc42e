/**
 * Runtime detection and the runtime-neutral way to open a Unix-socket connection.
 *
 * @module
 */
import type { ConnectOptions, ListenOptions, SocketConnection, TcpListen, TcpListener, UnixConnector } from "./types.ts";

/** A JavaScript runtime this library supports. */
export type Runtime = "deno" | "bun" | "node";

/**
 * Detects the running runtime by checking `globalThis` in a fixed order: `Deno`, then
 * `Bun`, otherwise Node (Deno and Bun both also provide Node's globals, so Node comes last).
 *
 * @returns `"deno"`, `"bun"` or `"node"`.
 *
 * @example
 * ```ts
 * import { detectRuntime } from "./connect.ts";
 *
 * console.log(["deno", "bun", "node"].includes(detectRuntime())); // true
 * ```
 */
export function detectRuntime(): Runtime {
  const global = globalThis as { Deno?: unknown; Bun?: unknown };
  if (typeof global.Deno === "object" && global.Deno !== null) return "deno";
  if (typeof global.Bun === "object" && global.Bun !== null) return "bun";
  return "node";
}

let adapter: Promise<UnixConnector> | undefined;
/** The adapter once loaded: later connections start at once, not a microtask turn later. */
let loaded: UnixConnector | undefined;

function loadAdapter(): Promise<UnixConnector> {
  switch (detectRuntime()) {
    case "deno":
      return import("./deno.ts").then((module) => module.connectUnix);
    case "bun":
      return import("./bun.ts").then((module) => module.connectUnix);
    case "node":
      return import("./node.ts").then((module) => module.connectUnix);
  }
}

/**
 * Opens a Unix-socket connection with the adapter of the running runtime
 * (`lib/engine/socket/{deno,bun,node}.ts`, loaded on first use with a dynamic
 * `import()` so each runtime loads only its own file).
 *
 * @param path Absolute path of the Unix socket, e.g. `/var/run/docker.sock`.
 * @param options Signal and connect deadline (milliseconds).
 * @returns The open connection; its owner must `close()` or `abort()` it.
 * @throws {TypeError} When `path` is not absolute or an option is invalid.
 * @throws {DockerEngineTransportError} `connection` when connecting fails (missing
 * socket, refused, permission denied), `deadline` when `options.timeoutMs` passes first,
 * `aborted` when `options.signal` fires first.
 *
 * @example Half-close, then read the answer
 * ```ts ignore
 * // ignore: needs a listening socket
 * import { connectUnixSocket } from "./connect.ts";
 *
 * const connection = await connectUnixSocket("/var/run/docker.sock", { timeoutMs: 10_000 });
 * const writer = connection.writable.getWriter();
 * await writer.write(new TextEncoder().encode("GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n"));
 * await writer.close(); // FIN; the read side stays open
 * for await (const chunk of connection.readable) console.log(chunk.byteLength);
 * await connection.close();
 * ```
 */
export function connectUnixSocket(
  path: string,
  options?: ConnectOptions,
): Promise<SocketConnection> {
  if (loaded !== undefined) return loaded(path, options);
  adapter ??= loadAdapter().then((connect) => loaded = connect);
  return adapter.then((connect) => connect(path, options));
}

let listenAdapter: Promise<TcpListen> | undefined;

function loadListen(): Promise<TcpListen> {
  switch (detectRuntime()) {
    case "deno":
      return import("./deno.ts").then((module) => module.listenTcp);
    case "bun":
      return import("./bun.ts").then((module) => module.listenTcp);
    case "node":
      return import("./node.ts").then((module) => module.listenTcp);
  }
}

/**
 * Opens a TCP listener with the adapter of the running runtime (`Deno.listen`,
 * `Bun.listen`, `node:net` `createServer`), whose accepted connections are
 * {@linkcode SocketConnection}s with a real half-close.
 *
 * @param options Address and port.
 * @returns The listener; its owner must `close()` it.
 * @throws the runtime's error when it cannot listen (`EADDRINUSE`, `EADDRNOTAVAIL`, Deno's
 *   `NotCapable` without `--allow-net`)
 *
 * @example
 * ```ts ignore
 * // ignore: opens a listener
 * import { listenTcpSocket } from "./connect.ts";
 *
 * const listener = await listenTcpSocket({ hostname: "127.0.0.1", port: 0 });
 * console.log(listener.port);
 * await listener.close();
 * ```
 */
export function listenTcpSocket(options: ListenOptions): Promise<TcpListener> {
  listenAdapter ??= loadListen();
  return listenAdapter.then((listen) => listen(options));
}
