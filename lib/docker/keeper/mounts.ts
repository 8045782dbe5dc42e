/**
 * The mount list of a workload container and the one readback routine that checks it, for
 * both roles: the keeper mounts the sandbox's volume writable at `/workspace` and every
 * dataset read-only at `/datasets/<name>`; the export accessor mounts only the volume,
 * read-only, and never a dataset.
 *
 * Readback measured on Engine 28.5.2 (API 1.51, overlay2), 2026-12-01:
 * - `HostConfig.Mounts` echoes each mount as sent, except that `ReadOnly: false` is left
 *   out: `{Type:"volume", Source, Target, VolumeOptions:{NoCopy:true}}` and
 *   `{Type:"image", Source, Target, ReadOnly:true, ImageOptions:{Subpath}}` (no
 *   `ImageOptions` without a subpath).
 * - `Mounts[]` has, for the volume, `Type:"volume"`, `Name` the volume, `Driver:"local"`,
 *   `RW`; for an image, `Type:"image"`, `Name` the image ID as given, `Source` an absolute
 *   host path, `Destination`, `RW:false`, `Propagation:"rprivate"` and no `Driver`. Both are
 *   present already before the container starts.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { ContainerInspect } from "../../engine/containers.ts";
import { DATASETS_PATH, type DockerSandboxDataset } from "../datasets/configuration.ts";
import { WORKSPACE_PATH } from "../guest_paths.ts";


/** The workspace volume as sent in `HostConfig.Mounts` (no copy of image content into it). */
export interface VolumeMount {
  /** Mount type. */
  readonly Type: "volume";
  /** Exact volume name. */
  readonly Source: string;
  /** Guest path: `/workspace`. */
  readonly Target: string;
  /** `true` in the export accessor, `false` in the keeper. */
  readonly ReadOnly: boolean;
  /** `NoCopy`: the image's `/workspace` content is never copied into the volume. */
  readonly VolumeOptions: { readonly NoCopy: true };
}

/** A dataset as sent in `HostConfig.Mounts` (Engine API 1.48: `Type: "image"`). */
export interface ImageMount {
  /** Mount type. */
  readonly Type: "image";
  /** Exact image ID. */
  readonly Source: string;
  /** Guest path: `/datasets/<name>`. */
  readonly Target: string;
  /** Always read-only. */
  readonly ReadOnly: true;
  /** The directory inside the image, when the dataset has a `subpath`. */
  readonly ImageOptions?: { readonly Subpath: string };
}

/** One mount of a workload container. */
export type WorkloadMount = VolumeMount | ImageMount;

/**
 * The workspace volume mount.
 *
 * @param volumeName exact volume name
 * @param readOnly `true` for the export accessor
 */
export function workspaceMount(volumeName: string, readOnly: boolean): VolumeMount {
  return Object.freeze({ Type: "volume", Source: volumeName, Target: WORKSPACE_PATH, ReadOnly: readOnly, VolumeOptions: Object.freeze({ NoCopy: true }) });
}

/** The image mount of one dataset, at `/datasets/<name>`. */
export function datasetMount(dataset: DockerSandboxDataset): ImageMount {
  return Object.freeze({
    Type: "image",
    Source: dataset.imageDigest,
    Target: `${DATASETS_PATH}/${dataset.name}`,
    ReadOnly: true,
    ...(dataset.subpath === undefined ? {} : { ImageOptions: Object.freeze({ Subpath: dataset.subpath }) }),
  });
}

/**
 * The keeper's mounts: the volume writable, then every dataset read-only (in `datasets`
 * order, which the configuration sorted by name).
 */
export function keeperMounts(volumeName: string, datasets: readonly DockerSandboxDataset[]): readonly WorkloadMount[] {
  return Object.freeze([workspaceMount(volumeName, false), ...datasets.map(datasetMount)]);
}

