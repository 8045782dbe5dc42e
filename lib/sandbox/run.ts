/**
 * The short path for the common case: `sandbox.run(executable, args, options)` runs one
 * command to its end and returns its exit receipt with its stdout and stderr as bytes,
 * bounded; a failure carries what was captured before it.
 *
 * @module
 */
import { z } from "zod";
import type { SandboxError } from "./errors.ts";
import { argsSchema, executableSchema, guestEnvironment, processOptionFields, type SandboxExitReceipt, type SandboxStderrMode } from "./process.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";

/**
 * Default of {@linkcode SandboxRunOptions.maxOutputBytes}, in bytes: 8 MiB.
 */
export const DEFAULT_MAX_RUN_OUTPUT_BYTES = 8 * 1024 * 1024;

/**
 * Largest {@linkcode SandboxRunOptions.maxOutputBytes}, in bytes: 1 GiB.
 */
export const MAX_RUN_OUTPUT_BYTES = 1024 * 1024 * 1024;

/**
 * Options of `sandbox.run()`.
 *
 * @example
 * ```ts
 * import type { SandboxRunOptions } from "./run.ts";
 *
 * const options: SandboxRunOptions = {
 *   env: { LANG: "C.UTF-8" },
 *   stdin: "input\n",
 *   timeoutMs: 30_000,
 *   maxOutputBytes: 1024 * 1024,
 *   stderr: "stdout",
 * };
 * ```
 */
export interface SandboxRunOptions {
  /**
   * Additional environment variables, as for a process request (`HOME`, `TMPDIR` and `PATH`
   * only with their fixed values).
   *
   * @default {{}}
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The guest working directory the command starts in, as a process request's `cwd`: an
   * absolute canonical guest path the backend confines (Docker backend: `/workspace`,
   * `/home/sandbox`, `/tmp` or below). It must exist: for a missing one the result is exit
   * code 127 with the runtime's `chdir to cwd` message on stdout.
   *
   * @default {"/workspace/work"} for the Docker backend
   */
  readonly cwd?: string;
  /**
   * The command's standard input: bytes, UTF-8 text, a `Blob` or a byte stream; it is
   * half-closed after the last byte. A command that exits without reading all of it is not
   * an error.
   *
   * @default {undefined} none: the command reads `/dev/null` (end of file at once)
   */
  readonly stdin?: Uint8Array | string | Blob | ReadableStream<Uint8Array>;
  /**
   * The command's deadline, in milliseconds from its start (1 to 2^53 − 1): when it passes
   * the command and the descendants in its process group are killed and `run()` rejects with
   * `SandboxDeadlineError`, carrying the output captured before.
   *
   * @default {undefined} none (the sandbox's `execution` still applies)
   */
  readonly timeoutMs?: number;
  /**
   * Most bytes of stdout and stderr captured together (0 to 1 GiB). The byte past it ends
   * the command (killed, reason `output_limit`) and `run()` rejects with
   * `SandboxOutputLimitError`, carrying the first `maxOutputBytes` bytes.
   *
   * @default {8388608} 8 MiB
   */
  readonly maxOutputBytes?: number;
  /**
   * Where stderr goes: `"pipe"` (captured as `stderr`), `"discard"` or `"stdout"`
   * (interleaved into `stdout`).
   *
   * @default {"pipe"}
   */
  readonly stderr?: SandboxStderrMode;
  /**
   * Kill the descendants left in the command's process group when it exits.
   *
   * @default {false}
   */
  readonly killDescendantsOnExit?: boolean;
  /**
   * Ends the command: it is killed (reason `aborted`) and `run()` rejects with
   * `SandboxAbortedError` (`cause` the signal's reason), carrying the output captured before.
   *
   * @default {undefined}
   */
  readonly signal?: AbortSignal;
}

/**
 * What a command that ran to its end gave.
 *
 * @example
 * ```ts
 * import type { SandboxRunResult } from "./run.ts";
 *
 * function report(result: SandboxRunResult): string {
 *   return `exit ${result.exit.code}: ${result.stdoutText.trim()}`;
 * }
 * ```
 */
export interface SandboxRunResult {
  /** The exit receipt: the command exited on its own (any code; check it). */
  readonly exit: { readonly kind: "exited"; readonly code: number };
  /** Every byte of stdout (with `stderr: "stdout"`, stderr interleaved). */
  readonly stdout: Uint8Array;
  /** Every byte of stderr (empty unless `stderr` is `"pipe"`). */
  readonly stderr: Uint8Array;
  /** `stdout` decoded as UTF-8 (malformed bytes become U+FFFD). */
  readonly stdoutText: string;
  /** `stderr` decoded as UTF-8 (malformed bytes become U+FFFD). */
  readonly stderrText: string;
}

/**
 * What a command gave before `run()` failed: the bytes captured (at most `maxOutputBytes`
 * together) and its exit receipt once observed.
 *
 * @example
 * ```ts
 * import type { SandboxRunOutput } from "./run.ts";
 *
 * const output: SandboxRunOutput = {
 *   stdout: new Uint8Array(),
 *   stderr: new Uint8Array(),
 *   exit: { kind: "killed", reason: "timeout", code: 137 },
 * };
 * ```
 */
export interface SandboxRunOutput {
  /** stdout captured before the failure. */
  readonly stdout: Uint8Array;
  /** stderr captured before the failure. */
  readonly stderr: Uint8Array;
  /** The receipt, or `undefined` when the command never started. */
  readonly exit: SandboxExitReceipt | undefined;
}

