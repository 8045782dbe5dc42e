/**
 * The processes of a sandbox: the request, the fixed guest environment, a running process's
 * byte streams, its kill, and its exit receipt.
 *
 * @module
 */
import { z } from "zod";
import { SandboxConfigurationError } from "./errors.ts";
import type { SandboxStartOptions } from "./start_options.ts";
import { pathDefect } from "../internal/path_defects.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";
import {
  type NormalizedSandboxTerminal,
  normalizeTerminal,
  type SandboxTerminalRequest,
  type SandboxTerminalSize,
  terminalRequestSchema,
} from "./terminal.ts";

/**
 * Environment every guest process receives. A request may repeat these names only with these
 * exact values; other values are rejected rather than silently replaced.
 *
 * - `HOME`: `/home/sandbox` (a tmpfs)
 * - `TMPDIR`: `/tmp` (a tmpfs)
 * - `PATH`: `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`
 *
 * @example
 * ```ts
 * import { FIXED_GUEST_ENV } from "./process.ts";
 *
 * console.log(FIXED_GUEST_ENV.HOME); // "/home/sandbox"
 * ```
 */
export const FIXED_GUEST_ENV: Readonly<{ HOME: string; TMPDIR: string; PATH: string }> = Object
  .freeze({
    HOME: "/home/sandbox",
    TMPDIR: "/tmp",
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  });

/**
 * Default of {@linkcode SandboxProcessRequest.maxBufferedOutputBytes}, in bytes: 4 MiB.
 */
export const DEFAULT_MAX_BUFFERED_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * Largest {@linkcode SandboxProcessRequest.maxBufferedOutputBytes}, in bytes: 1 GiB.
 */
export const MAX_BUFFERED_OUTPUT_BYTES = 1024 * 1024 * 1024;

/**
 * Where a process's standard error goes.
 *
 * - `"pipe"`: to {@linkcode SandboxProcess.stderr}, separately from stdout.
 * - `"discard"`: nowhere (the guest's fd 2 is `/dev/null`); `stderr` is empty and closed.
 * - `"stdout"`: into stdout (the guest's fd 2 is its fd 1, as `2>&1`), interleaved in the
 *   order the process wrote; `stderr` is empty and closed.
 *
 * Neither `"discard"` nor `"stdout"` stops or ends anything: the bytes never leave the guest
 * as stderr.
 *
 * @example
 * ```ts
 * import type { SandboxStderrMode } from "./process.ts";
 *
 * const mode: SandboxStderrMode = "stdout";
 * ```
 */
export type SandboxStderrMode = "pipe" | "discard" | "stdout";

/**
 * A process to run in the sandbox, as the caller writes it; see
 * {@linkcode normalizeProcessRequest}.
 *
 * @example
 * ```ts
 * import type { SandboxProcessRequest } from "./process.ts";
 *
 * const request: SandboxProcessRequest = {
 *   executable: "/usr/local/bin/node",
 *   args: ["/workspace/work/agent.js", "--acp"],
 *   env: { NODE_OPTIONS: "--max-old-space-size=512" },
 *   maxBufferedOutputBytes: 8 * 1024 * 1024,
 * };
 * ```
 */
