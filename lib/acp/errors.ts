/**
 * Errors of the ACP bridge that have no counterpart in the sandbox contract: the agent
 * answered with an error or broke the protocol ({@linkcode AcpAgentError}), or its process
 * ended while the bridge needed it ({@linkcode AcpAgentExitedError}). Both are
 * `SandboxError`s, so one `instanceof SandboxError` still catches everything the library
 * throws. Bad options, a second permission answer and the opening deadline use the contract's
 * own classes (`SandboxConfigurationError`, `SandboxStateError`, `SandboxDeadlineError`, …).
 *
 * @module
 */
import { SandboxError, type SandboxErrorOptions } from "../sandbox/errors.ts";
import type { SandboxExitReceipt } from "../sandbox/process.ts";
import type { InitializeResponse } from "./protocol.ts";

/**
 * The codes the ACP bridge adds to the contract's `SandboxErrorCode`:
 *
 * - `agent_error`: an ACP agent answered with an error or broke the protocol
 *   ({@linkcode AcpAgentError}).
 * - `agent_exited`: an ACP agent's process ended, or its sandbox stopped, while the bridge
 *   needed it ({@linkcode AcpAgentExitedError}).
 *
 * @example
 * ```ts
 * import type { AcpErrorCode } from "./errors.ts";
 *
 * const code: AcpErrorCode = "agent_exited";
 * ```
 */
export type AcpErrorCode = "agent_error" | "agent_exited";

/**
 * Options of {@linkcode AcpAgentError}.
 *
 * @example
 * ```ts
 * import type { AcpAgentErrorOptions } from "./errors.ts";
 *
 * const options: AcpAgentErrorOptions = { rpcCode: -32601 };
 * ```
 */
export interface AcpAgentErrorOptions extends SandboxErrorOptions {
  /**
   * The JSON-RPC error code the agent answered with (JSON-RPC 2.0 §5.1; ACP adds `-32000`
   * authentication required, `-32002` resource not found, `-32800` request cancelled).
   *
   * @default {undefined} the agent did not answer with a JSON-RPC error
   */
  readonly rpcCode?: number;
}

/**
 * The ACP agent answered a request with a JSON-RPC error, or answered something the protocol
 * does not allow (another protocol version, an unknown stop reason, a message longer than
 * `maxMessageBytes`). `rpcCode` carries the JSON-RPC error code when there was one; `cause`
 * the SDK's `RequestError` or the validation failure.
 *
 * @example
 * ```ts
 * import { AcpAgentError } from "./errors.ts";
 *
 * const error = new AcpAgentError("Cannot open ACP session: the agent refused initialize", { rpcCode: -32603 });
 * console.log(error.code, error.rpcCode); // "agent_error" -32603
 * ```
 */
export class AcpAgentError extends SandboxError {
  /** Always `"AcpAgentError"`. */
  override readonly name: string = "AcpAgentError";
  /** Always `"agent_error"`. */
  declare readonly code: "agent_error";
  /** JSON-RPC error code of the agent's answer, or `undefined`. */
  readonly rpcCode: number | undefined;

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options Optional `cause` and `rpcCode`.
   */
  constructor(message: string, options?: AcpAgentErrorOptions) {
    super("agent_error", message, options);
    this.rpcCode = options?.rpcCode;
  }
}

/**
 * Options of {@linkcode AcpAgentExitedError}.
 *
 * @example
 * ```ts
 * import type { AcpAgentExitedErrorOptions } from "./errors.ts";
 *
 * const options: AcpAgentExitedErrorOptions = { exit: { kind: "exited", code: 7 }, stderrTail: "boom\n" };
 * ```
 */
export interface AcpAgentExitedErrorOptions extends SandboxErrorOptions {
  /** The agent process's exit receipt. */
  readonly exit: SandboxExitReceipt;
  /** The end of the agent's stderr (at most `stderrTailBytes` bytes, decoded as UTF-8). */
  readonly stderrTail: string;
}

/**
 * The ACP agent's process ended (or its sandbox stopped) while the bridge was waiting for it:
 * during `initialize` or `session/new`, or in the middle of a turn. The bridge has already
 * stopped the sandbox's compute when this error is raised; files stay for export.
 *
 * `exit` is the process's receipt (`{ kind: "exited", code }`; `{ kind: "killed", reason }`
 * when its own fault ended it, say its output limit; or `unavailable` when compute was
 * removed first); `stderrTail` is the end of what the agent wrote to stderr; `cause` is the
 * fault or the sandbox's stop cause when the sandbox stopped on its own (execution deadline,
 * …).
 *
 * @example
 * ```ts
 * import { AcpAgentExitedError } from "./errors.ts";
 *
 * const error = new AcpAgentExitedError("Cannot finish turn: the agent exited with code 7", {
 *   exit: { kind: "exited", code: 7 },
 *   stderrTail: "panic: out of tokens\n",
 * });
 * console.log(error.code, error.exit, error.stderrTail);
 * ```
 */
export class AcpAgentExitedError extends SandboxError {
  /** Always `"AcpAgentExitedError"`. */
  override readonly name: string = "AcpAgentExitedError";
  /** Always `"agent_exited"`. */
  declare readonly code: "agent_exited";
  /** The agent process's exit receipt. */
  readonly exit: SandboxExitReceipt;
  /** The end of the agent's stderr, decoded as UTF-8. */
  readonly stderrTail: string;

  /**
   * Creates the error.
   *
   * @param message Text in the form "Cannot <action>: <reason>".
   * @param options The exit receipt, the stderr tail and an optional `cause`.
   */
  constructor(message: string, options: AcpAgentExitedErrorOptions) {
    super("agent_exited", message, options);
    this.exit = options.exit;
    this.stderrTail = options.stderrTail;
  }
}

/**
 * The agent's `initialize` answer carried by an error of `startAcpSession` that came after
 * it (a refused `authenticate` or `session/new`, e.g. `-32000` "Authentication required"; a
 * deadline; an exit; an unusable `options.authenticate` choice): its `authMethods` say which
 * methods the agent offers, so the caller can pick one with `options.authenticate` and start
 * again.
 *
 * @param error A rejection reason of `startAcpSession`.
 * @returns The answer, or `undefined` for any other value and for failures before the agent
 *   answered `initialize`.
 *
 * @example
 * ```ts
 * import { acpInitializeOf, AcpAgentError } from "./errors.ts";
 *
 * console.log(acpInitializeOf(new AcpAgentError("Cannot open ACP session: refused"))); // undefined
 * ```
 */
export function acpInitializeOf(error: unknown): InitializeResponse | undefined {
  if (!(error instanceof Error)) return undefined;
  const answer = (error as { acpInitialize?: unknown }).acpInitialize;
  return typeof answer === "object" && answer !== null ? answer as InitializeResponse : undefined;
}

/**
 * Attach the agent's `initialize` answer to an opening failure (as the read-only, enumerable
 * property `acpInitialize`, read by {@linkcode acpInitializeOf}) and return the error. The
 * first answer attached stays.
 *
 * @param error The opening failure.
 * @param initialize The agent's answer.
 * @returns `error`.
 */
export function markAcpInitialize<E extends Error>(error: E, initialize: InitializeResponse): E {
  if (acpInitializeOf(error) === undefined) {
    Object.defineProperty(error, "acpInitialize", { value: initialize, enumerable: true, writable: false, configurable: false });
  }
  return error;
}
