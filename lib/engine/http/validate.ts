/**
 * Validation of the requests callers hand the Engine HTTP client: request targets (a zod
 * schema) and {@linkcode validateEngineRequest}. Timer durations, byte limits and socket
 * paths are checked by the schemas of `../input.ts`, which the socket layer shares.
 *
 * @module
 */
import { z } from "zod";
import { byteLimitSchema, parseInput, timerMsSchema } from "../input.ts";
import { MAX_TARGET_LENGTH } from "./limits.ts";

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
