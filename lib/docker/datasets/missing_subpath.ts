/**
 * A dataset `subpath` that does not exist in its image: the Engine accepts the create and
 * refuses the first call that mounts the container's file systems. Measured on Engine
 * 28.5.2 (API 1.51, overlay2), 2026-12-01: `PUT /containers/{id}/archive` (startup writes
 * `/workspace/work` before the start) answers `500`, `POST /containers/{id}/start` `404`,
 * both with `cannot access path <host path>/<subpath>: lstat <host path>/<subpath>: no such
 * file or directory`.
 *
 * @module
 */
import { SandboxConfigurationError } from "../../sandbox/errors.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import type { DockerSandboxDataset } from "./configuration.ts";

/**
 * Explain a failed call on the created keeper that the Engine blames on a missing image path.
 *
 * @param error what `PUT /containers/{id}/archive` or `POST /containers/{id}/start` failed with
 * @param datasets the configured datasets
 * @returns the error naming the dataset(s) and the fix, or `undefined` when `error` is not
 *   about a missing dataset subpath
 */
export function missingSubpathError(error: unknown, datasets: readonly DockerSandboxDataset[]): SandboxConfigurationError | undefined {
  const said = error instanceof DockerEngineError ? error.engineMessage ?? "" : "";
  if (!said.startsWith("cannot access path ")) return undefined;
  const withSubpath = datasets.filter((dataset) => dataset.subpath !== undefined);
  if (withSubpath.length === 0) return undefined;
  const named = withSubpath.filter((dataset) => said.includes(`/${dataset.subpath}: `));
  const blamed = (named.length > 0 ? named : withSubpath)
    .map((dataset) => `"${dataset.subpath}" of dataset "${dataset.name}" (image ${dataset.imageDigest})`).join(", ");
  return new SandboxConfigurationError(
    `Cannot start sandbox: the subpath ${blamed} does not exist in the image: set that subpath in config.datasets to a path inside the image, or leave it out to mount the image's root (the Engine said: ${said})`,
    { cause: error },
  );
}
