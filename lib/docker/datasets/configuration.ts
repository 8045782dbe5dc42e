/**
 * The `datasets` field of the backend configuration: read-only image attachments, validated
 * at construction (no I/O), sorted by name and frozen.
 *
 * Bounds (seed "Shared read-only datasets"): at most {@linkcode MAX_DATASETS} entries;
 * names `^[a-z][a-z0-9-]{0,62}$`, unique; exact `sha256:` image IDs; an optional `subpath`
 * that is a canonical relative path (the workspace path rules) of at most
 * {@linkcode MAX_DATASET_SUBPATH_LENGTH} characters. Ours in addition: every entry names a
 * different image, because Engine 28.5 (overlay2) refuses a second mount of one image in one
 * container with `500 mount already exists with name` (measured 2026-12-01).
 *
 * @module
 */
import { z } from "zod";
import { pathDefect } from "../../internal/path_defects.ts";
import { expect, parseConfiguration } from "../../internal/zod_issues.ts";
import { SandboxConfigurationError } from "../../sandbox/errors.ts";

/** Most datasets one backend attaches (seed: a finite bound on the mount configuration). */
export const MAX_DATASETS = 32;

/** Longest `subpath`, in UTF-16 code units (characters of a JavaScript string). */
export const MAX_DATASET_SUBPATH_LENGTH = 1024;

/** Guest directory under which each dataset is mounted at `/datasets/<name>`. */
export const DATASETS_PATH = "/datasets";

/**
 * One read-only dataset: a local image mounted at `/datasets/<name>` in the keeper (never in
 * the export accessor). The image is borrowed: never pulled, built or deleted.
 */
export interface DockerSandboxDataset {
  /**
   * Guest directory name under `/datasets`: 1–63 characters of `a-z`, `0-9` and `-`,
   * starting with a letter; unique within the backend.
   */
  readonly name: string;
  /**
   * Exact local image ID: `sha256:` and 64 lowercase hex digits. Any architecture and
   * image environment is accepted (the image is data, not the workload); each dataset
   * names a different image.
   */
  readonly imageDigest: string;
  /**
   * Directory (or file) inside the image to mount instead of its root (`ImageOptions.Subpath`,
   * Engine API 1.48): a canonical relative path (no leading `/`, no `.`, `..` or empty
   * segments), at most 1,024 characters. Docker resolves symbolic links in it within the
   * image; one that does not exist there fails `start()`.
   *
   * @default undefined (the image's root)
   */
  readonly subpath?: string;
}

const entrySchema = z.strictObject({
  name: z.string({ error: expect("must be a string") }).regex(/^[a-z][a-z0-9-]{0,62}$/u, {
    error: "must be 1-63 characters of a-z, 0-9 and '-', starting with a letter (it becomes /datasets/<name>)",
  }),
  imageDigest: z.string({ error: expect("must be a string") }).regex(/^sha256:[0-9a-f]{64}$/u, {
    error:
      "must be sha256: followed by 64 lowercase hexadecimal digits, the exact ID of a local image (names and tags are not accepted; list IDs with docker image ls --no-trunc)",
  }),
  subpath: z.string({ error: expect("must be a string") }).max(MAX_DATASET_SUBPATH_LENGTH, {
    error: `must be at most ${MAX_DATASET_SUBPATH_LENGTH} characters`,
  }).optional(),
});

const listSchema = z.array(z.unknown(), { error: expect("must be an array of { name, imageDigest, subpath? }") }).max(MAX_DATASETS, {
  error: (issue) =>
    `must have at most ${MAX_DATASETS} entries, it has ${(issue.input as unknown[]).length}: attach fewer images (one image can hold many directories)`,
});

/**
 * Validate and normalise the `datasets` of a backend configuration. Inert: no I/O.
 *
 * @param input the caller's `config.datasets` (`undefined` means none)
 * @param action the "<action>" of error messages ("create Docker sandbox backend")
 * @returns the entries sorted by name, each and the list frozen (empty when `input` is
 *   `undefined`)
 * @throws {SandboxConfigurationError} naming `config.datasets[<index>].<field>` (the index
 *   as given) for a bad entry, a repeated name or image, or more than 32 entries
 */
export function normalizeDatasets(input: unknown, action: string): readonly DockerSandboxDataset[] {
  if (input === undefined) return Object.freeze([]);
  const list = parseConfiguration(listSchema, input, action, "config.datasets");
  const entries = list.map((entry, index) => {
    const field = `config.datasets[${index}]`;
    const parsed = parseConfiguration(entrySchema, entry, action, field);
    if (parsed.subpath !== undefined) {
      const defect = pathDefect(parsed.subpath, false);
      if (defect) {
        throw new SandboxConfigurationError(
          `Cannot ${action}: ${field}.subpath ${defect}: give a canonical path relative to the image root, such as "corpus/docs"`,
        );
      }
    }
    return parsed;
  });
  entries.forEach((entry, index) => {
    const first = entries.findIndex((other) => other.name === entry.name);
    if (first !== index) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: config.datasets[${index}].name "${entry.name}" repeats config.datasets[${first}].name: give each dataset its own name`,
      );
    }
    const sameImage = entries.findIndex((other) => other.imageDigest === entry.imageDigest);
    if (sameImage !== index) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: config.datasets[${index}].imageDigest repeats the image of config.datasets[${sameImage}] ("${
          entries[sameImage].name
        }"): the Engine mounts an image at most once per container, so attach it once (without subpath, every directory of it is under /datasets/<name>)`,
      );
    }
  });
  const sorted = entries.map((entry) =>
    Object.freeze({
      name: entry.name,
      imageDigest: entry.imageDigest,
      ...(entry.subpath === undefined ? {} : { subpath: entry.subpath }),
    })
  ).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return Object.freeze(sorted);
}
