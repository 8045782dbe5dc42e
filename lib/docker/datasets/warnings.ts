/**
 * The warnings `POST /containers/create` may answer with. Only the Engine's own advisory
 * for image mounts is expected, once per dataset; any other warning means the Engine did
 * not apply the configuration as asked (or applied it differently), so startup fails.
 *
 * Measured on Engine 28.5.2 (API 1.51), 2026-12-01: a create with N image mounts answers
 * `Warnings` with N copies of {@linkcode IMAGE_MOUNT_ADVISORY}; without image mounts,
 * `null`. Engine 26.1.5 (API 1.45) knows no image mounts.
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { IPV4_FORWARDING_FIX } from "../admission/daemon.ts";

/** The Engine's exact per-mount advisory for `Type: "image"` mounts (Engine 28.5.2). */
export const IMAGE_MOUNT_ADVISORY = "Image mount is an experimental feature";

/**
 * The warnings of a create reply that are not expected: none at all is fine, and so is
 * exactly one {@linkcode IMAGE_MOUNT_ADVISORY} per image mount; anything else is returned
 * whole (a wrong number of advisories counts as unexpected too).
 *
 * @param warnings the reply's `Warnings` (empty for `null`)
 * @param imageMounts how many image mounts the create asked for
 * @returns the unexpected warnings (empty when the reply is as expected)
 */
export function unexpectedCreateWarnings(warnings: readonly string[], imageMounts: number): readonly string[] {
  if (warnings.length === 0) return [];
  const advisories = warnings.filter((warning) => warning === IMAGE_MOUNT_ADVISORY);
  const others = warnings.filter((warning) => warning !== IMAGE_MOUNT_ADVISORY);
  if (others.length > 0) return others;
  return advisories.length === imageMounts ? [] : warnings;
}

/**
 * Throw when a create reply carries an unexpected warning (see
 * {@linkcode unexpectedCreateWarnings}); the caller removes what was created.
 *
 * @param warnings the reply's `Warnings`
 * @param imageMounts how many image mounts the create asked for
 * @param action the "<action>" of the message ("start sandbox")
 * @throws {SandboxUnsupportedError} naming every warning and what is accepted
 */
export function assertCreateWarnings(warnings: readonly string[], imageMounts: number, action: string): void {
  const unexpected = unexpectedCreateWarnings(warnings, imageMounts);
  if (unexpected.length === 0) return;
  const accepted = imageMounts === 0
    ? "no warning is accepted for a container without datasets"
    : `only ${JSON.stringify(IMAGE_MOUNT_ADVISORY)}, once per dataset (${imageMounts} here), is accepted`;
  throw new SandboxUnsupportedError(
    `Cannot ${action}: the Engine warned on create: ${unexpected.map((warning) => JSON.stringify(warning)).join(", ")}; ${accepted}, so what was created is removed${
      warningFix(unexpected)
    }`,
  );
}

/** The Engine's create warning on a bridge network of a daemon started with forwarding off. */
const FORWARDING_WARNING = "IPv4 forwarding is disabled";

/**
 * The fix to append to a create-warning refusal, when one of `warnings` has a known one
 * (forwarding off: {@linkcode IPV4_FORWARDING_FIX}); empty otherwise.
 *
 * @param warnings the unexpected warnings of a create reply
 * @returns `": <fix>"` or `""`
 */
export function warningFix(warnings: readonly string[]): string {
  return warnings.some((warning) => warning.includes(FORWARDING_WARNING)) ? `: ${IPV4_FORWARDING_FIX}` : "";
}
