/**
 * The backend contract: how a host reserves, starts, stops and destroys a sandbox without
 * knowing which engine provides it.
 *
 * Reservation is synchronous and inert (validation only); effects begin at `start()`. Every
 * resource a backend creates is recorded through the caller's {@linkcode SandboxRecoveryPort}
 * before it is created, so a fresh controller can finish cleanup after a crash.
 *
 * @module
 */
import type { SandboxError } from "./errors.ts";
import type { SandboxPolicyInput } from "./policy.ts";
import type { SandboxProcessRequest, SandboxProcessReservation } from "./process.ts";
import type { SandboxRunOptions, SandboxRunResult } from "./run.ts";
import type { SandboxStartOptions } from "./start_options.ts";
import type { SandboxPorts } from "./ports.ts";

/**
 * A request for one sandbox.
 *
 * @example
 * ```ts
 * import type { SandboxRequest } from "./backend.ts";
 *
 * const request: SandboxRequest = {
 *   policy: { resources: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 } },
 * };
 * ```
 */
export interface SandboxRequest {
  /** The sandbox policy; validated and normalised by `reserve()`. */
  readonly policy: SandboxPolicyInput;
}

/**
 * One durable recovery checkpoint written by a backend: a JSON-serialisable object whose
 * `schema` names its format and version. Its other fields belong to the backend (resource
 * names, inspected IDs, configuration digests); hosts store it verbatim and never interpret
 * it. It holds no secrets.
 *
 * @example
 * ```ts
 * import type { SandboxRecoveryRecord } from "./backend.ts";
 *
 * const record: SandboxRecoveryRecord = { schema: "example.recovery.v1", phase: "reserved" };
 * ```
 */
export interface SandboxRecoveryRecord {
  /** Format and version of the record, e.g. `"agentcell.sandbox-recovery.v1"`. */
  readonly schema: string;
  /** Backend-owned fields; JSON values only. */
  readonly [field: string]: unknown;
}

/**
 * The host's durable store for recovery records, one latest record per sandbox.
 *
 * @example
 * ```ts
 * import type { SandboxRecoveryPort, SandboxRecoveryRecord } from "./backend.ts";
 *
 * const saved: SandboxRecoveryRecord[] = [];
 * const port: SandboxRecoveryPort = {
 *   record(record) {
 *     saved.push(structuredClone(record)); // a real host writes durably (fsync, database)
 *     return Promise.resolve();
 *   },
 * };
 * ```
 */
export interface SandboxRecoveryPort {
  /**
   * Durably persists `record`, replacing the previous record of the same sandbox. The backend
   * awaits it before the effect the record announces; a rejection aborts that effect (the
   * backend then cleans up what earlier records announced) and the operation fails with a
   * `SandboxAbortedError` (`aborted`) whose `cause` is the rejection.
   *
   * @param record The checkpoint to persist; store it verbatim.
   * @returns Resolves once the record is durable.
   */
  record(record: SandboxRecoveryRecord): Promise<void>;
}

/**
 * A provider of sandboxes (for example the local Docker Engine backend).
 *
 * @example
 * ```ts
 * import type { SandboxBackend, SandboxRecoveryPort } from "./backend.ts";
 *
 * async function run(backend: SandboxBackend, recovery: SandboxRecoveryPort): Promise<void> {
 *   const reservation = backend.reserve(
 *     { policy: { resources: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 } } },
 *     recovery,
 *   );
 *   await using sandbox = await reservation.start();
 *   console.log(sandbox.state); // "running"
 * }
 * ```
 */
export interface SandboxBackend {
  /**
   * Reserves one sandbox. Synchronous and inert: it validates the request and assigns an ID,
   * but touches no engine and writes no record until the reservation starts.
   *
   * @param request The sandbox request.
   * @param recovery Where the backend persists recovery records before each effect.
   * @returns The inert reservation.
   * @throws {SandboxConfigurationError} When the policy is invalid (the message names the
   *   field).
   * @throws {SandboxUnsupportedError} When the policy asks for something the backend cannot
   *   enforce (for example a required workspace disk quota).
   */
  reserve(request: SandboxRequest, recovery: SandboxRecoveryPort): SandboxReservation;
}

/**
 * An inert sandbox reservation; `start()` acquires the resources, at most once.
 *
 * @example
 * ```ts
 * import type { SandboxReservation } from "./backend.ts";
 *
 * async function startWithin(reservation: SandboxReservation, ms: number) {
 *   console.log("starting", reservation.id);
 *   return await reservation.start({ signal: AbortSignal.timeout(ms) });
 * }
 * ```
 */
export interface SandboxReservation {
  /** Identifier of the sandbox, stable across its reservation, life and recovery. */
  readonly id: string;
  /**
   * Acquires and starts the sandbox, bounded by the policy's `deadlines.startupMs`.
   *
   * @param options Optional cancellation signal.
   * @returns The running sandbox.
   * @throws {SandboxStateError} When the reservation was already started.
   * @throws {SandboxAbortedError} When `options.signal` aborted startup.
   * @throws {SandboxDeadlineError} When startup exceeded `deadlines.startupMs`.
   * @throws {SandboxEngineError} When the engine failed or its state is not acceptable.
   */
  start(options?: SandboxStartOptions): Promise<Sandbox>;
}

