/**
 * Errors of the runtime-neutral sandbox contract.
 *
 * Every failure a sandbox operation reports is a {@linkcode SandboxError}: a base class with a
 * stable string {@linkcode SandboxError.code} and the underlying `cause`, plus one subclass per
 * code so callers can branch with `instanceof` or on `code`. Messages read
 * "Cannot <action>: <reason>".
 *
 * @module
 */

/**
 * Stable machine-readable codes carried by {@linkcode SandboxError.code}.
 *
 * - `unsupported`: the request asks for something this backend cannot provide.
 * - `configuration`: caller input (policy, path, process request) is invalid.
 * - `stopped`: the sandbox compute was stopped or destroyed.
 * - `quota`: a logical quota was exceeded (a transfer's bytes or entries, a file read's
 *   `maxBytes`, the sandbox's `maxConcurrentProcesses`).
 * - `deadline`: an explicitly selected deadline elapsed.
 * - `conflict`: an operation conflicts with existing state (an already used reservation, a
 *   recovery record from another configuration).
 * - `aborted`: the caller's `AbortSignal` aborted the operation.
 * - `output_limit`: unread process output exceeded `maxBufferedOutputBytes`, or `run()`
 *   captured `maxOutputBytes`.
 * - `framing`: the Docker Engine output stream was malformed.
 * - `abandoned_output`: a consumer cancelled a process output stream before its end.
 * - `engine`: the Docker Engine failed or answered unexpectedly.
 * - `invalid_state`: the operation is not allowed in the sandbox's current state.
 *
 * An extension built on the contract adds codes of its own with its own subclasses (the ACP
 * bridge, `@agentcell/docker/acp`: `agent_error`, `agent_exited`); see
 * {@linkcode SandboxError.code}.
 *
 * @example
 * ```ts
 * import { type SandboxErrorCode, SandboxStoppedError } from "./errors.ts";
 *
 * const code: SandboxErrorCode = new SandboxStoppedError("Cannot run: stopped").code;
 * ```
 */
export type SandboxErrorCode =
  | "unsupported"
  | "configuration"
  | "stopped"
  | "quota"
  | "deadline"
  | "conflict"
  | "aborted"
  | "output_limit"
  | "framing"
  | "abandoned_output"
  | "engine"
  | "invalid_state";

/**
 * Options accepted by every {@linkcode SandboxError} subclass constructor.
 *
 * @example
 * ```ts
 * import { SandboxEngineError, type SandboxErrorOptions } from "./errors.ts";
 *
 * const options: SandboxErrorOptions = { cause: new Error("ECONNRESET") };
 * const error = new SandboxEngineError("Cannot inspect exec: the connection reset", options);
 * ```
 */
export interface SandboxErrorOptions {
  /**
   * The underlying failure, kept on `error.cause`.
   *
   * @default {undefined}
   */
  readonly cause?: unknown;
}

/**
 * Base class of every error the sandbox contract and its backends throw.
 *
 * Prefer the subclasses; construct the base class directly only to carry a code that has no
 * subclass of its own (there is none today).
 *
 * @example Branch on the stable code
 * ```ts
 * import { SandboxError, SandboxQuotaError } from "./errors.ts";
 *
 * const error: unknown = new SandboxQuotaError("Cannot import files: the byte quota is spent");
 * if (error instanceof SandboxError && error.code === "quota") {
 *   console.log(error.message);
 * }
 * ```
 */
export class SandboxError extends Error {
  /** Name of the concrete class, e.g. `"SandboxQuotaError"`. */
  override readonly name: string = "SandboxError";
  /**
   * Stable machine-readable code: one of {@linkcode SandboxErrorCode}, or an extension's own
   * (the ACP bridge's `agent_error` and `agent_exited`, defined in `@agentcell/docker/acp`).
   */
  readonly code: SandboxErrorCode | (string & Record<never, never>);

  /**
   * Creates an error with an explicit code.
   *
   * @param code Stable code of the failure.
   * @param message Human-readable text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(code: SandboxErrorCode | (string & Record<never, never>), message: string, options?: SandboxErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/**
 * The request asks for something this backend cannot provide (for example a hard workspace
 * disk quota).
 *
 * @example
 * ```ts
 * import { SandboxUnsupportedError } from "./errors.ts";
 *
 * const error = new SandboxUnsupportedError("Cannot reserve sandbox: no quota support");
 * console.log(error.code); // "unsupported"
 * ```
 */
export class SandboxUnsupportedError extends SandboxError {
  /** Always `"SandboxUnsupportedError"`. */
  override readonly name: string = "SandboxUnsupportedError";
  /** Always `"unsupported"`. */
  declare readonly code: "unsupported";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("unsupported", message, options);
  }
}

