import { DockerEngineError } from "./errors.ts";

/** Highest Engine API version this client speaks (Docker Engine API v1.52). */
export const MAX_API_VERSION = "1.52";
/** Lowest daemon API version admitted (Docker Engine API v1.44, Engine 25). */
export const MIN_API_VERSION = "1.44";

function parse(version: string): [number, number] | undefined {
  const match = /^(\d{1,4})\.(\d{1,4})$/u.exec(version);
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * Compare two `major.minor` API versions.
 *
 * @returns negative when `a` < `b`, zero when equal, positive when `a` > `b`
 * @throws {TypeError} when either is not `major.minor`
 */
export function compareApiVersions(a: string, b: string): number {
  const left = parse(a), right = parse(b);
  if (!left || !right) throw new TypeError(`Cannot compare API versions: '${a}' or '${b}' is not major.minor`);
  return left[0] - right[0] || left[1] - right[1];
}

/**
 * Choose the API version to request under: `min(daemon ApiVersion, 1.52)`.
 *
 * @param daemonApiVersion the `ApiVersion` of the daemon's `GET /version` reply
 * @returns the version for the `/v{version}/` path prefix
 * @throws {DockerEngineError} code `unsupported_api_version` when the daemon is below 1.44
 *   (the message names both versions) or its version is not `major.minor`
 *
 * @example
 * ```ts
 * import { negotiateApiVersion } from "./api_version.ts";
 * console.assert(negotiateApiVersion("1.51") === "1.51");
 * console.assert(negotiateApiVersion("1.53") === "1.52");
 * ```
 */
export function negotiateApiVersion(daemonApiVersion: string): string {
  if (!parse(daemonApiVersion)) {
    throw new DockerEngineError(
      "unsupported_api_version",
      `Cannot negotiate Engine API version: the daemon reports '${daemonApiVersion.slice(0, 32)}'`,
    );
  }
  if (compareApiVersions(daemonApiVersion, MIN_API_VERSION) < 0) {
    throw new DockerEngineError(
      "unsupported_api_version",
      `Cannot negotiate Engine API version: the daemon speaks API ${daemonApiVersion}, this client needs at least ${MIN_API_VERSION}`,
    );
  }
  return compareApiVersions(daemonApiVersion, MAX_API_VERSION) > 0 ? MAX_API_VERSION : daemonApiVersion;
}
