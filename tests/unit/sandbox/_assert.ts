/**
 * Assertions shared by the sandbox contract tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { SandboxConfigurationError, type SandboxError } from "../../../lib/sandbox/errors.ts";

/**
 * Asserts `run` throws an instance of `type` with `code`, whose message starts with
 * `Cannot <action>: `, says "Cannot" only there, and contains `fragment`.
 */
export function assertThrowsSandbox(
  run: () => unknown,
  type: new (...args: never[]) => SandboxError,
  code: string,
  fragment: string,
  label = fragment,
): SandboxError {
  let caught: unknown;
  let returned: unknown;
  try {
    returned = run();
  } catch (error) {
    caught = error;
  }
  assert.ok(
    caught instanceof type,
    `${label}: expected ${type.name}, got ${String(caught ?? JSON.stringify(returned))}`,
  );
  const error = caught as SandboxError;
  assert.equal(error.code, code);
  assert.match(error.message, /^Cannot [a-z ]+: /);
  assert.ok(
    error.message.includes(fragment),
    `expected the message to contain ${JSON.stringify(fragment)}: ${error.message}`,
  );
  assert.doesNotMatch(error.message, /\.$/);
  assert.equal(error.message.match(/Cannot/g)?.length, 1, `"Cannot" more than once: ${error.message}`);
  return error;
}

/** Asserts `run` throws a {@linkcode SandboxConfigurationError} naming `field`. */
export function assertConfigurationError(run: () => unknown, field: string): SandboxError {
  return assertThrowsSandbox(run, SandboxConfigurationError, "configuration", `${field} `);
}

/** Asserts `value` and every object below it are frozen. */
export function assertDeepFrozen(value: unknown, path = "value"): void {
  if (typeof value !== "object" || value === null) return;
  assert.ok(Object.isFrozen(value), `${path} is not frozen`);
  for (const [key, child] of Object.entries(value)) assertDeepFrozen(child, `${path}.${key}`);
}
