/**
 * The reserve-time check of an allowlist policy against the backend configuration: the
 * proxy needs an image, and the backend never guesses one.
 *
 * @module
 */
import { SandboxConfigurationError } from "../../sandbox/errors.ts";
import type { SandboxPolicy } from "../../sandbox/policy.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";

/**
 * Refuse an allowlist network when the backend has no `proxyImageDigest`.
 *
 * @throws {SandboxConfigurationError} naming `policy.network` and `config.proxyImageDigest`
 */
export function assertEgressConfigured(policy: SandboxPolicy, settings: DockerSandboxBackendSettings): void {
  if (typeof policy.network !== "object" || settings.proxyImageDigest !== undefined) return;
  throw new SandboxConfigurationError(
    "Cannot reserve sandbox: policy.network is an allowlist, which needs an egress proxy image: set config.proxyImageDigest to the exact ID of a local image with Node.js 23.6 or newer as node",
  );
}