/**
 * Caller input is invalid: a policy field, a relative path, a process request. The message
 * names the offending field.
 *
 * @example
 * ```ts
 * import { SandboxConfigurationError } from "./errors.ts";
 *
 * const error = new SandboxConfigurationError("Cannot reserve sandbox: policy.network is bad");
 * console.log(error.code); // "configuration"
 * ```
 */
export class SandboxConfigurationError extends SandboxError {
  /** Always `"SandboxConfigurationError"`. */
  override readonly name: string = "SandboxConfigurationError";
  /** Always `"configuration"`. */
  declare readonly code: "configuration";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` (for validation failures, the validator's error).
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("configuration", message, options);
  }
}

/**
 * The sandbox compute was stopped or destroyed, so the operation cannot run.
 *
 * @example
 * ```ts
 * import { SandboxStoppedError } from "./errors.ts";
 *
 * const error = new SandboxStoppedError("Cannot start process: the sandbox is stopped");
 * console.log(error.code); // "stopped"
 * ```
 */
export class SandboxStoppedError extends SandboxError {
  /** Always `"SandboxStoppedError"`. */
  override readonly name: string = "SandboxStoppedError";
  /** Always `"stopped"`. */
  declare readonly code: "stopped";
  /**
   * `true` when the container whose end stopped the sandbox (its keeper, or a sidecar such as
   * the egress proxy) had been hit by the kernel's OOM killer: a memory limit was reached.
   * Absent otherwise, or when it could not be read.
   */
  declare readonly oomKilled?: true;

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` and `oomKilled`.
   */
  constructor(message: string, options?: SandboxStoppedErrorOptions) {
    super("stopped", message, options);
    if (options?.oomKilled === true) (this as { oomKilled?: true }).oomKilled = true;
  }
}

/** Options of {@linkcode SandboxStoppedError}: a `cause`, and whether an OOM kill stopped it. */
export interface SandboxStoppedErrorOptions extends SandboxErrorOptions {
  /** The kernel's OOM killer ended the container whose end stopped the sandbox. */
  readonly oomKilled?: true;
}

/**
 * A logical quota was exceeded: a transfer's bytes or entry count, a file read's `maxBytes`,
 * or the sandbox's `maxConcurrentProcesses` (the next process start is refused).
 *
 * @example
 * ```ts
 * import { SandboxQuotaError } from "./errors.ts";
 *
 * const error = new SandboxQuotaError("Cannot export files: more than 10 entries");
 * console.log(error.code); // "quota"
 * ```
 */
export class SandboxQuotaError extends SandboxError {
  /** Always `"SandboxQuotaError"`. */
  override readonly name: string = "SandboxQuotaError";
  /** Always `"quota"`. */
  declare readonly code: "quota";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("quota", message, options);
  }
}

/**
 * An explicitly selected deadline (execution `timeoutMs`, a process's `timeoutMs`,
 * `deadlines.startupMs`, `deadlines.cleanupMs` or a transfer deadline) elapsed.
 *
 * @example
 * ```ts
 * import { SandboxDeadlineError } from "./errors.ts";
 *
 * const error = new SandboxDeadlineError("Cannot run process: the 5000 ms deadline elapsed");
 * console.log(error.code); // "deadline"
 * ```
 */
export class SandboxDeadlineError extends SandboxError {
  /** Always `"SandboxDeadlineError"`. */
  override readonly name: string = "SandboxDeadlineError";
  /** Always `"deadline"`. */
  declare readonly code: "deadline";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("deadline", message, options);
  }
}

/**
 * The operation conflicts with existing state: a reservation already started, a resource name
 * already present, a recovery record written by another configuration.
 *
 * @example
 * ```ts
 * import { SandboxConflictError } from "./errors.ts";
 *
 * const error = new SandboxConflictError("Cannot start sandbox: the reservation was used");
 * console.log(error.code); // "conflict"
 * ```
 */
export class SandboxConflictError extends SandboxError {
  /** Always `"SandboxConflictError"`. */
  override readonly name: string = "SandboxConflictError";
  /** Always `"conflict"`. */
  declare readonly code: "conflict";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("conflict", message, options);
  }
}

/**
 * The caller's `AbortSignal` aborted the operation; `cause` is the signal's reason.
 *
 * @example
 * ```ts
 * import { SandboxAbortedError } from "./errors.ts";
 *
 * const error = new SandboxAbortedError("Cannot start sandbox: the signal aborted");
 * console.log(error.code); // "aborted"
 * ```
 */
