/**
 * Validation of what callers hand the Engine transport below HTTP: timer durations, byte
 * limits and socket paths (zod schemas), and {@linkcode parseInput}, which turns a failed
 * parse into a `TypeError` naming the field. The socket adapters and the HTTP client share
 * them.
 *
 * @module
 */
import { z } from "zod";
import { MAX_TIMER_MS as TIMER_LIMIT_MS } from "../internal/long_timer.ts";

/** Largest delay a single runtime timer supports, in milliseconds: 2^31 − 1. */
export const MAX_TIMER_MS: number = TIMER_LIMIT_MS;

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
