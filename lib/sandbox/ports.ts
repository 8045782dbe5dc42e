/**
 * Reaching a server inside a sandbox without a published port: the byte connection
 * (`connect`), one HTTP exchange over it (`fetch`) and a host listener whose every accepted
 * connection is one `connect` (`forwardPort`) — their options, bounds, events and the error
 * of a connection that failed. Runtime-neutral; the Docker backend implements them in
 * `lib/docker/ports/`.
 *
 * @module
 */
import { z } from "zod";
import { integerFrom, parseConfiguration } from "../internal/zod_issues.ts";
import { SandboxError, type SandboxErrorOptions } from "./errors.ts";

/**
 * Why a connection to a guest port failed:
 * - `refused`: nothing accepted it (no listener on `127.0.0.1:<port>` inside the sandbox);
 * - `reset`: the guest's side failed or reset the connection mid-stream;
 * - `relay_lost`: the path between host and guest broke (the relay stopped, its Engine
 *   connection was cut), so bytes in flight may be lost;
 * - `invalid_response`: `fetch` only: the guest's answer is not a well-formed HTTP/1.1 response.
 */
export type SandboxConnectionFailure = "refused" | "reset" | "relay_lost" | "invalid_response";

/**
 * A connection to a guest port failed (code `connection`); `reason` says how. A stream that
 * was cut never ends normally: it errors with this (or with the sandbox's stop cause).
 *
 * @example
 * ```ts
 * import { SandboxConnectionError } from "./ports.ts";
 *
 * const error = new SandboxConnectionError("refused", "Cannot connect to port 3000 in the sandbox: connection refused");
 * console.log(error.code, error.reason); // "connection" "refused"
 * ```
 */
export class SandboxConnectionError extends SandboxError {
  /** Always `"SandboxConnectionError"`. */
  override readonly name: string = "SandboxConnectionError";
  /** Always `"connection"`. */
  declare readonly code: "connection";
  /** How the connection failed. */
  readonly reason: SandboxConnectionFailure;

