/**
 * Unix-socket connections for every supported runtime (Deno 2, Bun 1, Node ≥ 23.6): one
 * {@linkcode SocketConnection} shape over `Deno.connect`, `Bun.connect` and `node:net`,
 * with pull-based reads, backpressured writes and a real half-close.
 *
 * @module
 */
export { connectUnixSocket, detectRuntime, listenTcpSocket, type Runtime } from "./connect.ts";
export type { AcceptedConnection, ConnectOptions, ListenOptions, SocketConnection, TcpListen, TcpListener, UnixConnector } from "./types.ts";
export {
  DockerEngineTransportError,
  type DockerEngineTransportErrorCode,
  type DockerEngineTransportErrorOptions,
} from "../errors.ts";
