/**
 * Validation of what callers hand the Engine transport: request targets, timer
 * durations, byte limits and socket paths (zod schemas), and
 * {@linkcode validateEngineRequest}.
 *
 * @module
 */
import { z } from "zod";
import { MAX_TARGET_LENGTH, MAX_TIMER_MS } from "./limits.ts";

/**
 * An HTTP origin-form request target (RFC 9112 §3.2.1) the Engine client sends as is:
 * starts with `/` but not `//`, printable ASCII only (0x21–0x7e, so no spaces or
 * controls), no `\` and no `#`, at most {@linkcode MAX_TARGET_LENGTH} characters.
 * Callers percent-encode path segments and query values before.
 */
export const engineTargetSchema: z.ZodType<string> = z.custom<string>(
  (target) =>
    typeof target === "string" && target.length <= MAX_TARGET_LENGTH && target.startsWith("/") &&
    !target.startsWith("//") && /^[\x21-\x7e]+$/u.test(target) && !/[\\#]/u.test(target),
  {
    error:
      `must be an origin-form target: "/" first (not "//"), printable ASCII without "\\" or "#", at most ${MAX_TARGET_LENGTH} characters`,
  },
);

/** A timer duration in milliseconds: a safe integer from 1 to 2^31 − 1. */
export const timerMsSchema: z.ZodType<number> = z.custom<number>(
  (ms) => Number.isSafeInteger(ms) && (ms as number) >= 1 && (ms as number) <= MAX_TIMER_MS,
  { error: `must be a safe integer from 1 to ${MAX_TIMER_MS} (milliseconds)` },
);

/** A byte limit: a non-negative safe integer. */
export const byteLimitSchema: z.ZodType<number> = z.custom<number>(
  (bytes) => Number.isSafeInteger(bytes) && (bytes as number) >= 0,
  { error: "must be a non-negative safe integer (bytes)" },
);

/** An absolute Unix socket path without control characters. */
export const socketPathSchema: z.ZodType<string> = z.custom<string>(
  (path) =>
    typeof path === "string" && path.startsWith("/") &&
    // deno-lint-ignore no-control-regex
    !/[\u0000-\u001f\u007f]/u.test(path),
  { error: "must be an absolute Unix socket path without control characters" },
);

/**
 * Parses `value` with `schema`, turning a failure into a `TypeError` that names the first
 * invalid field.
 *
 * @param schema The zod schema.
 * @param value What the caller passed.
 * @param action What cannot be done when it is invalid ("send the Engine request").
 * @returns The parsed value.
 * @throws {TypeError} "Cannot <action>: <field> <problem>".
 */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, action: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join(".") || "value";
  throw new TypeError(`Cannot ${action}: ${field} ${issue?.message ?? "is invalid"}`);
}

/** The limits {@linkcode validateEngineRequest} checks. */
export interface EngineRequestLimits {
  /** Whole-request deadline in milliseconds: a safe integer from 1 to 2^31 − 1. */
  readonly timeoutMs: number;
  /** Largest accepted response body in bytes: a non-negative safe integer. */
  readonly maxResponseBytes: number;
}

const engineRequestSchema = z.object({
  target: engineTargetSchema,
  timeoutMs: timerMsSchema,
  maxResponseBytes: byteLimitSchema,
});

/**
 * Checks a bounded request before anything is sent: the target is origin-form (see
 * {@linkcode engineTargetSchema}), `timeoutMs` is a safe integer from 1 to 2^31 − 1
 * milliseconds and `maxResponseBytes` a non-negative safe integer.
 *
 * @param target The request target, e.g. `/v1.51/containers/json?all=1`.
 * @param limits The deadline and response limit.
 * @throws {TypeError} When any of them is invalid; the message names the field.
 *
 * @example
 * ```ts
 * import { validateEngineRequest } from "./validate.ts";
 *
 * validateEngineRequest("/_ping", { timeoutMs: 5_000, maxResponseBytes: 1_024 });
 * try {
 *   validateEngineRequest("//evil", { timeoutMs: 5_000, maxResponseBytes: 1_024 });
 * } catch (error) {
 *   console.log(error instanceof TypeError); // true
 * }
 * ```
 */
export function validateEngineRequest(target: string, limits: EngineRequestLimits): void {
  parseInput(
    engineRequestSchema,
    { target, timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxResponseBytes },
    "send the Engine request",
  );
}