  /**
   * Creates the error.
   *
   * @param reason How the connection failed.
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(reason: SandboxConnectionFailure, message: string, options?: SandboxErrorOptions) {
    super("connection", message, options);
    this.reason = reason;
  }
}

/**
 * A byte connection to `127.0.0.1:<port>` inside a sandbox's network namespace.
 *
 * - `readable`: the guest's bytes; closes when the guest ended its side (FIN), errors when
 *   the connection failed (a {@linkcode SandboxConnectionError}, or the sandbox's stop cause
 *   once it stopped). Cancelling it resets the connection.
 * - `writable`: bytes to the guest; `close()` half-closes (the guest reads end of file and
 *   may still answer); `abort()` resets the connection.
 * - `closed`: resolves once both sides ended and the guest socket is closed, or `close()`
 *   was called; rejects with the failure (already marked handled).
 * - `close()`: ends the connection now in both directions (the guest's socket is reset if
 *   it is still open); idempotent.
 */
export interface SandboxConnection {
  /** Bytes from the guest. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Bytes to the guest; closing it half-closes. */
  readonly writable: WritableStream<Uint8Array>;
  /** Settles once the connection is over (see the interface doc). */
  readonly closed: Promise<void>;
  /** Ends the connection now. */
  close(): Promise<void>;
}

/** Options of `sandbox.connect(port, options)`. */
export interface SandboxConnectOptions {
  /**
   * Aborts connecting, and later the connection (both streams error with a
   * `SandboxAbortedError`).
   *
   * @default undefined
   */
  readonly signal?: AbortSignal;
  /**
   * Time allowed to open the connection (the first one of a sandbox also creates its relay),
   * milliseconds, 1 … 2^31 − 1. Past it: `SandboxDeadlineError`.
   *
   * @default 30000
   */
  readonly timeoutMs?: number;
}

/** Default of {@linkcode SandboxConnectOptions.timeoutMs}, milliseconds: 30 s. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/** Largest timer, milliseconds (2^31 − 1). */
const MAX_MS = 2 ** 31 - 1;

/** A guest TCP port, 1 … 65535. */
const portSchema = integerFrom(1, 65_535, "", "must be an integer from 1 to 65535 (a TCP port)");

const signalSchema = z.custom<AbortSignal>((value) => value instanceof AbortSignal, { error: "must be an AbortSignal" });

const connectOptionsSchema = z.strictObject({
  signal: signalSchema.optional(),
  timeoutMs: integerFrom(1, MAX_MS, "milliseconds").optional(),
});

/** Validated connect options. */
export interface NormalizedConnectOptions {
  readonly port: number;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number;
}

/**
 * Validate `connect(port, options)`.
 *
 * @throws {SandboxConfigurationError} naming `port` or `options.<field>`
 */
export function normalizeConnect(port: unknown, options: unknown, action: string): NormalizedConnectOptions {
  const parsedPort = parseConfiguration(portSchema, port, action, "port");
  const parsed = parseConfiguration(connectOptionsSchema, options ?? {}, action, "options");
  return { port: parsedPort, signal: parsed.signal, timeoutMs: parsed.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS };
}

/** Options of `sandbox.fetch(port, request, options)`: the bounds of the one exchange. */
export interface SandboxFetchOptions {
  /** Aborts the exchange at any stage, the body included. @default the request's signal */
  readonly signal?: AbortSignal;
  /**
   * Time allowed for the whole exchange, connect and response body included, milliseconds.
   * Past it the promise (or the body stream) fails with `SandboxDeadlineError`.
   *
   * @default 30000
   */
  readonly timeoutMs?: number;
  /**
   * Most bytes of the response head (status line, fields, blank line), 1 KiB … 1 MiB; more
   * fails with `SandboxQuotaError`.
   *
   * @default 16384
   */
  readonly maxHeadBytes?: number;
  /**
   * Most response body bytes (after chunked decoding); more fails the body stream with
   * `SandboxQuotaError`.
   *
   * @default 67108864 (64 MiB)
   */
  readonly maxBodyBytes?: number;
}

/** Defaults of {@linkcode SandboxFetchOptions}. */
export const DEFAULT_FETCH_LIMITS: { readonly timeoutMs: number; readonly maxHeadBytes: number; readonly maxBodyBytes: number } = Object.freeze({
  timeoutMs: 30_000,
  maxHeadBytes: 16 * 1024,
  maxBodyBytes: 64 * 1024 * 1024,
});

const fetchOptionsSchema = z.strictObject({
  signal: signalSchema.optional(),
  timeoutMs: integerFrom(1, MAX_MS, "milliseconds").optional(),
  maxHeadBytes: integerFrom(1024, 1024 * 1024, "bytes").optional(),
  maxBodyBytes: integerFrom(0, Number.MAX_SAFE_INTEGER, "bytes").optional(),
});

/** Validated fetch options. */
export interface NormalizedFetchOptions {
  readonly port: number;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number;
  readonly maxHeadBytes: number;
  readonly maxBodyBytes: number;
}

/**
 * Validate `fetch(port, request, options)`'s port and options.
 *
 * @throws {SandboxConfigurationError} naming `port` or `options.<field>`
 */
export function normalizeFetch(port: unknown, options: unknown, action: string): NormalizedFetchOptions {
  const parsedPort = parseConfiguration(portSchema, port, action, "port");
  const parsed = parseConfiguration(fetchOptionsSchema, options ?? {}, action, "options");
  return {
    port: parsedPort,
    signal: parsed.signal,
    timeoutMs: parsed.timeoutMs ?? DEFAULT_FETCH_LIMITS.timeoutMs,
    maxHeadBytes: parsed.maxHeadBytes ?? DEFAULT_FETCH_LIMITS.maxHeadBytes,
    maxBodyBytes: parsed.maxBodyBytes ?? DEFAULT_FETCH_LIMITS.maxBodyBytes,
  };
}

/** Options of `sandbox.forwardPort(port, options)`. */
export interface SandboxForwardOptions {
  /**
   * Host address to listen on. Loopback by default: only programs on this host reach it. Any
   * other address (`0.0.0.0`, a LAN address) exposes the guest's server to whoever reaches
   * that address — the caller's explicit choice.
   *
   * @default "127.0.0.1"
   */
  readonly hostname?: string;
  /** Host port, 0 … 65535; `0` lets the system choose (read it from `url`). @default 0 */
  readonly port?: number;
  /**
   * Most accepted connections relayed at once, 1 … 64; one more is closed at once and
   * reported as `refused` (`reason: "max_connections"`).
   *
   * @default 16
   */
  readonly maxConnections?: number;
  /**
   * Most bytes per connection, both directions together; past it the connection is reset
   * and reported `closed` with `reason: "max_bytes"`. `undefined`: unbounded.
   *
   * @default undefined
   */
  readonly maxBytesPerConnection?: number;
  /** Most events kept unread (oldest dropped first), 1 … 65,536. @default 1024 */
  readonly eventCapacity?: number;
  /**
   * Once the host client ended its side (FIN), how long the guest has to end its own,
   * milliseconds, 1 … 3,600,000; then the connection is reset and reported `closed` with
   * `reason: "half_close_timeout"`. Bounds how long a guest server that never ends (or a
   * client that left) holds one of the forward's places.
   *
   * @default 30000
   */
  readonly halfCloseTimeoutMs?: number;
}

/** Defaults of {@linkcode SandboxForwardOptions}. */
export const DEFAULT_FORWARD_OPTIONS: {
  readonly hostname: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly eventCapacity: number;
  readonly halfCloseTimeoutMs: number;
} = Object.freeze({
  hostname: "127.0.0.1",
  port: 0,
  maxConnections: 16,
  eventCapacity: 1024,
  halfCloseTimeoutMs: 30_000,
});

/** Largest `maxConnections` of a forward, and of a sandbox's connections at once: 64. */
export const MAX_SANDBOX_CONNECTIONS = 64;

const forwardOptionsSchema = z.strictObject({
  hostname: z.string().min(1).max(253).regex(/^[0-9A-Za-z.:\-[\]]+$/u, { error: "must be a host address or name, e.g. \"127.0.0.1\"" }).optional(),
  port: integerFrom(0, 65_535, "").optional(),
  maxConnections: integerFrom(1, MAX_SANDBOX_CONNECTIONS, "connections").optional(),
  maxBytesPerConnection: integerFrom(1, Number.MAX_SAFE_INTEGER, "bytes").optional(),
  eventCapacity: integerFrom(1, 65_536, "events").optional(),
  halfCloseTimeoutMs: integerFrom(1, 3_600_000, "ms").optional(),
});

/** Validated forward options. */
export interface NormalizedForwardOptions {
  readonly guestPort: number;
  readonly hostname: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly maxBytesPerConnection: number | undefined;
  readonly eventCapacity: number;
  readonly halfCloseTimeoutMs: number;
}

/**
 * Validate `forwardPort(port, options)`.
 *
 * @throws {SandboxConfigurationError} naming `port` or `options.<field>`
 */
export function normalizeForward(port: unknown, options: unknown, action: string): NormalizedForwardOptions {
  const guestPort = parseConfiguration(portSchema, port, action, "port");
  const parsed = parseConfiguration(forwardOptionsSchema, options ?? {}, action, "options");
  return {
    guestPort,
    hostname: parsed.hostname ?? DEFAULT_FORWARD_OPTIONS.hostname,
    port: parsed.port ?? DEFAULT_FORWARD_OPTIONS.port,
    maxConnections: parsed.maxConnections ?? DEFAULT_FORWARD_OPTIONS.maxConnections,
    maxBytesPerConnection: parsed.maxBytesPerConnection,
    eventCapacity: parsed.eventCapacity ?? DEFAULT_FORWARD_OPTIONS.eventCapacity,
    halfCloseTimeoutMs: parsed.halfCloseTimeoutMs ?? DEFAULT_FORWARD_OPTIONS.halfCloseTimeoutMs,
  };
}

/**
 * One event of a port forward:
 * - `opened`: a host connection was accepted and its guest connection opened;
 * - `refused`: a host connection was closed at once — `reason` `max_connections` (the
 *   forward's bound), `guest_refused` (nothing listens on the guest port), `sandbox_busy`
 *   (the sandbox's own connection bound) or `failed` (anything else, in `message`);
 * - `closed`: an opened connection ended — `reason` `done` (both sides ended), `max_bytes`,
 *   `reset` (either side reset or failed), `half_close_timeout` (the guest did not end its
 *   side within `halfCloseTimeoutMs` of the host client's end), `forward_closed` or
 *   `sandbox_stopped`.
 */
export interface SandboxForwardEvent {
  /** What happened. */
  readonly event: "opened" | "refused" | "closed";
  /** Per-forward sequence number of the host connection, from 1. */
  readonly connection: number;
  /** The host peer's address and port (`"127.0.0.1:51234"`), when the runtime tells it. */
  readonly peer: string | undefined;
  /** Why (`refused` and `closed`). */
  readonly reason?: string;
  /** A failure's message (`refused` `failed`, `closed` `reset`). */
  readonly message?: string;
  /** Bytes host → guest (`closed`). */
  readonly bytesIn?: number;
  /** Bytes guest → host (`closed`). */
  readonly bytesOut?: number;
}

/**
 * A host listener forwarding to a guest port. `events` is a bounded queue read as an async
 * iterable (oldest dropped first, counted in `dropped`); it ends once the forward closed and
 * every event was read.
 */
export interface SandboxPortForward extends AsyncDisposable {
  /** `http://<hostname>:<port>/` of the listener (IPv6 in brackets). */
  readonly url: string;
  /** The address listened on. */
  readonly hostname: string;
  /** The port listened on (the system's choice when `port: 0` was asked). */
  readonly port: number;
  /** The forward's events. */
  readonly events: AsyncIterable<SandboxForwardEvent> & { readonly dropped: number };
  /** Resolves once the listener is closed and every forwarded connection ended. */
  readonly closed: Promise<void>;
  /** Stops listening and ends every forwarded connection (`closed` `forward_closed`); idempotent. */
  close(): Promise<void>;
}

/**
 * What a sandbox offers for reaching its guest servers (the Docker backend's `DockerSandbox`
 * implements it; see `docs/ports.md`).
 */
export interface SandboxPorts {
  /**
   * Open a byte connection to `127.0.0.1:port` inside the sandbox's network namespace,
   * under every network policy, with no published port and no route from the guest to the
   * host.
   *
   * @throws {SandboxConnectionError} `refused` when nothing accepts it
   * @throws {SandboxQuotaError} when the sandbox's connections at once are at their bound
   * @throws {SandboxConfigurationError} for an invalid port or option
   * @throws {SandboxDeadlineError} / {SandboxAbortedError} for `timeoutMs` / `signal`
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is not running
   */
  connect(port: number, options?: SandboxConnectOptions): Promise<SandboxConnection>;
  /**
   * One HTTP/1.1 exchange with the guest server on `port` over {@linkcode connect}
   * (`Connection: close`), answered as a standard `Response`.
   */
  fetch(port: number, request: Request | string | URL, options?: SandboxFetchOptions): Promise<Response>;
  /** Listen on the host and relay each accepted connection to the guest's `port`. */
  forwardPort(port: number, options?: SandboxForwardOptions): Promise<SandboxPortForward>;
}