/**
 * The export accessor's mounts, derived from the keeper's: only the workspace volume,
 * read-only. Datasets are never mounted in it.
 *
 * @param keeper the keeper's mounts
 * @throws {TypeError} when `keeper` has no workspace volume (a programming error)
 */
export function accessorMounts(keeper: readonly WorkloadMount[]): readonly WorkloadMount[] {
  const workspace = keeper.find((mount) => mount.Type === "volume" && mount.Target === WORKSPACE_PATH);
  if (!workspace) throw new TypeError("Cannot derive the accessor's mounts: the keeper's mounts have no workspace volume");
  return Object.freeze([workspaceMount(workspace.Source, true)]);
}

/** The number of image mounts (datasets) in `mounts`. */
export function imageMountCount(mounts: readonly WorkloadMount[]): number {
  return mounts.filter((mount) => mount.Type === "image").length;
}

function describe(value: unknown): string {
  return JSON.stringify(value);
}

/** What the Engine reports in `Mounts[]` for one requested mount, or why it does not. */
function effectiveMismatch(effective: Record<string, unknown>, expected: WorkloadMount): string | undefined {
  const rw = expected.ReadOnly === false;
  const common = effective.Type === expected.Type && effective.Name === expected.Source && effective.RW === rw;
  const ok = expected.Type === "volume"
    ? common && effective.Driver === "local"
    : common && typeof effective.Source === "string" && effective.Source.startsWith("/") &&
      effective.Propagation === "rprivate" && (effective.Driver === undefined || effective.Driver === "");
  if (ok) return undefined;
  const { Type, Name, RW, Driver, Propagation } = effective;
  return `the effective mount at ${expected.Target} is ${describe({ Type, Name, RW, Driver, Propagation })}`;
}

/**
 * Compare a container's readback with its mount list: `HostConfig.Mounts` must hold exactly
 * the requested mounts (no other field, `ReadOnly: false` may be left out), and `Mounts[]`
 * exactly one effective mount per requested one (see the module doc for what each must
 * show). An extra or missing mount in either list is a mismatch.
 *
 * @param inspect the container's `GET /containers/{id}/json`
 * @param expected the mounts it was created with
 * @returns one sentence per mismatch (empty when everything matches)
 */
export function mountMismatches(inspect: ContainerInspect, expected: readonly WorkloadMount[]): string[] {
  const problems: string[] = [];
  const targets = new Set(expected.map((mount) => mount.Target));
  const requested = (inspect.HostConfig.Mounts ?? []) as readonly Record<string, unknown>[];
  const effective = inspect.Mounts as readonly Record<string, unknown>[];
  for (const mount of requested) {
    if (!targets.has(mount.Target as string)) problems.push(`an unexpected mount is requested at ${describe(mount.Target)} (${describe(mount.Type)})`);
  }
  for (const mount of effective) {
    if (!targets.has(mount.Destination as string)) problems.push(`an unexpected mount is effective at ${describe(mount.Destination)} (${describe(mount.Type)})`);
  }
  for (const mount of expected) {
    const asked = requested.filter((entry) => entry.Target === mount.Target);
    if (asked.length !== 1) {
      problems.push(asked.length === 0 ? `the mount at ${mount.Target} is missing` : `${asked.length} mounts are requested at ${mount.Target}`);
    } else if (!isDeepStrictEqual({ ReadOnly: false, ...asked[0] }, mount)) {
      problems.push(`the mount at ${mount.Target} is requested as ${describe(asked[0])}`);
    }
    const seen = effective.filter((entry) => entry.Destination === mount.Target);
    if (seen.length !== 1) {
      problems.push(seen.length === 0 ? `no mount is effective at ${mount.Target}` : `${seen.length} mounts are effective at ${mount.Target}`);
    } else {
      const mismatch = effectiveMismatch(seen[0], mount);
      if (mismatch) problems.push(mismatch);
    }
  }
  return problems;
}
