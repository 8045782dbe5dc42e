/**
 * Dataset admission, before any resource is created: the Engine must speak API 1.48 (image
 * mounts) when the list is non-empty, and every dataset image must exist locally under its
 * exact ID. Nothing else of the image is checked: a dataset is data, so it need not match
 * the workload's architecture or fixed environment, and its declared volumes, entrypoint
 * and environment are never used. An empty list adds no requirement.
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { ENGINE_28_API_VERSION, requireApiVersion } from "../admission/api_floor.ts";
import { imageIdDefect, LIST_IMAGES } from "../admission/image.ts";
import type { ImageInspect } from "../../engine/images.ts";
import type { EngineVersion } from "../../engine/system.ts";
import type { DockerSandboxDataset } from "./configuration.ts";

/** Lowest daemon API version that mounts images (`Type: "image"`, Docker Engine 28 / API 1.48). */
export const IMAGE_MOUNT_API_VERSION: string = ENGINE_28_API_VERSION;

/**
 * Refuse datasets on a daemon below {@linkcode IMAGE_MOUNT_API_VERSION}.
 *
 * @param datasets the configured datasets
 * @param version the daemon's `GET /version`
 * @throws {SandboxUnsupportedError} naming both API versions and the feature, when the list
 *   is non-empty and the daemon's `ApiVersion` is below 1.48
 */
export function admitDatasetEngine(datasets: readonly DockerSandboxDataset[], version: EngineVersion): void {
  if (datasets.length === 0) return;
  requireApiVersion({
    apiVersion: IMAGE_MOUNT_API_VERSION,
    engine: "Engine 28",
    action: "attach datasets",
    feature: "image mounts need",
    otherwise: "leave config.datasets empty",
  }, version);
}


/**
 * Check that every dataset image exists locally under its exact ID.
 *
 * @param datasets the configured datasets
 * @param images each dataset's `GET /images/{id}/json` (same order), `undefined` when absent
 * @throws {SandboxUnsupportedError} for the first dataset whose image is absent or resolves
 *   to another ID (the message names the dataset and its image)
 */
export function admitDatasetImages(datasets: readonly DockerSandboxDataset[], images: readonly (ImageInspect | undefined)[]): void {
  datasets.forEach((dataset, index) => {
    const image = images[index];
    const fail = (reason: string): never => {
      throw new SandboxUnsupportedError(`Cannot attach dataset "${dataset.name}": image ${dataset.imageDigest} ${reason}`);
    };
    if (!image) {
      fail(`is not a local image (the backend never pulls or builds): set its imageDigest in config.datasets to the ID of a local image (${LIST_IMAGES})`);
    } else {
      const defect = imageIdDefect(image, dataset.imageDigest);
      if (defect) fail(defect);
    }
  });
}
