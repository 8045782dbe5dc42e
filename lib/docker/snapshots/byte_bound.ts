/**
 * The byte bound of a snapshot's copy or transfer: how many bytes of regular-file content a
 * snapshot, a fork's copy, an export or an import may carry, where the bound comes from
 * (the caller's option, or `config.defaultExportQuota.bytes`), and the one wording of its
 * refusal (`SandboxQuotaError`: the subject, the bound, its source, and the option to raise).
 *
 * @module
 */
import { SandboxConfigurationError, SandboxQuotaError } from "../../sandbox/errors.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";

/** A byte bound and where it comes from. */
export interface SnapshotByteBound {
  /** Most bytes of regular-file content, counted at apparent size (a sparse file at its full length). */
  readonly bytes: number;
  /** Where the bound comes from, for the message: the option, or the config field that applied. */
  readonly source: string;
  /** The option that raises it (the fix the message names): `options.maxBytes`, `request.workspace.maxBytes`. */
  readonly option: string;
}

/**
 * The bound of one call: `maxBytes` as given, else `config.defaultExportQuota.bytes`, else none.
 *
 * @param settings the backend's settings (`defaultExportQuota`)
 * @param maxBytes the caller's option (bytes), or `undefined`
 * @param option the option's name as the caller spells it (`options.maxBytes`)
 * @param action the "<action>" of a message ("take a snapshot")
 * @returns the bound, or `undefined` when neither the option nor the config sets one
 * @throws {SandboxConfigurationError} when `maxBytes` is not a non-negative safe integer
 */
export function snapshotByteBound(
  settings: Pick<DockerSandboxBackendSettings, "defaultExportQuota">,
  maxBytes: number | undefined,
  option: string,
  action: string,
): SnapshotByteBound | undefined {
  if (maxBytes !== undefined) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new SandboxConfigurationError(`Cannot ${action}: ${option} must be a non-negative safe integer (bytes); got ${String(maxBytes)}`);
    }
    return { bytes: maxBytes, source: option, option };
  }
  const fallback = settings.defaultExportQuota?.bytes;
  return fallback === undefined ? undefined : { bytes: fallback, source: `config.defaultExportQuota.bytes, which applies when ${option} is not set`, option };
}

/**
 * The refusal of a bound: `Cannot <action>: <subject> would take its files past <bytes> bytes
 * (<source>); pass a larger <option>`.
 *
 * @param action the "<action>" ("export snapshot")
 * @param subject what crosses it: an entry's path, "the tree of /workspace/work", "snapshot <id>"
 * @param bound the bound crossed
 * @returns the error (nothing is thrown)
 */
export function byteBoundError(action: string, subject: string, bound: SnapshotByteBound): SandboxQuotaError {
  return new SandboxQuotaError(`Cannot ${action}: ${subject} would take its files past ${bound.bytes} bytes (${bound.source}); pass a larger ${bound.option}`);
}

/**
 * A bound as the copier takes it (`CopyRequest.bound` of `./copier.ts`): its bytes, and the
 * refusal to throw when the tree is past it.
 *
 * @param bound the bound, or `undefined` (no bound)
 * @param action the "<action>" of the refusal ("take a snapshot", "start sandbox")
 * @param subject what would cross it ("the tree of /workspace/work", "snapshot <id>")
 * @returns the copier's bound, or `undefined`
 */
export function copyBound(
  bound: SnapshotByteBound | undefined,
  action: string,
  subject: string,
): { readonly bytes: number; readonly refusal: () => SandboxQuotaError } | undefined {
  return bound && { bytes: bound.bytes, refusal: () => byteBoundError(action, subject, bound) };
}
