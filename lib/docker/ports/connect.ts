/**
 * `sandbox.connect(port)`: one relayed connection, opened within its deadline and signal,
 * bounded by the sandbox's connections at once, ended with the sandbox's stop cause when it
 * stops.
 *
 * @module
 */
import { SandboxAbortedError, SandboxDeadlineError, type SandboxError, SandboxQuotaError } from "../../sandbox/errors.ts";
import { MAX_SANDBOX_CONNECTIONS, normalizeConnect, type SandboxConnectOptions } from "../../sandbox/ports.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import type { RelayConnection } from "./_connection.ts";
import type { SandboxRelay } from "./relay.ts";

/** What a connect needs from its sandbox. */
export interface ConnectHost {
  readonly relay: SandboxRelay;
  /** Throws the stop cause (or a stopped error for `action`) unless the sandbox runs. */
  readonly assertRunning: (action: string) => void;
}

/** Internal options of a relayed connect (the public ones plus the forward's byte bound). */
export interface RelayConnectOptions extends SandboxConnectOptions {
  /** Most bytes both ways; `undefined`: unbounded. */
  readonly maxBytes?: number;
}

/**
 * Open a relayed connection to the guest's `port` (see `SandboxPorts.connect`).
 *
 * @throws {SandboxConfigurationError} for an invalid port or option, or a backend without a helper image
 * @throws {SandboxQuotaError} when {@linkcode MAX_SANDBOX_CONNECTIONS} connections are open
 * @throws {SandboxConnectionError} `refused` when nothing accepts it
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for `timeoutMs` / `signal`
 * @throws {SandboxError} the stop cause when the sandbox is not running
 */
export async function connectRelayed(host: ConnectHost, port: unknown, options: RelayConnectOptions = {}): Promise<RelayConnection> {
  const { maxBytes, ...rest } = options;
  const action = `connect to port ${typeof port === "number" ? port : String(JSON.stringify(port)).slice(0, 40)} in the sandbox`;
  const request = normalizeConnect(port, rest, action);
  host.assertRunning(action);
  const { signal, timeoutMs } = request;
  if (signal?.aborted) throw new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: signal.reason });
  const startedAt = Date.now();
  const left = () => Math.max(1, timeoutMs - (Date.now() - startedAt));
  const race = {
    signal,
    onTimeout: () => new SandboxDeadlineError(`Cannot ${action}: not connected within ${timeoutMs} ms (options.timeoutMs)`),
    onAbort: (reason: unknown) => new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: reason }),
  };
  const channel = await raceDeadline(host.relay.channel(action, timeoutMs), { ...race, timeoutMs: left() });
  if (channel.size >= MAX_SANDBOX_CONNECTIONS) {
    throw new SandboxQuotaError(
      `Cannot ${action}: ${MAX_SANDBOX_CONNECTIONS} connections of this sandbox are open, the most its relay carries; close one first`,
    );
  }
  const opening = channel.open(request.port, maxBytes);
  let connection: RelayConnection;
  try {
    connection = await raceDeadline(opening.promise, { ...race, timeoutMs: left(), onLate: (late) => void late.close() });
  } catch (error) {
    opening.cancel(error as SandboxError);
    throw error;
  }
  if (signal !== undefined) {
    const onAbort = () => connection.fail(new SandboxAbortedError(`Cannot use the connection to port ${request.port}: aborted`, { cause: signal.reason }));
    signal.addEventListener("abort", onAbort, { once: true });
    connection.closed.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
  }
  return connection;
}