/**
 * The output a failed `run()` captured, read from its error.
 *
 * @param error The rejection reason of `run()`.
 * @returns The captured output, or `undefined` for any other value (and for failures before
 *   the command started).
 *
 * @example
 * ```ts
 * import { runOutputOf } from "./run.ts";
 *
 * console.log(runOutputOf(new Error("not from run()"))); // undefined
 * ```
 */
export function runOutputOf(error: unknown): SandboxRunOutput | undefined {
  if (!(error instanceof Error)) return undefined;
  const output = (error as { runOutput?: unknown }).runOutput;
  if (typeof output !== "object" || output === null) return undefined;
  const { stdout, stderr, exit } = output as Record<string, unknown>;
  if (!(stdout instanceof Uint8Array) || !(stderr instanceof Uint8Array)) return undefined;
  return { stdout, stderr, exit: exit as SandboxExitReceipt | undefined };
}

/**
 * Attaches the captured output to a `run()` failure (as the read-only, enumerable property
 * `runOutput`) and returns the error. For backends.
 *
 * @param error The error `run()` rejects with.
 * @param output What was captured.
 * @returns `error`, carrying `output`.
 *
 * @example
 * ```ts
 * import { SandboxDeadlineError } from "./errors.ts";
 * import { markRunOutput, runOutputOf } from "./run.ts";
 *
 * const error = markRunOutput(new SandboxDeadlineError("Cannot run /bin/sleep: its timeoutMs of 10 ms elapsed"), {
 *   stdout: new TextEncoder().encode("partial"),
 *   stderr: new Uint8Array(),
 *   exit: { kind: "killed", reason: "timeout", code: 137 },
 * });
 * console.log(new TextDecoder().decode(runOutputOf(error)?.stdout)); // "partial"
 * ```
 */
export function markRunOutput<E extends SandboxError>(error: E, output: SandboxRunOutput): E {
  if (runOutputOf(error) === undefined) {
    Object.defineProperty(error, "runOutput", {
      value: Object.freeze({ ...output }),
      enumerable: true,
      writable: false,
      configurable: false,
    });
  }
  return error;
}

/** `run()`'s arguments after validation. */
export interface NormalizedRunRequest {
  /** Absolute canonical guest path. */
  readonly executable: string;
  /** Literal arguments (frozen). */
  readonly args: readonly string[];
  /** Complete guest environment (frozen). */
  readonly env: Readonly<Record<string, string>>;
  /** The guest working directory, or `undefined` for the backend's default. */
  readonly cwd: string | undefined;
  /** The input, or `undefined` for none. */
  readonly stdin: Uint8Array | string | Blob | ReadableStream<Uint8Array> | undefined;
  /** The command's deadline, milliseconds. */
  readonly timeoutMs: number | undefined;
  /** Bound of stdout and stderr captured together, bytes. */
  readonly maxOutputBytes: number;
  /** Where stderr goes. */
  readonly stderr: SandboxStderrMode;
  /** Kill descendants on exit. */
  readonly killDescendantsOnExit: boolean;
  /** The caller's cancellation. */
  readonly signal: AbortSignal | undefined;
}

const outputBound = expect(`must be an integer from 0 to ${MAX_RUN_OUTPUT_BYTES} bytes`);

const runOptionsSchema = z.strictObject({
  ...processOptionFields,
  stdin: z.custom<Uint8Array | string | Blob | ReadableStream<Uint8Array>>(
    (value) => typeof value === "string" || value instanceof Uint8Array || value instanceof Blob || value instanceof ReadableStream,
    { error: expect("must be a Uint8Array, a string, a Blob or a ReadableStream") },
  ).optional(),
  maxOutputBytes: z.number({ error: outputBound }).int({ error: outputBound }).min(0, { error: outputBound })
    .max(MAX_RUN_OUTPUT_BYTES, { error: outputBound }).optional(),
  signal: z.instanceof(AbortSignal, { error: expect("must be an AbortSignal") }).optional(),
});

const ACTION = "run process";

/**
 * Validates `run()`'s arguments, fills defaults and merges the fixed guest environment.
 *
 * @param executable Absolute canonical guest path (never looked up in `PATH`).
 * @param args Literal arguments.
 * @param options See {@linkcode SandboxRunOptions}.
 * @returns The validated request.
 * @throws {SandboxConfigurationError} naming the argument or option, e.g. "Cannot run
 *   process: options.timeoutMs must be an integer from 1 to 9007199254740991 milliseconds"
 *
 * @example
 * ```ts
 * import { normalizeRunRequest } from "./run.ts";
 *
 * const request = normalizeRunRequest("/bin/echo", ["hi"], { stderr: "stdout" });
 * console.log(request.maxOutputBytes, request.stderr); // 8388608 "stdout"
 * ```
 */
export function normalizeRunRequest(executable: string, args: readonly string[] = [], options: SandboxRunOptions = {}): NormalizedRunRequest {
  const path = parseConfiguration(executableSchema, executable, ACTION, "executable");
  const literal = parseConfiguration(argsSchema, args, ACTION, "args");
  const parsed = parseConfiguration(runOptionsSchema, options, ACTION, "options");
  return Object.freeze({
    executable: path,
    args: Object.freeze([...literal]),
    env: guestEnvironment(parsed.env, ACTION, "options.env"),
    cwd: parsed.cwd,
    stdin: parsed.stdin,
    timeoutMs: parsed.timeoutMs,
    maxOutputBytes: parsed.maxOutputBytes ?? DEFAULT_MAX_RUN_OUTPUT_BYTES,
    stderr: parsed.stderr ?? "pipe",
    killDescendantsOnExit: parsed.killDescendantsOnExit ?? false,
    signal: parsed.signal,
  });
}
