/**
 * The byte connection every runtime adapter returns, and the options for opening one.
 *
 * @module
 */

/**
 * A connected Unix stream socket seen as two Web Streams plus the lifecycle calls a
 * protocol client needs. One adapter per runtime implements it
 * (`lib/engine/socket/{deno,bun,node}.ts`); nothing above this layer touches runtime APIs.
 *
 * Who closes what: the owner of a connection must end it exactly once with {@linkcode
 * SocketConnection.close} or {@linkcode SocketConnection.abort}. Cancelling
 * {@linkcode SocketConnection.readable} or aborting {@linkcode SocketConnection.writable}
 * also destroys the whole connection.
 */
export interface SocketConnection {
  /**
   * Bytes from the peer, one runtime read per chunk (at most 64 KiB on Deno and Node,
   * at most one Bun receive buffer on Bun). Pull-based: the adapter reads from the
   * socket only while a read is pending, so at most one runtime chunk is buffered.
   * Closes at the peer's end of stream (FIN); errors with a
   * `DockerEngineTransportError` of code `connection` when the socket fails.
   */
  readonly readable: ReadableStream<Uint8Array>;
  /**
   * Bytes to the peer. A write resolves once the kernel has every byte of the chunk and
   * the runtime no longer holds it, so the chunk's memory may be reused from then on.
   * Chunks are written one at a time; up to 256 KiB may wait in the queue, after which
   * `writer.ready` waits (backpressure), so a writer can prepare the next chunks while one
   * is written.
   * Closing it sends FIN like {@linkcode SocketConnection.closeWrite}.
   */
  readonly writable: WritableStream<Uint8Array>;
  /**
   * Half-closes the connection: waits for the write in flight, sends FIN and keeps
   * {@linkcode SocketConnection.readable} open. Writes still waiting in the writable's
   * queue and later writes fail; to half-close after every queued write, close the
   * writable instead (`writer.close()`). Calling it again does nothing.
   *
   * @returns Resolves once FIN was handed to the kernel.
   */
  closeWrite(): Promise<void>;
  /**
   * Gracefully closes the whole connection: waits for the write in flight (not for writes
   * still queued behind it, which fail), then releases the socket. {@linkcode SocketConnection.readable} ends (a pending read
   * resolves as done) and later writes fail.
   *
   * @returns Resolves once the socket was released.
   */
  close(): Promise<void>;
  /**
   * Destroys the connection now. Pending and later reads and writes reject with
   * `reason` (a `DockerEngineTransportError` of code `aborted` when omitted).
   *
   * @param reason Why the connection is destroyed.
   */
  abort(reason?: unknown): void;
}

/** Options for opening a {@linkcode SocketConnection}. */
export interface ConnectOptions {
  /**
   * Aborts connecting: the promise rejects with a `DockerEngineTransportError` of code
   * `aborted` whose `cause` is the signal's reason. No effect once connected.
   *
   * @default undefined (no signal)
   */
  readonly signal?: AbortSignal;
  /**
   * Time allowed for connecting, in milliseconds (a safe integer from 1 to 2^31 − 1).
   * When it passes the promise rejects with a `DockerEngineTransportError` of code
   * `deadline`.
   *
   * @default undefined (no connect deadline)
   */
  readonly timeoutMs?: number;
}

/**
 * Opens a Unix-socket connection; the signature every runtime adapter exports as
 * `connectUnix` and that HTTP exchanges accept as a `connector`.
 *
 * @param path Absolute path of the Unix socket.
 * @param options Signal and connect deadline.
 * @returns The open connection.
 */
export type UnixConnector = (
  path: string,
  options?: ConnectOptions,
) => Promise<SocketConnection>;

/** A connection a {@linkcode TcpListener} accepted. */
export interface AcceptedConnection {
  /** The connection (its owner must close or abort it). */
  readonly connection: SocketConnection;
  /** The peer's `address:port` (`[v6]:port`), when the runtime tells it. */
  readonly peer: string | undefined;
}

/** A listening TCP socket (one per runtime adapter, `listenTcp`). */
export interface TcpListener {
  /** The address listened on. */
  readonly hostname: string;
  /** The port listened on (the system's choice when 0 was asked). */
  readonly port: number;
  /**
   * The next accepted connection, `null` once the listener is closed. Connections that
   * arrive while no `accept()` waits are queued by the runtime (its listen backlog).
   */
  accept(): Promise<AcceptedConnection | null>;
  /** Stops listening; a waiting `accept()` resolves `null`. Connections accepted stay open. */
  close(): Promise<void>;
}

/** Options of `listenTcp`. */
export interface ListenOptions {
  /** Address to listen on, e.g. `127.0.0.1`. */
  readonly hostname: string;
  /** Port, 0 … 65535 (0: the system chooses). */
  readonly port: number;
}

/**
 * Opens a TCP listener; the signature every runtime adapter exports as `listenTcp`.
 *
 * @throws the runtime's error when it cannot listen (address in use, Deno's permission denial)
 */
export type TcpListen = (options: ListenOptions) => Promise<TcpListener>;
