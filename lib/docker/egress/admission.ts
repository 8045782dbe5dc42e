/**
 * Allowlist admission, before any resource is created: the daemon must speak Engine API
 * 1.48 (Engine 28: the bridge gateway mode `isolated` that gives the sandbox's internal
 * network no address on the host; an older Engine ignores the option, and the guest could
 * reach the host's listeners through the bridge's address), and the proxy image must exist
 * locally under its exact ID, for the profile's platform, without declared volumes.
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { ENGINE_28_API_VERSION, requireApiVersion } from "../admission/api_floor.ts";
import { imageIdDefect } from "../admission/image.ts";
import type { ImageInspect } from "../../engine/images.ts";
import type { EngineVersion } from "../../engine/system.ts";
import type { DockerSandboxProfileRow } from "../profiles.ts";

/** Lowest daemon API version for an allowlist network: 1.48 (Docker Engine 28.0). */
export const EGRESS_ALLOWLIST_API_VERSION: string = ENGINE_28_API_VERSION;

/**
 * Admit the daemon and the proxy image for an allowlist sandbox.
 *
 * @param version the daemon's `GET /version`
 * @param imageDigest `config.proxyImageDigest`
 * @param image its `GET /images/{id}/json`, `undefined` when absent
 * @throws {SandboxUnsupportedError} naming the requirement and the fix
 */
export function admitEgress(version: EngineVersion, imageDigest: string, image: ImageInspect | undefined, profile: DockerSandboxProfileRow): void {
  requireApiVersion({
    apiVersion: EGRESS_ALLOWLIST_API_VERSION,
    engine: "Engine 28, an internal network whose gateway has no host address",
    action: "start sandbox",
    feature: "an allowlist network needs",
    otherwise: 'use "isolated" or "outbound"',
  }, version);
  const fail = (reason: string): never => {
    throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy image ${imageDigest} ${reason}`);
  };
  if (!image) fail("is not a local image (the backend never pulls or builds): set config.proxyImageDigest to the ID of a local image with node on its PATH");
  else {
    const defect = imageIdDefect(image, imageDigest);
    if (defect) fail(defect);
    if (image.Os !== "linux" || image.Architecture !== profile.image.architecture) {
      fail(`is ${image.Os}/${image.Architecture}, profile ${profile.name} needs linux/${profile.image.architecture}`);
    }
    const volumes = Object.keys(image.Config?.Volumes ?? {});
    if (volumes.length > 0) fail(`declares volumes (${volumes.join(", ")}); use an image without volumes`);
  }
}