export interface SandboxProcessRequest {
  /**
   * Absolute canonical guest path of the executable, e.g. `/usr/local/bin/agent`: starts with
   * `/`, no empty, `.` or `..` segments, no trailing `/`, no NUL, backslash or control
   * characters, at most 4096 bytes of UTF-8. It is executed directly, never through a shell,
   * and never looked up in `PATH`.
   */
  readonly executable: string;
  /**
   * Arguments after the executable, passed literally (no shell, no expansion). Each must not
   * contain NUL.
   *
   * @default {[]}
   */
  readonly args?: readonly string[];
  /**
   * Additional environment variables. Names match `[A-Za-z_][A-Za-z0-9_]*`; values must not
   * contain NUL. `HOME`, `TMPDIR` and `PATH` may appear only with their
   * {@linkcode FIXED_GUEST_ENV} values. Values are readable by guest code and the Docker
   * controller: they are not secret from either.
   *
   * @default {{}}
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Bound on process output produced but not yet read, in bytes, combined over stdout and
   * stderr: an integer from 1 to 1 GiB. Exceeding it ends the process (policy `processes:
   * "one"`: stops the whole sandbox) with a `SandboxOutputLimitError`. Output is read from the
   * engine continuously, so this must cover bursts the consumer has not yet read (values below
   * 64 KiB can fault on one engine chunk).
   *
   * @default {4194304} 4 MiB
   */
  readonly maxBufferedOutputBytes?: number;
  /**
   * The process's own deadline, in milliseconds from its start (an integer from 1 to
   * 2^53 − 1): when it passes while the leader runs, the process and the descendants in its
   * process group are killed and its receipt is `{ kind: "killed", reason: "timeout" }`
   * (policy `processes: "one"`: the whole sandbox stops with a `SandboxDeadlineError`).
   * It is a timer of the controller's: while the controller process is frozen (stopped,
   * suspended) the deadline slips by as long; for a bound that holds without the controller
   * use the sandbox's `execution: { kind: "deadline" }`, which is enforced inside the guest too.
   *
   * @default {undefined} no deadline of its own (the sandbox's `execution` still applies)
   */
  readonly timeoutMs?: number;
  /**
   * Whether the descendants still in the process's process group are killed (`SIGKILL`) as
   * soon as its leader exits. Without it they run on until they exit or the sandbox stops.
   * A descendant that started a session or process group of its own (`setsid`, job control)
   * is not reached.
   *
   * @default {false}
   */
  readonly killDescendantsOnExit?: boolean;
  /**
   * Where standard error goes (see {@linkcode SandboxStderrMode}).
   *
   * @default {"pipe"}
   */
  readonly stderr?: SandboxStderrMode;
  /**
   * Run the process on a terminal (a pseudo-terminal of the Engine's, Docker exec `Tty`) of
   * this size: programs see `isatty`, get `SIGWINCH` on {@linkcode SandboxProcess.resize},
   * and read `TERM` (`tty.term`, default `"xterm-256color"`; `env.TERM` may repeat it only
   * with the same value). What a terminal changes:
   *
   * - one output stream: everything the guest writes to the terminal (stdout and stderr
   *   alike, and the terminal's echo of input) arrives on `stdout`, with the terminal's
   *   line endings (`\r\n`); `stderr` is empty and closed (`stderr: "discard"` still sends
   *   fd 2 to `/dev/null`);
   * - stdin is bytes as typed: `\x03` (Ctrl-C) interrupts the foreground job, `\x04`
   *   (Ctrl-D) ends input of a line-reading program, `\x1a` suspends; `stdin.close()` only
   *   stops writing (the guest sees no end of file: the Engine would end the terminal's
   *   output with its input);
   * - the Engine's detach keys are set to a sequence nobody types (see
   *   `TERMINAL_DETACH_KEYS` of the Docker backend), so Ctrl-P and Ctrl-Q reach the guest.
   *
   * The output bound, the receipt, the kill and every fault are those of a process without
   * a terminal.
   *
   * @default {undefined} no terminal: stdin, stdout and stderr are pipes
   */
  readonly tty?: SandboxTerminalRequest;
}

/**
 * A validated process request with defaults filled and the fixed environment merged in.
 *
 * @example
 * ```ts
 * import { type NormalizedSandboxProcessRequest, normalizeProcessRequest } from "./process.ts";
 *
 * const request: NormalizedSandboxProcessRequest = normalizeProcessRequest({
 *   executable: "/bin/cat",
 * });
 * console.log(request.args, request.maxBufferedOutputBytes, request.stderr); // [] 4194304 "pipe"
 * ```
 */