/**
 * Lifecycle state of a {@linkcode Sandbox}.
 *
 * - `starting`: resources are being acquired.
 * - `running`: compute is up; processes can be reserved and started.
 * - `paused`: compute is frozen (`pause()`); calls that need a running guest throw
 *   `invalid_state` until `resume()`.
 * - `stopped`: compute was removed (or its removal is under way); files are retained (export
 *   them, then destroy).
 * - `stop_failed`: compute stopped being usable, but its removal failed (the Engine is gone,
 *   or refused): compute may still exist. Every pending call has settled with the stop
 *   cause; call `stop()` or `destroy()` again to retry the removal (a successful one makes
 *   the state `stopped`).
 * - `destroyed`: every owned resource was removed.
 *
 * @example
 * ```ts
 * import type { Sandbox, SandboxState } from "./backend.ts";
 *
 * function canExport(sandbox: Sandbox): boolean {
 *   const state: SandboxState = sandbox.state;
 *   return state === "stopped";
 * }
 * ```
 */
export type SandboxState = "starting" | "running" | "paused" | "stopped" | "stop_failed" | "destroyed";

/**
 * A started sandbox. Disposing it (`await using`) destroys it.
 *
 * @example
 * ```ts
 * import type { Sandbox } from "./backend.ts";
 *
 * async function runOnce(sandbox: Sandbox): Promise<void> {
 *   const result = await sandbox.run("/bin/echo", ["hello"]);
 *   console.log(result.exit.code, result.stdoutText); // 0 "hello\n"
 *   await sandbox.stop();
 *   console.log(sandbox.state, sandbox.stopCause?.code); // "stopped" "stopped"
 * }
 * ```
 */
export interface Sandbox extends AsyncDisposable {
  /** Identifier of the sandbox, the same as its reservation's. */
  readonly id: string;
  /** Current lifecycle state. */
  readonly state: SandboxState;
  /**
   * Why compute stopped: the backend's own reason (the execution deadline, a keeper that
   * stopped on its own, a guard that ended early; with policy `processes: "one"` also its
   * process's output limit, framing error, abandoned output or own deadline) or a
   * `SandboxStoppedError` for a stop the caller requested; `undefined` while running.
   */
  readonly stopCause: SandboxError | undefined;
  /**
   * Reserves a process. Synchronous and inert: validates the request and merges the fixed
   * guest environment; nothing runs until the reservation starts. Policy `processes: "many"`
   * (the default) allows any number of processes over the sandbox's life, `"one"` exactly
   * one.
   *
   * @param request The process request.
   * @returns The inert process reservation.
   * @throws {SandboxConfigurationError} When the request is invalid or conflicts with the fixed
   *   guest environment (the message names the field).
   * @throws {SandboxStoppedError} (or the stop cause) When the sandbox is not running.
   * @throws {SandboxStateError} Policy `processes: "one"`: when its process was already reserved.
   */
  reserveProcess(request: SandboxProcessRequest): SandboxProcessReservation;
  /**
   * Runs one command to its end and returns its exit receipt with its stdout and stderr as
   * bytes, at most `options.maxOutputBytes` together (see `SandboxRunOptions`).
   *
   * @param executable Absolute canonical guest path.
   * @param args Literal arguments.
   * @param options Environment, stdin, deadline, output bound, stderr routing, signal.
   * @returns The result of a command that exited on its own (any exit code).
   * @throws {SandboxOutputLimitError} / {SandboxDeadlineError} / {SandboxAbortedError} When the
   *   output bound, `timeoutMs` or `signal` ended the command; the error carries what was
   *   captured (`runOutputOf(error)`).
   * @throws {SandboxStoppedError} (or the stop cause) When the sandbox stopped first.
   */
  run(executable: string, args?: readonly string[], options?: SandboxRunOptions): Promise<SandboxRunResult>;
  /**
   * Opens a byte connection to `127.0.0.1:port` inside the sandbox's network namespace
   * (see {@linkcode SandboxPorts.connect}). Optional: a backend that cannot reach guest
   * servers leaves it out.
   */
  readonly connect?: SandboxPorts["connect"];
  /**
   * One HTTP/1.1 exchange with a guest server, answered as a `Response` (see
   * {@linkcode SandboxPorts.fetch}). Optional, with `connect`.
   */
  readonly fetch?: SandboxPorts["fetch"];
  /**
   * A host listener relaying each accepted connection to a guest port (see
   * {@linkcode SandboxPorts.forwardPort}). Optional, with `connect`.
   */
  readonly forwardPort?: SandboxPorts["forwardPort"];
  /**
   * Stops compute: force-removes the workload (every process, their descendants and the
   * keeper) and retains files. Idempotent; bounded by `deadlines.cleanupMs`.
   *
   * @returns Resolves once compute is gone.
   * @throws {SandboxEngineError} When removal failed; `stop()` can be retried.
   * @throws {SandboxDeadlineError} When removal exceeded `deadlines.cleanupMs`.
   */
  stop(): Promise<void>;
  /**
   * Stops compute if needed, then removes every resource the sandbox owns (files included).
   * Idempotent and retryable after a partial failure; bounded by `deadlines.cleanupMs` per
   * step.
   *
   * @returns Resolves once every owned resource is gone.
   * @throws {SandboxEngineError} When a removal failed; `destroy()` can be retried.
   * @throws {SandboxDeadlineError} When a step exceeded `deadlines.cleanupMs`.
   */
  destroy(): Promise<void>;
}
