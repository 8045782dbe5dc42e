/**
 * A warm pool: a few started, never-used sandboxes of one policy, handed out at once and
 * refilled in the background. Every member is an ordinary sandbox of the backend
 * (`backend.reserve(request, recovery).start()`): recorded through the caller's recovery
 * port before each resource effect, removed by exact identity by `destroy()`, recoverable
 * after a crash like any other.
 *
 * @module
 */
import { z } from "zod";
import type { SandboxRecoveryPort, SandboxRequest } from "../sandbox/backend.ts";
import { SandboxAbortedError, SandboxEngineError, type SandboxError, SandboxStateError } from "../sandbox/errors.ts";
import type { SandboxStartOptions } from "../sandbox/start_options.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";
import type { DockerSandbox } from "./sandbox.ts";
import type { DockerSandboxSecrets, DockerSandboxStartOptions } from "./egress/secrets.ts";

/** Largest {@linkcode DockerSandboxPoolOptions.size}: 16 sandboxes. */
export const MAX_POOL_SIZE = 16;

/** Options of `backend.pool()`. */
export interface DockerSandboxPoolOptions {
  /** The request every member is reserved with: one policy for the whole pool. */
  readonly request: SandboxRequest;
  /**
   * Started, never-used sandboxes the pool keeps ready: an integer from 1 to
   * {@linkcode MAX_POOL_SIZE}. Each holds a running keeper (its CPU, memory and PID limits
   * reserved, idle) and a volume until it is taken or the pool is closed.
   */
  readonly size: number;
  /**
   * Where every member's recovery record is persisted, before each resource effect, as for
   * `backend.reserve(request, recovery)`. A taken sandbox keeps persisting through it.
   */
  readonly recovery: SandboxRecoveryPort;
  /**
   * The routes' secrets of every member's start (`reservation.start({ secrets })`): needed when
   * `request.policy.network` has routes that name secrets. A provider function is called once
   * per member start. The pool keeps what it is given until it is closed.
   *
   * @default {undefined} no secrets
   */
  readonly secrets?: DockerSandboxSecrets;
}

/**
 * A warm pool of sandboxes (see {@linkcode DockerSandboxBackend.pool}). Members are started
 * as soon as the pool is made; `take()` hands one out and starts a replacement.
 */
export interface DockerSandboxPool {
  /** How many ready sandboxes the pool keeps. */
  readonly size: number;
  /** Sandboxes started and waiting to be taken. */
  readonly ready: number;
  /** Starts in flight (refills, and starts for callers waiting in `take()`). */
  readonly starting: number;
  /**
   * Hand out a started, never-used sandbox, indistinguishable from a fresh `start()` of
   * the pool's request: at once when one is ready (a replacement starts in the background),
   * else as soon as a start in flight (or one begun now) completes. A member whose compute
   * stopped while it waited (its keeper died) is destroyed instead of handed out. The caller
   * owns the sandbox from now on and destroys it.
   *
   * @param options `signal` ends the wait (not a start in flight, whose sandbox stays in
   *   the pool)
   * @returns the sandbox, `state === "running"`
   * @throws {SandboxStateError} when the pool is closed (or closes while the call waits)
   * @throws {SandboxAbortedError} when `options.signal` aborts first
   * @throws {SandboxError} what the start it waited for threw (see `reservation.start()`)
   */
  take(options?: SandboxStartOptions): Promise<DockerSandbox>;
  /**
   * Stop refilling, abort the starts in flight (each removes what it created), fail the
   * calls waiting in `take()` and destroy every member not taken. Taken sandboxes are the
   * caller's and are left alone. Calling it again returns the same promise.
   *
   * @throws {SandboxEngineError} when a member could not be removed (its recovery record
   *   names what remains; `cause` is an `AggregateError` of the failures)
   */
  close(): Promise<void>;
  /** `await using` support: closes. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What the pool needs of a reservation: its start (`DockerSandboxReservation.start`). */
export interface DockerSandboxPoolReservation {
  /** As `DockerSandboxReservation.start`: start it, ended early by `options.signal`, with the pool's secrets. */
  start(options?: DockerSandboxStartOptions): Promise<DockerSandbox>;
}

/** What the pool needs of a backend: reserving with the caller's port. */
export interface DockerSandboxPoolBackend {
  /** As `DockerSandboxBackend.reserve`. */
  reserve(request: SandboxRequest, recovery: SandboxRecoveryPort): DockerSandboxPoolReservation;
}

const ACTION = "create sandbox pool";

const SIZE_RANGE = `must be an integer from 1 to ${MAX_POOL_SIZE}`;

const optionsSchema = z.object({
  request: z.object({}, { error: expect("must be an object") }).loose(),
  size: z.number({ error: expect(SIZE_RANGE) })
    .int({ error: SIZE_RANGE })
    .min(1, { error: SIZE_RANGE })
    .max(MAX_POOL_SIZE, { error: `${SIZE_RANGE}; a larger pool holds more idle keepers than any host should reserve` }),
  // Only the shape here; every member's start checks the names and values (without quoting one).
  secrets: z.custom<DockerSandboxSecrets>((value) => typeof value === "function" || (typeof value === "object" && value !== null && !Array.isArray(value)), {
    error: "must be an object of secret name → value, or a function returning one",
  }).optional(),
  recovery: z.custom<SandboxRecoveryPort>((port) => typeof (port as SandboxRecoveryPort | null)?.record === "function", {
    error: "must have a record(record) function",
  }),
});

interface Waiter {
  readonly resolve: (sandbox: DockerSandbox) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Make a warm pool over `backend` and start filling it.
 *
 * @param backend reserves each member (`backend.reserve(options.request, options.recovery)`)
 * @param options the request, the size and the recovery port
 * @returns the pool; close it when done
 * @throws {SandboxConfigurationError} for invalid options or an invalid request (the
 *   message names the field), before anything starts
 * @throws {SandboxUnsupportedError} for a request the backend cannot serve (see `reserve()`)
 */
export function createDockerSandboxPool(backend: DockerSandboxPoolBackend, options: DockerSandboxPoolOptions): DockerSandboxPool {
  parseConfiguration(optionsSchema, options, ACTION, "options");
  // The first reservation validates the request: a bad one fails here, not in the background.
  const first = backend.reserve(options.request, options.recovery);
  return new WarmPool(backend, options, first);
}

class WarmPool implements DockerSandboxPool {
  readonly size: number;
  readonly #backend: DockerSandboxPoolBackend;
  readonly #request: SandboxRequest;
  readonly #recovery: SandboxRecoveryPort;
  readonly #secrets: DockerSandboxSecrets | undefined;
  readonly #ready: DockerSandbox[] = [];
  readonly #starting = new Set<Promise<void>>();
  readonly #waiters: Waiter[] = [];
  /** Aborts the starts in flight when the pool closes. */
  readonly #closing = new AbortController();
  /** Destroys of members that stopped while waiting, or arrived after close. */
  readonly #discarding = new Set<Promise<unknown>>();
  #closed: Promise<void> | undefined;
  #next: DockerSandboxPoolReservation | undefined;