export interface NormalizedSandboxProcessRequest {
  /** Absolute canonical guest path of the executable. */
  readonly executable: string;
  /** Literal arguments after the executable (frozen). */
  readonly args: readonly string[];
  /** Complete guest environment: {@linkcode FIXED_GUEST_ENV} first, then the request's (frozen). */
  readonly env: Readonly<Record<string, string>>;
  /** Bound on combined unread stdout and stderr, in bytes. */
  readonly maxBufferedOutputBytes: number;
  /** The process's own deadline in milliseconds, or `undefined` for none. */
  readonly timeoutMs: number | undefined;
  /** Whether descendants in the process group are killed when the leader exits. */
  readonly killDescendantsOnExit: boolean;
  /** Where standard error goes. */
  readonly stderr: SandboxStderrMode;
  /** The terminal (its `TERM` is in `env` too), or `undefined` for pipes. */
  readonly tty: NormalizedSandboxTerminal | undefined;
}

/**
 * Why the backend killed a process (the `reason` of a `killed` receipt).
 *
 * - `"timeout"`: its own `timeoutMs` passed.
 * - `"output_limit"`: its unread output exceeded `maxBufferedOutputBytes`, or `run()`'s
 *   `maxOutputBytes` was reached.
 * - `"abandoned_output"`: a consumer cancelled its stdout or stderr before the end.
 * - `"framing"`: the Engine's output stream of it was malformed.
 * - `"connection"`: its Engine connection failed.
 * - `"aborted"`: the `signal` of a `run()` aborted.
 * - `"requested"`: the caller called {@linkcode SandboxProcess.kill}.
 *
 * @example
 * ```ts
 * import type { SandboxKillReason } from "./process.ts";
 *
 * const reason: SandboxKillReason = "timeout";
 * ```
 */
export type SandboxKillReason = typeof SANDBOX_KILL_REASONS[number];

/** Every {@linkcode SandboxKillReason}, in the order documented there. */
export const SANDBOX_KILL_REASONS = ["timeout", "output_limit", "abandoned_output", "framing", "connection", "aborted", "requested"] as const;

/**
 * How the process leader ended.
 *
 * - `{ kind: "exited", code, oomKilled? }`: the leader exited on its own and the engine
 *   reported its exit `code` (128 + the signal for a leader a signal ended, e.g. 137 for
 *   `SIGKILL`). `oomKilled: true` when the kernel's OOM killer ended it: the sandbox hit its
 *   memory limit (`policy.resources.memoryBytes`) while it ran; absent otherwise, or when a
 *   backend could not tell.
 * - `{ kind: "killed", reason, code }`: the backend ended the process (see
 *   {@linkcode SandboxKillReason}) before its leader's exit was observed; `code` is the exit
 *   code the engine then reported (137 when the kill ended the leader).
 * - `{ kind: "unavailable", reason: "sandbox_stopped" }`: the sandbox's compute was removed
 *   before the leader's status could be observed (`stop()`, the sandbox's execution deadline,
 *   a keeper that died).
 *
 * The receipt describes the leader only: without `killDescendantsOnExit`, descendants and the
 * sandbox keeper keep running until they exit or the sandbox is stopped. Once observed, a
 * receipt never changes.
 *
 * @example
 * ```ts
 * import type { SandboxExitReceipt } from "./process.ts";
 *
 * function describe(receipt: SandboxExitReceipt): string {
 *   if (receipt.kind === "exited") return `exit code ${receipt.code}`;
 *   if (receipt.kind === "killed") return `killed (${receipt.reason})`;
 *   return "sandbox stopped first";
 * }
 * console.log(describe({ kind: "killed", reason: "timeout", code: 137 })); // "killed (timeout)"
 * ```
 */
export type SandboxExitReceipt =
  | { readonly kind: "exited"; readonly code: number; readonly oomKilled?: true }
  | { readonly kind: "killed"; readonly reason: SandboxKillReason; readonly code: number }
  | { readonly kind: "unavailable"; readonly reason: "sandbox_stopped" };

/**
 * zod schema of {@linkcode SandboxExitReceipt}; `code` is a 32-bit signed integer as reported
 * by the Docker Engine's exec inspection.
 *
 * @example
 * ```ts
 * import { sandboxExitReceiptSchema } from "./process.ts";
 *
 * sandboxExitReceiptSchema.parse({ kind: "exited", code: 0 });
 * sandboxExitReceiptSchema.parse({ kind: "exited", code: 137, oomKilled: true });
 * sandboxExitReceiptSchema.parse({ kind: "killed", reason: "timeout", code: 137 });
 * ```
 */
