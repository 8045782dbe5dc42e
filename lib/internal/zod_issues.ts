/**
 * Turning zod validation failures into {@linkcode SandboxConfigurationError}s whose message
 * names the offending field path ("Cannot reserve sandbox: policy.resources.pids must be …").
 *
 * Schemas give every check a "must …" sentence through {@linkcode expect}; everything a schema
 * does not word itself (missing fields, unknown fields, wrong types, unknown discriminators)
 * is worded by {@linkcode issueWording}, passed to zod as the per-parse error map.
 *
 * @module
 */
import { z } from "zod";
import { SandboxConfigurationError } from "../sandbox/errors.ts";

type RawIssue = z.core.$ZodRawIssue;

/**
 * An error map for one schema check: "is required" when the value is missing, otherwise the
 * given sentence.
 *
 * @param sentence What the value must be, starting with "must".
 * @returns A zod error map.
 */
export function expect(sentence: string): (issue: RawIssue) => string {
  return (issue) => issue.input === undefined ? "is required" : sentence;
}

const ARTICLE_NOUNS: Readonly<Record<string, string>> = {
  object: "an object",
  array: "an array",
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  record: "an object",
};

/**
 * Per-parse zod error map for the issues a schema does not word itself.
 *
 * @param issue The raw zod issue.
 * @returns The wording, or `undefined` to keep zod's own.
 */
export function issueWording(issue: RawIssue): string | undefined {
  if (issue.code === "invalid_type") {
    if (issue.input === undefined) return "is required";
    const noun = ARTICLE_NOUNS[String(issue.expected)];
    return noun === undefined ? undefined : `must be ${noun}`;
  }
  if (issue.code === "invalid_union" && issue.discriminator !== undefined) {
    const options: unknown = (issue as { readonly options?: unknown }).options;
    if (!Array.isArray(options)) return undefined;
    return `must be one of ${options.map((option) => JSON.stringify(option)).join(", ")}`;
  }
  if (issue.code === "unrecognized_keys") return "is not a known field";
  return undefined;
}

/**
 * Builds the configuration error for a failed parse from its first issue.
 *
 * @param action The "<action>" of "Cannot <action>: <reason>", e.g. "reserve sandbox".
 * @param root Name of the validated value, the first segment of the path, e.g. "policy".
 * @param error The zod error.
 * @returns A {@linkcode SandboxConfigurationError} whose cause is `error`.
 */
export function configurationError(
  action: string,
  root: string,
  error: z.ZodError,
): SandboxConfigurationError {
  const issue = error.issues[0];
  const path: PropertyKey[] = [root, ...(issue?.path ?? [])];
  if (issue?.code === "unrecognized_keys" && issue.keys.length > 0) path.push(issue.keys[0]);
  const field = path.map((segment) => String(segment)).join(".");
  const reason = issue === undefined ? "is invalid" : issue.message;
  return new SandboxConfigurationError(`Cannot ${action}: ${field} ${reason}`, { cause: error });
}

/**
 * Parses `input` with `schema` or throws the configuration error naming the first bad field.
 *
 * @param schema The zod schema.
 * @param input The untrusted value.
 * @param action The "<action>" of the error message.
 * @param root Name of the validated value in the error message.
 * @returns The parsed value.
 * @throws {SandboxConfigurationError} When `input` does not match `schema`.
 */
export function parseConfiguration<T>(
  schema: z.ZodType<T>,
  input: unknown,
  action: string,
  root: string,
): T {
  const result = schema.safeParse(input, { error: issueWording });
  if (!result.success) throw configurationError(action, root, result.error);
  return result.data;
}

/**
 * A zod integer check from `minimum` to `maximum` whose failures all read `sentence`.
 *
 * @param minimum Smallest value accepted.
 * @param maximum Largest value accepted.
 * @param unit Unit of the default sentence ("bytes", "processes").
 * @param sentence What the value must be, starting with "must".
 * @returns The schema.
 */
export function integerFrom(
  minimum: number,
  maximum: number,
  unit: string,
  sentence: string = `must be an integer from ${minimum} to ${maximum} ${unit}`,
): z.ZodNumber {
  const error = expect(sentence);
  return z.number({ error }).int({ error }).min(minimum, { error }).max(maximum, { error });
}
