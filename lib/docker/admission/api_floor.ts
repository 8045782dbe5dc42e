/**
 * The one API-version floor check: a feature that needs a newer Docker Engine API than the
 * daemon speaks is refused before anything is created, naming both versions and the fix.
 * Datasets (image mounts) and the egress allowlist (an isolated bridge gateway) both need
 * Engine 28 (API 1.48).
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { compareApiVersions } from "../../engine/api_version.ts";
import type { EngineVersion } from "../../engine/system.ts";

/** Docker Engine 28.0's API version, the floor of image mounts and isolated gateways. */
export const ENGINE_28_API_VERSION = "1.48";

/** A feature and its floor, as a refusal names them. */
export interface ApiFloor {
  /** Lowest API version, e.g. `1.48`. */
  readonly apiVersion: string;
  /** The Engine release that brought it, e.g. `Engine 28`. */
  readonly engine: string;
  /** "Cannot <action>" of the message, e.g. `attach datasets`. */
  readonly action: string;
  /** What needs it and why, e.g. `image mounts`. */
  readonly feature: string;
  /** The fix besides upgrading, e.g. `leave config.datasets empty`. */
  readonly otherwise: string;
}

/**
 * Refuse `floor.feature` on a daemon whose `ApiVersion` is below `floor.apiVersion` (an
 * unparsable version counts as below).
 *
 * @param floor the feature's floor and the message's parts
 * @param version the daemon's `GET /version`
 * @throws {SandboxUnsupportedError} "Cannot <action>: <feature> need(s) Docker Engine API <floor> or newer (<engine>), and the daemon speaks API <v> (Engine <e>): upgrade the Engine, or <otherwise>"
 */
export function requireApiVersion(floor: ApiFloor, version: EngineVersion): void {
  let below: boolean;
  try {
    below = compareApiVersions(version.ApiVersion, floor.apiVersion) < 0;
  } catch {
    below = true;
  }
  if (below) {
    throw new SandboxUnsupportedError(
      `Cannot ${floor.action}: ${floor.feature} Docker Engine API ${floor.apiVersion} or newer (${floor.engine}), and the daemon speaks API ${version.ApiVersion} (Engine ${version.Version}): upgrade the Engine, or ${floor.otherwise}`,
    );
  }
}