export const sandboxExitReceiptSchema: z.ZodType<SandboxExitReceipt> = z.discriminatedUnion(
  "kind",
  [
    z.strictObject({ kind: z.literal("exited"), code: z.int32(), oomKilled: z.literal(true).optional() }),
    z.strictObject({
      kind: z.literal("killed"),
      reason: z.enum(SANDBOX_KILL_REASONS),
      code: z.int32(),
    }),
    z.strictObject({ kind: z.literal("unavailable"), reason: z.literal("sandbox_stopped") }),
  ],
);

/**
 * A started process. Its streams are the process's own bytes, unmodified.
 *
 * Abandoning an output stream (cancelling it before its end), malformed engine framing or
 * output beyond `maxBufferedOutputBytes` ends this process: its process group is killed
 * inside the guest, both output streams error with the cause, and the receipt is `killed`
 * with the reason (policy `processes: "one"`: the whole sandbox stops instead). Its own
 * `timeoutMs` and {@linkcode SandboxProcess.kill} end it the same way, while its streams end
 * normally after the output written before. The sandbox's execution deadline, `stop()` and a
 * keeper that dies end every process: their streams error with the sandbox's stop cause and
 * their receipts are `unavailable`.
 *
 * @example
 * ```ts
 * import type { SandboxProcess } from "./process.ts";
 *
 * async function converse(process: SandboxProcess): Promise<string> {
 *   const writer = process.stdin.getWriter();
 *   await writer.write(new TextEncoder().encode("hello\n"));
 *   await writer.close(); // half-close: the process reads end of file
 *   const [out] = await Promise.all([
 *     new Response(process.stdout).text(),
 *     process.stderr.pipeTo(new WritableStream()),
 *   ]);
 *   const receipt = await process.exit;
 *   return receipt.kind === "exited" ? `${receipt.code}: ${out}` : "stopped";
 * }
 * ```
 */
export interface SandboxProcess {
  /**
   * The process's standard input. Writes honour backpressure; `close()` half-closes (the
   * process reads end of file) while output keeps flowing.
   */
  readonly stdin: WritableStream<Uint8Array>;
  /** The process's standard output; closes after the process's last output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** The process's standard error; closes after the process's last output. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** Settles once with the leader's {@linkcode SandboxExitReceipt}; never changes afterwards. */
  readonly exit: Promise<SandboxExitReceipt>;
  /**
   * Kills the process: its leader, if it still runs, and every descendant still in its
   * process group (`SIGKILL` inside the guest). A receipt not yet observed becomes
   * `{ kind: "killed", reason: "requested", code }`. Once the leader exited there is nothing
   * left to kill by it (`killDescendantsOnExit` ends what it left behind). Policy
   * `processes: "one"`: stops the whole sandbox instead.
   *
   * @returns Resolves once the kill ran in the guest (await `exit` for the receipt).
   * @throws {SandboxStoppedError} (or the stop cause) When the sandbox stopped first.
   */
  kill(): Promise<void>;
  /**
   * Resizes the process's terminal (its programs get `SIGWINCH`). Only for a process
   * started with `tty`.
   *
   * @param size The new size in character cells (integers from 1 to 65535).
   * @returns Resolves once the Engine resized the terminal.
   * @throws {SandboxConfigurationError} When `size` is not `{ columns, rows }` in range.
   * @throws {SandboxStateError} (`invalid_state`) When the process has no terminal, or its
   *   exit was already observed.
   * @throws {SandboxStoppedError} (or the stop cause) When the sandbox stopped first.
   * @throws {SandboxEngineError} When the Engine failed.
   */
  resize(size: SandboxTerminalSize): Promise<void>;
}

/**
 * An inert, validated process reservation: nothing runs until {@linkcode start}. A reservation
 * starts at most once; startup never replays an exec.
 *
 * @example
 * ```ts
 * import type { SandboxProcessReservation } from "./process.ts";
 *
 * async function start(reservation: SandboxProcessReservation) {
 *   console.log(reservation.request.executable);
 *   return await reservation.start({ signal: AbortSignal.timeout(30_000) });
 * }
 * ```
 */
