/**
 * `sandbox.forwardPort(port)`: a host TCP listener (loopback unless the caller names another
 * address) where each accepted connection is one relayed `connect()`, piped both ways —
 * bytes only, so HTTP, WebSocket upgrades and anything else pass unchanged. Bounded: at most
 * `maxConnections` relayed at once (one more is closed at once and reported `refused`),
 * optionally `maxBytesPerConnection`; each connection's start and end is an event in a
 * bounded queue. The forward closes with the sandbox.
 *
 * @module
 */
import { SandboxConfigurationError, SandboxConflictError, SandboxError, SandboxQuotaError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import {
  normalizeForward,
  SandboxConnectionError,
  type SandboxForwardEvent,
  type SandboxForwardOptions,
  type SandboxPortForward,
} from "../../sandbox/ports.ts";
import { listenTcpSocket } from "../../engine/socket/connect.ts";
import type { AcceptedConnection, TcpListener } from "../../engine/socket/types.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";
import { BoundedEvents } from "../_bounded_events.ts";
import type { RelayConnection } from "./_connection.ts";
import type { RelayConnectOptions } from "./connect.ts";

/** Opens a relayed connection (the sandbox's `connect`, with the forward's byte bound). */
export type RelayConnector = (port: number, options: RelayConnectOptions) => Promise<RelayConnection>;

/** Why a forward ends its connections. */
export type ForwardEnd = "forward_closed" | "sandbox_stopped";

/** The listener's error in the project's terms. */
function listenError(error: unknown, action: string, hostname: string, port: number): SandboxError {
  const denial = denoPermissionDenial(error);
  if (denial) {
    // A port of 0 is the system's choice: the flag names the address alone.
    const flag = { ...denial, target: port === 0 ? hostname : `${hostname}:${port}`, flag: `--allow-net=${port === 0 ? hostname : `${hostname}:${port}`}` };
    return new SandboxConfigurationError(`Cannot ${action}: ${denialReason(flag)}`, { cause: error });
  }
  const code = (error as { code?: unknown }).code;
  if (code === "EADDRINUSE" || (error as Error).name === "AddrInUse") {
    return new SandboxConflictError(`Cannot ${action}: ${hostname}:${port} is in use on the host; choose another options.port or 0`, { cause: error });
  }
  if (code === "EADDRNOTAVAIL" || (error as Error).name === "AddrNotAvailable") {
    return new SandboxConfigurationError(`Cannot ${action}: options.hostname ${hostname} is not an address of this host`, { cause: error });
  }
  return new SandboxUnsupportedError(`Cannot ${action}: the host cannot listen on ${hostname}:${port} (${(error as Error).message})`, { cause: error });
}

/** Why a relayed connection ended, for its `closed` event. */
function endReason(error: unknown): { reason: string; message?: string } {
  if (error instanceof SandboxQuotaError) return { reason: "max_bytes", message: error.message };
  if (error instanceof SandboxError && error.code === "stopped") return { reason: "sandbox_stopped", message: error.message };
  return { reason: "reset", message: error instanceof Error ? error.message : String(error) };
}

/** A running forward (see `SandboxPortForward`). */
export class DockerPortForward implements SandboxPortForward {
  readonly url: string;
  readonly hostname: string;
  readonly port: number;
  readonly events: BoundedEvents<SandboxForwardEvent>;
  readonly #listener: TcpListener;
  readonly #closed: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  readonly #active = new Map<number, { host: AcceptedConnection; guest?: RelayConnection; end: Promise<void> }>();
  #ending: ForwardEnd | undefined;
  #sequence = 0;
  #loop: Promise<void>;
  /** The guest port forwarded to. */
  readonly guestPort: number;
  /** Most connections relayed at once. */
  readonly maxConnections: number;
  /** Most bytes per connection, both ways; `undefined`: unbounded. */
  readonly maxBytes: number | undefined;
  /** How long the guest has to end its side after the host client ended its own, ms. */
  readonly halfCloseTimeoutMs: number;
  readonly #connect: RelayConnector;

  /** @internal made by {@linkcode forwardRelayed} */
  constructor(
    listener: TcpListener,
    guestPort: number,
    maxConnections: number,
    maxBytes: number | undefined,
    capacity: number,
    connect: RelayConnector,
    halfCloseTimeoutMs: number,
  ) {
    this.halfCloseTimeoutMs = halfCloseTimeoutMs;
    this.guestPort = guestPort;
    this.maxConnections = maxConnections;
    this.maxBytes = maxBytes;
    this.#connect = connect;
    this.#listener = listener;
    this.hostname = listener.hostname;
    this.port = listener.port;
    this.url = `http://${listener.hostname.includes(":") ? `[${listener.hostname}]` : listener.hostname}:${listener.port}/`;
    this.events = new BoundedEvents(capacity);
    this.#loop = this.#accept();
  }

  /** Resolves once the listener is closed and every forwarded connection ended. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  async #accept(): Promise<void> {
    for (;;) {
      let accepted: AcceptedConnection | null;
      try {
        accepted = await this.#listener.accept();
      } catch {
        // One failed accept (EMFILE, a reset before accept) does not end the forward.
        if (this.#ending) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (accepted === null) return;
      const connection = ++this.#sequence;
      if (this.#ending || this.#active.size >= this.maxConnections) {
        accepted.connection.abort();
        this.events.push({ event: "refused", connection, peer: accepted.peer, reason: this.#ending ? "forward_closed" : "max_connections" });
        continue;
      }
      const entry: { host: AcceptedConnection; guest?: RelayConnection; end: Promise<void> } = { host: accepted, end: Promise.resolve() };
      this.#active.set(connection, entry);
      entry.end = this.#relay(connection, entry).finally(() => this.#active.delete(connection));
    }
  }

  async #relay(connection: number, entry: { host: AcceptedConnection; guest?: RelayConnection }): Promise<void> {
    const { connection: host, peer } = entry.host;
    let guest: RelayConnection;
    try {
      guest = await this.#connect(this.guestPort, { maxBytes: this.maxBytes });
    } catch (error) {
      host.abort();
      const reason = error instanceof SandboxConnectionError && error.reason === "refused"
        ? "guest_refused"
        : error instanceof SandboxQuotaError
        ? "sandbox_busy"
        : error instanceof SandboxError && error.code === "stopped"
        ? "sandbox_stopped"
        : "failed";
      this.events.push({ event: "refused", connection, peer, reason, message: (error as Error).message });
      return;
    }
    entry.guest = guest;
    if (this.#ending) guest.fail(this.#endError(this.#ending));
    this.events.push({ event: "opened", connection, peer });
    const up = host.readable.pipeTo(guest.writable);
    const down = guest.readable.pipeTo(host.writable);
    // Once the host client ended its side, the guest has halfCloseTimeoutMs to end its own.
    let halfClosed = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    up.then(() => {
      timer = setTimeout(() => {
        halfClosed = true;
        guest.fail(new SandboxConnectionError("reset", `Cannot relay port ${this.guestPort}: the guest did not end its side within ${this.halfCloseTimeoutMs} ms of the host client's end (options.halfCloseTimeoutMs)`));
      }, this.halfCloseTimeoutMs);
    }, () => {});
    const outcomes = await Promise.allSettled([up, down]);
    clearTimeout(timer);
    const failed = outcomes.find((outcome) => outcome.status === "rejected") as PromiseRejectedResult | undefined;
    const failure = guest.failure ?? failed?.reason;
    if (failure !== undefined) {
      host.abort();
      await guest.close();
    } else {
      await guest.closed.catch(() => {});
      await host.close();
    }
    const ended = failure === undefined
      ? { reason: "done" }
      : halfClosed
      ? { reason: "half_close_timeout", message: (failure as Error).message }
      : this.#ending && !(failure instanceof SandboxQuotaError) && !(failure instanceof SandboxError && failure.code === "stopped")
      ? { reason: this.#ending }
      : endReason(failure);
    this.events.push({ event: "closed", connection, peer, ...ended, bytesIn: guest.bytesIn, bytesOut: guest.bytesOut });
  }

  #endError(why: ForwardEnd): SandboxError {
    return new SandboxConnectionError("reset", `Cannot relay port ${this.guestPort}: ${why === "forward_closed" ? "the forward was closed" : "the sandbox stopped"}`);
  }

  /**
   * Stop listening and end every connection (`closed` events with `reason` `why`).
   *
   * @internal also called when the sandbox stops
   */
  async end(why: ForwardEnd): Promise<void> {
    if (this.#ending === undefined) {
      this.#ending = why;
      await this.#listener.close();
      for (const entry of this.#active.values()) {
        if (entry.guest) entry.guest.fail(this.#endError(why));
        else entry.host.connection.abort();
      }
      await this.#loop;
      await Promise.all([...this.#active.values()].map((entry) => entry.end));
      this.events.end();
      this.#closed.resolve();
    }
    await this.#closed.promise;
  }

  /** Stops listening and ends every forwarded connection; idempotent. */
  close(): Promise<void> {
    return this.end("forward_closed");
  }

  /** `await using` support: closes. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Start a forward of the guest's `port` (see `SandboxPorts.forwardPort`).
 *
 * @throws {SandboxConfigurationError} for an invalid option, an address not of this host, or
 *   Deno without `--allow-net=<hostname>` (the message names the flag)
 * @throws {SandboxConflictError} when the host port is in use
 * @throws {SandboxError} the stop cause when the sandbox is not running
 */
export async function forwardRelayed(
  connect: RelayConnector,
  port: unknown,
  options: SandboxForwardOptions | undefined,
  assertRunning: (action: string) => void,
): Promise<DockerPortForward> {
  const action = `forward port ${typeof port === "number" ? port : String(JSON.stringify(port)).slice(0, 40)} of the sandbox`;
  const request = normalizeForward(port, options, action);
  assertRunning(action);
  let listener: TcpListener;
  try {
    listener = await listenTcpSocket({ hostname: request.hostname, port: request.port });
  } catch (error) {
    throw listenError(error, action, request.hostname, request.port);
  }
  return new DockerPortForward(listener, request.guestPort, request.maxConnections, request.maxBytesPerConnection, request.eventCapacity, connect, request.halfCloseTimeoutMs);
}
