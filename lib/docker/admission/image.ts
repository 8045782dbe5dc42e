/**
 * Image admission: the exact local image exists, matches the profile's architecture,
 * declares no volumes and carries no environment beyond the fixed guest values.
 *
 * @module
 */
import { FIXED_GUEST_ENV } from "../../sandbox/process.ts";
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { ImageInspect } from "../../engine/images.ts";
import type { DockerSandboxProfileRow } from "../profiles.ts";

/** How to list local image IDs, for messages. */
/** How to list local image IDs, for messages. */
export const LIST_IMAGES = "list them with: docker image ls --no-trunc --format '{{.ID}} {{.Repository}}:{{.Tag}}'";
/** Where an admissible image comes from, for messages. */
const PREPARE = "or make one from a local image with agentcell prepare-image SOURCE TAG (prepareImage() in @agentcell/docker)";
/** The fix for extra image metadata, for messages. */
const FLATTEN = "flatten the image with agentcell prepare-image SOURCE TAG (prepareImage() in @agentcell/docker; it keeps only the fixed Env and no volumes)";

/**
 * Admit an inspected image for a profile.
 *
 * @param imageDigest the configured `sha256:` image ID
 * @param image the image's `GET /images/{id}/json`, or `undefined` when absent
 * @param profile the selected profile row
 * @throws {SandboxUnsupportedError} when the image is absent, its ID differs, its OS or
 *   architecture does not match, it declares volumes, or its Env has any entry other than
 *   the fixed `HOME`, `TMPDIR` and `PATH` values (the message names the variable)
 */
export function admitImage(imageDigest: string, image: ImageInspect | undefined, profile: DockerSandboxProfileRow): void {
  const fail = (reason: string): never => {
    throw new SandboxUnsupportedError(`Cannot admit image ${imageDigest}: ${reason}`);
  };
  if (!image) {
    return fail(
      `no such local image (the backend never pulls or builds): set config.imageDigest to the ID of a local image (${LIST_IMAGES}) ${PREPARE}`,
    );
  }
  const defect = imageIdDefect(image, imageDigest);
  if (defect) fail(defect);
  if (image.Os !== "linux") fail(`it is a ${image.Os} image, not linux`);
  if (image.Architecture !== profile.image.architecture) {
    fail(`its architecture is ${image.Architecture}, profile ${profile.name} needs ${profile.image.architecture}`);
  }
  const volumes = Object.keys(image.Config?.Volumes ?? {});
  if (volumes.length > 0) fail(`it declares volumes (${volumes.join(", ")}): ${FLATTEN}`);
  for (const entry of image.Config?.Env ?? []) {
    const at = entry.indexOf("=");
    const name = at < 0 ? entry : entry.slice(0, at);
    const value = at < 0 ? undefined : entry.slice(at + 1);
    if (!Object.hasOwn(FIXED_GUEST_ENV, name)) {
      fail(`its environment declares ${name}; only HOME, TMPDIR and PATH with the fixed values are admitted: ${FLATTEN}`);
    }
    if (value !== FIXED_GUEST_ENV[name as keyof typeof FIXED_GUEST_ENV]) {
      fail(`its environment sets ${name}=${value ?? ""}, the fixed value is ${FIXED_GUEST_ENV[name as keyof typeof FIXED_GUEST_ENV]}: ${FLATTEN}`);
    }
  }
}

/**
 * Why an inspected local image is not exactly `imageDigest` (the Engine resolved a prefix or
 * a tag to another image), or `undefined` when it is.
 *
 * @param image the image's `GET /images/{id}/json`
 * @param imageDigest the configured exact ID
 * @returns `"resolves to <id>: give the exact image ID"` or `undefined`
 */
export function imageIdDefect(image: ImageInspect, imageDigest: string): string | undefined {
  return image.Id === imageDigest ? undefined : `resolves to ${image.Id}: give the exact image ID`;
}