export interface SandboxProcessReservation {
  /** The normalised request that will run (frozen). */
  readonly request: NormalizedSandboxProcessRequest;
  /**
   * Starts the process.
   *
   * @param options Optional cancellation signal.
   * @returns The running process.
   * @throws {SandboxStateError} When the reservation was already started.
   * @throws {SandboxStoppedError} When the sandbox was stopped.
   * @throws {SandboxAbortedError} When `options.signal` aborted startup.
   * @throws {SandboxEngineError} When the Docker Engine failed.
   */
  start(options?: SandboxStartOptions): Promise<SandboxProcess>;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isRecordObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

const envSchema = z.custom<Readonly<Record<string, string>>>(isRecordObject, {
  error: expect("must be an object of strings"),
}).transform((env, context) => {
  // One read of the entries both validates and copies, so getters cannot change what passes.
  const entries = Object.entries(env);
  for (const [name, value] of entries) {
    const reason = !ENV_NAME.test(name)
      ? "must be a name matching [A-Za-z_][A-Za-z0-9_]*"
      : typeof value !== "string"
      ? "must be a string"
      : value.includes("\0")
      ? "must not contain NUL"
      : undefined;
    if (reason !== undefined) {
      context.addIssue({ code: "custom", message: reason, path: [name], input: value });
      return z.NEVER;
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
});

const noNul = expect("must be a string without NUL");
const bufferBound = expect(`must be an integer from 1 to ${MAX_BUFFERED_OUTPUT_BYTES} bytes`);
const timeoutBound = expect(`must be an integer from 1 to ${Number.MAX_SAFE_INTEGER} milliseconds`);

/** zod schema of an executable: an absolute canonical guest path. */
export const executableSchema: z.ZodType<string> = z.string({ error: expect("must be a string") }).superRefine((text, context) => {
  const defect = pathDefect(text, true);
  if (defect !== undefined) context.addIssue({ code: "custom", message: defect, input: text });
});

/** zod schema of literal arguments: strings without NUL. */
export const argsSchema: z.ZodType<string[]> = z.array(
  z.string({ error: noNul }).refine((arg) => !arg.includes("\0"), { error: noNul }),
  { error: expect("must be an array of strings") },
);

/** zod schemas of the fields a process request and `run()`'s options share. */
export const processOptionFields = {
  env: envSchema.optional(),
  timeoutMs: z.number({ error: timeoutBound }).int({ error: timeoutBound }).min(1, { error: timeoutBound })
    .max(Number.MAX_SAFE_INTEGER, { error: timeoutBound }).optional(),
  killDescendantsOnExit: z.boolean({ error: expect("must be a boolean") }).optional(),
  stderr: z.enum(["pipe", "discard", "stdout"], { error: expect('must be "pipe", "discard" or "stdout"') }).optional(),
};

/**
 * zod schema of {@linkcode SandboxProcessRequest}: field types and lexical checks, unknown
 * fields rejected. The fixed-environment check is made by {@linkcode normalizeProcessRequest},
 * which callers should use instead of this schema.
 *
 * @example
 * ```ts
 * import { sandboxProcessRequestSchema } from "./process.ts";
 *
 * sandboxProcessRequestSchema.safeParse({ executable: "bin/sh" }).success; // false
 * ```
 */
export const sandboxProcessRequestSchema: z.ZodType<SandboxProcessRequest> = z.strictObject({
  executable: executableSchema,
  args: argsSchema.optional(),
  maxBufferedOutputBytes: z.number({ error: bufferBound })
    .int({ error: bufferBound })
    .min(1, { error: bufferBound })
    .max(MAX_BUFFERED_OUTPUT_BYTES, { error: bufferBound })
    .optional(),
  tty: terminalRequestSchema.optional(),
  ...processOptionFields,
});

const ACTION = "reserve process";

/**
 * Validates a process request, fills defaults and merges the fixed guest environment.
 *
 * The returned request is frozen and detached from the input (later changes to the caller's
 * arrays or objects have no effect). Its `env` lists {@linkcode FIXED_GUEST_ENV} first, then
 * the request's other variables in their own order.
 *
 * @param request The request as written by the caller (untrusted: checked at run time).
 * @returns The normalised request.
 * @throws {SandboxConfigurationError} When a field is missing, unknown, of the wrong type or
 *   not canonical, or `env` sets `HOME`, `TMPDIR` or `PATH` to another value than the fixed
 *   one. The message names the field, e.g. "Cannot reserve process: request.env.HOME must
 *   equal the fixed guest value \"/home/sandbox\"".
 *
 * @example
 * ```ts
 * import { normalizeProcessRequest } from "./process.ts";
 *
 * const request = normalizeProcessRequest({
 *   executable: "/usr/local/bin/agent",
 *   args: ["--stdio"],
 *   env: { LOG_LEVEL: "debug", HOME: "/home/sandbox" },
 * });
 * console.log(Object.keys(request.env)); // ["HOME", "TMPDIR", "PATH", "LOG_LEVEL"]
 * ```
 */
export function normalizeProcessRequest(
  request: SandboxProcessRequest,
): NormalizedSandboxProcessRequest {
  const parsed = parseConfiguration(sandboxProcessRequestSchema, request, ACTION, "request");
  const tty = parsed.tty === undefined ? undefined : normalizeTerminal(parsed.tty);
  const env = guestEnvironment(parsed.env, ACTION, "request.env");
  return Object.freeze({
    executable: parsed.executable,
    args: Object.freeze([...(parsed.args ?? [])]),
    env: tty === undefined ? env : terminalEnvironment(env, tty),
    maxBufferedOutputBytes: parsed.maxBufferedOutputBytes ?? DEFAULT_MAX_BUFFERED_OUTPUT_BYTES,
    timeoutMs: parsed.timeoutMs,
    killDescendantsOnExit: parsed.killDescendantsOnExit ?? false,
    stderr: parsed.stderr ?? "pipe",
    tty,
  });
}

/**
 * `env` with `TERM` set to the terminal's (frozen).
 *
 * @throws {SandboxConfigurationError} When `env.TERM` names another terminal type.
 */
function terminalEnvironment(env: Readonly<Record<string, string>>, tty: NormalizedSandboxTerminal): Readonly<Record<string, string>> {
  if (Object.hasOwn(env, "TERM") && env.TERM !== tty.term) {
    throw new SandboxConfigurationError(
      `Cannot ${ACTION}: request.env.TERM ${JSON.stringify(env.TERM)} differs from request.tty.term ${JSON.stringify(tty.term)}; ` +
        "set the terminal type once, as request.tty.term",
    );
  }
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) Object.defineProperty(merged, name, { value, enumerable: true, writable: true });
  Object.defineProperty(merged, "TERM", { value: tty.term, enumerable: true, writable: true });
  return Object.freeze(merged);
}

/**
 * The complete guest environment: {@linkcode FIXED_GUEST_ENV} first, then `env`'s other
 * variables in their own order (frozen).
 *
 * @param env Validated extra variables.
 * @param action The "<action>" of an error message.
 * @param field The field name of `env` in an error message, e.g. "request.env".
 * @throws {SandboxConfigurationError} When `env` sets a fixed variable to another value.
 */
export function guestEnvironment(env: Readonly<Record<string, string>> | undefined, action: string, field: string): Readonly<Record<string, string>> {
  const merged: Record<string, string> = { ...FIXED_GUEST_ENV };
  for (const [name, value] of Object.entries(env ?? {})) {
    if (Object.hasOwn(FIXED_GUEST_ENV, name)) {
      const fixed = FIXED_GUEST_ENV[name as keyof typeof FIXED_GUEST_ENV];
      if (value !== fixed) {
        throw new SandboxConfigurationError(
          `Cannot ${action}: ${field}.${name} must equal the fixed guest value ` +
            JSON.stringify(fixed),
        );
      }
      continue;
    }
    Object.defineProperty(merged, name, { value, enumerable: true, writable: true });
  }
  return Object.freeze(merged);
}