  constructor(backend: DockerSandboxPoolBackend, options: DockerSandboxPoolOptions, first: DockerSandboxPoolReservation) {
    this.size = options.size;
    this.#backend = backend;
    this.#request = options.request;
    this.#recovery = options.recovery;
    this.#secrets = options.secrets;
    this.#next = first;
    this.#fill();
  }

  get ready(): number {
    return this.#ready.length;
  }

  get starting(): number {
    return this.#starting.size;
  }

  take(options: SandboxStartOptions = {}): Promise<DockerSandbox> {
    if (this.#closed !== undefined) return Promise.reject(closedError());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortedError(signal.reason));
    const sandbox = this.#takeReady();
    if (sandbox !== undefined) {
      this.#fill();
      return Promise.resolve(sandbox);
    }
    return new Promise<DockerSandbox>((resolve, reject) => {
      const onAbort = () => {
        const at = this.#waiters.indexOf(waiter);
        if (at !== -1) this.#waiters.splice(at, 1);
        reject(abortedError(signal?.reason));
      };
      const waiter: Waiter = {
        resolve: (sandbox) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(sandbox);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#fill();
    });
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** A ready member that is still running; members that stopped meanwhile are destroyed. */
  #takeReady(): DockerSandbox | undefined {
    for (;;) {
      const sandbox = this.#ready.shift();
      if (sandbox === undefined) return undefined;
      if (sandbox.state === "running") return sandbox;
      this.#discard(sandbox);
    }
  }

  /** Starts members until ready ones, starts in flight and waiting callers balance. */
  #fill(): void {
    while (this.#closed === undefined && this.#ready.length + this.#starting.size < this.size + this.#waiters.length) {
      this.#startOne();
    }
  }

  #startOne(): void {
    let reservation = this.#next;
    this.#next = undefined;
    try {
      reservation ??= this.#backend.reserve(this.#request, this.#recovery);
    } catch (error) {
      // The request was valid for the first reservation; a later refusal fails the callers.
      this.#waiters.shift()?.reject(error);
      return;
    }
    const start = reservation.start({ signal: this.#closing.signal, ...(this.#secrets === undefined ? {} : { secrets: this.#secrets }) }).then(
      (sandbox) => this.#arrived(sandbox),
      (error: unknown) => this.#failed(error),
    ).finally(() => this.#starting.delete(start));
    this.#starting.add(start);
  }

  #arrived(sandbox: DockerSandbox): void {
    if (this.#closed !== undefined) {
      this.#discard(sandbox);
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter === undefined) this.#ready.push(sandbox);
    else waiter.resolve(sandbox);
  }

  /** A failed start fails the caller waiting longest; refilling waits for the next take(). */
  #failed(error: unknown): void {
    if (this.#closed !== undefined) return;
    this.#waiters.shift()?.reject(error);
  }

  #discard(sandbox: DockerSandbox): void {
    const destroyed = sandbox.destroy().catch((error: unknown) => error);
    this.#discarding.add(destroyed);
    destroyed.finally(() => this.#discarding.delete(destroyed));
  }

  async #close(): Promise<void> {
    this.#closing.abort(closedError());
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError());
    const destroys = this.#ready.splice(0).map((sandbox) => sandbox.destroy());
    // Starts in flight end (aborted, cleaning up after themselves, or arriving and being
    // discarded), then every discard is joined.
    await Promise.allSettled([...this.#starting]);
    const settled = await Promise.allSettled([...destroys, ...this.#discarding]);
    const failures = settled.flatMap((result) => {
      if (result.status === "rejected") return [result.reason];
      return result.value instanceof Error ? [result.value] : [];
    });
    if (failures.length > 0) {
      throw new SandboxEngineError(
        `Cannot close sandbox pool: ${failures.length} member(s) could not be destroyed; their recovery records name what remains (recover them with backend.recover)`,
        { cause: new AggregateError(failures) },
      );
    }
  }
}

function closedError(): SandboxError {
  return new SandboxStateError("Cannot take a sandbox from the pool: the pool is closed");
}

function abortedError(reason: unknown): SandboxError {
  return new SandboxAbortedError("Cannot take a sandbox from the pool: aborted", { cause: reason });
}