export class SandboxAbortedError extends SandboxError {
  /** Always `"SandboxAbortedError"`. */
  override readonly name: string = "SandboxAbortedError";
  /** Always `"aborted"`. */
  declare readonly code: "aborted";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` (the abort reason).
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("aborted", message, options);
  }
}

/**
 * Process output that was produced but not yet read exceeded `maxBufferedOutputBytes`
 * (combined over stdout and stderr), or `run()` captured more than `maxOutputBytes`. The
 * process is killed (policy `processes: "one"`: the sandbox is stopped).
 *
 * @example
 * ```ts
 * import { SandboxOutputLimitError } from "./errors.ts";
 *
 * const error = new SandboxOutputLimitError("Cannot buffer output: over 4194304 bytes unread");
 * console.log(error.code); // "output_limit"
 * ```
 */
export class SandboxOutputLimitError extends SandboxError {
  /** Always `"SandboxOutputLimitError"`. */
  override readonly name: string = "SandboxOutputLimitError";
  /** Always `"output_limit"`. */
  declare readonly code: "output_limit";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("output_limit", message, options);
  }
}

/**
 * The Docker Engine's multiplexed output stream was malformed: a bad stream type, nonzero
 * reserved header bytes, a frame declared above the frame limit, or an end inside a frame.
 *
 * @example
 * ```ts
 * import { SandboxFramingError } from "./errors.ts";
 *
 * const error = new SandboxFramingError("Cannot demultiplex output: stream type 7");
 * console.log(error.code); // "framing"
 * ```
 */
export class SandboxFramingError extends SandboxError {
  /** Always `"SandboxFramingError"`. */
  override readonly name: string = "SandboxFramingError";
  /** Always `"framing"`. */
  declare readonly code: "framing";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("framing", message, options);
  }
}

/**
 * A consumer cancelled a process's stdout or stderr before the output ended. Unread output
 * cannot be dropped silently, so the process is killed (policy `processes: "one"`: the
 * sandbox is stopped).
 *
 * @example
 * ```ts
 * import { SandboxAbandonedOutputError } from "./errors.ts";
 *
 * const error = new SandboxAbandonedOutputError("Cannot deliver output: stdout was cancelled");
 * console.log(error.code); // "abandoned_output"
 * ```
 */
export class SandboxAbandonedOutputError extends SandboxError {
  /** Always `"SandboxAbandonedOutputError"`. */
  override readonly name: string = "SandboxAbandonedOutputError";
  /** Always `"abandoned_output"`. */
  declare readonly code: "abandoned_output";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` (the consumer's cancel reason).
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("abandoned_output", message, options);
  }
}

/**
 * Options of {@linkcode SandboxEngineError}.
 *
 * @example
 * ```ts
 * import { SandboxEngineError, type SandboxEngineErrorOptions } from "./errors.ts";
 *
 * const options: SandboxEngineErrorOptions = { status: 404 };
 * const error = new SandboxEngineError("Cannot inspect container: not found", options);
 * ```
 */
export interface SandboxEngineErrorOptions extends SandboxErrorOptions {
  /**
   * HTTP status code the Docker Engine answered with, when the failure is an HTTP answer.
   *
   * @default {undefined}
   */
  readonly status?: number;
}

/**
 * The Docker Engine failed, was unreachable, or answered something this library does not
 * accept. `status` carries the HTTP status code when there was one.
 *
 * @example
 * ```ts
 * import { SandboxEngineError } from "./errors.ts";
 *
 * const error = new SandboxEngineError("Cannot inspect container: engine answered 500", {
 *   status: 500,
 * });
 * console.log(error.code, error.status); // "engine" 500
 * ```
 */
export class SandboxEngineError extends SandboxError {
  /** Always `"SandboxEngineError"`. */
  override readonly name: string = "SandboxEngineError";
  /** Always `"engine"`. */
  declare readonly code: "engine";
  /** HTTP status code of the Engine's answer, or `undefined` when there was no answer. */
  readonly status: number | undefined;

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` and HTTP `status`.
   */
  constructor(message: string, options?: SandboxEngineErrorOptions) {
    super("engine", message, options);
    this.status = options?.status;
  }
}

/**
 * The operation is not allowed in the sandbox's current state (for example starting a process
 * on a sandbox that is still starting).
 *
 * @example
 * ```ts
 * import { SandboxStateError } from "./errors.ts";
 *
 * const error = new SandboxStateError("Cannot export files: compute is still running");
 * console.log(error.code); // "invalid_state"
 * ```
 */
export class SandboxStateError extends SandboxError {
  /** Always `"SandboxStateError"`. */
  override readonly name: string = "SandboxStateError";
  /** Always `"invalid_state"`. */
  declare readonly code: "invalid_state";

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause`.
   */
  constructor(message: string, options?: SandboxErrorOptions) {
    super("invalid_state", message, options);
  }
}
