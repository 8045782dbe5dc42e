/**
 * The lifetime of one exchange: its deadlines, the caller's abort signal, and the first
 * failure, which aborts the connection and reaches every waiting party.
 *
 * @module
 */
import type { SocketConnection } from "../socket/types.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { reasonOf } from "../../internal/reason.ts";

/** Names of the deadlines an exchange runs. */
export type DeadlineName = "connect" | "header" | "whole";

/**
 * Owns the timers and the abort listener of one exchange. The first failure wins: it is
 * stored, the connection is aborted with it, timers and listeners are removed, and
 * failure callbacks run. `release()` removes them on success.
 */
export class ExchangeGuard {
  readonly #controller = new AbortController();
  readonly #timers = new Map<DeadlineName, ReturnType<typeof setTimeout>>();
  readonly #callerSignal: AbortSignal | undefined;
  readonly #onCallerAbort = () => {
    this.fail(
      new DockerEngineTransportError(
        "aborted",
        "Cannot complete the Engine request: the signal was aborted",
        { cause: this.#callerSignal?.reason },
      ),
    );
  };
  readonly #failureCallbacks: Array<(error: DockerEngineTransportError) => void> = [];
  #connection: SocketConnection | undefined;
  #failure: DockerEngineTransportError | undefined;
  #released = false;

  /**
   * Starts guarding; an already aborted `signal` fails the exchange at once.
   *
   * @param signal The caller's signal; aborting it fails the exchange with `aborted`.
   */
  constructor(signal: AbortSignal | undefined) {
    this.#callerSignal = signal;
    if (signal?.aborted) this.#onCallerAbort();
    else signal?.addEventListener("abort", this.#onCallerAbort, { once: true });
  }

  /** Aborted (with the failure as reason) when the exchange fails; for connecting. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The failure, once there is one. */
  get failure(): DockerEngineTransportError | undefined {
    return this.#failure;
  }

  /** Takes ownership of the connection: a failure (even an earlier one) aborts it. */
  adopt(connection: SocketConnection): void {
    this.#connection = connection;
    if (this.#failure !== undefined) connection.abort(this.#failure);
  }

  /** Runs `callback` with the failure when the exchange fails later. */
  onFailure(callback: (error: DockerEngineTransportError) => void): void {
    this.#failureCallbacks.push(callback);
  }

  /** Fails the exchange with code `deadline` and `message` after `ms` milliseconds. */
  startDeadline(name: DeadlineName, ms: number, message: string): void {
    if (this.#released) return;
    this.clearDeadline(name);
    this.#timers.set(
      name,
      setTimeout(() => this.fail(new DockerEngineTransportError("deadline", message)), ms),
    );
  }

  /** Stops the named deadline. */
  clearDeadline(name: DeadlineName): void {
    clearTimeout(this.#timers.get(name));
    this.#timers.delete(name);
  }

  /**
   * Fails the exchange unless it already failed or was released.
   *
   * @returns The failure that stands (the first one).
   */
  fail(error: DockerEngineTransportError): DockerEngineTransportError {
    if (this.#failure !== undefined || this.#released) return this.#failure ?? error;
    this.#failure = error;
    this.release();
    this.#controller.abort(error);
    // Runs from timers too: nothing a consumer does with the failure (a stream it already
    // closed, a socket already gone) may escape as an uncaught exception.
    try {
      this.#connection?.abort(error);
    } catch {
      // already closed
    }
    for (const callback of this.#failureCallbacks.splice(0)) {
      try {
        callback(error);
      } catch {
        // the consumer's stream was already closed or errored
      }
    }
    return error;
  }

  /**
   * Fails the exchange with whatever an operation threw: the standing failure if there
   * is one (an aborted read reports the deadline that aborted it), the error itself if it
   * is a transport error, else a `connection` error caused by it.
   *
   * @returns The failure that stands.
   */
  failWith(error: unknown): DockerEngineTransportError {
    if (this.#failure !== undefined) return this.#failure;
    return this.fail(
      error instanceof DockerEngineTransportError ? error : new DockerEngineTransportError(
        "connection",
        `Cannot complete the Engine request: ${reasonOf(error)}`,
        { cause: error },
      ),
    );
  }

  /** Removes every timer and the caller's abort listener; later failures are ignored. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#callerSignal?.removeEventListener("abort", this.#onCallerAbort);
  }
}
