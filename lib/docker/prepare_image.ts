/**
 * {@linkcode prepareImage}: turn a local image into one the sandbox admits, by flattening
 * it (create a container, export its file system, import that as a new image) with only the
 * fixed guest environment and no declared volumes, entrypoint or command. Ordinary images
 * carry extra `Env` (`NODE_VERSION`, …) and volumes, which the backend refuses rather than
 * strip. Nothing is pulled.
 *
 * @module
 */
import { createContainer, exportContainer, removeContainer } from "../engine/containers.ts";
import { DockerEngine } from "../engine/client.ts";
import { DockerEngineError } from "../engine/errors.ts";
import { importImage } from "../engine/images.ts";
import { containerPathKind, statContainerPath } from "../engine/container_archive.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../sandbox/errors.ts";
import { FIXED_GUEST_ENV } from "../sandbox/process.ts";
import { asSandboxError } from "./_engine_errors.ts";

/**
 * An image reference `[host[:port]/]path[:tag]` as the Engine's reference grammar writes it
 * (distribution/reference: a host has a `.` or a port or is `localhost`; lowercase path
 * components joined by `.`, `_`, `__` or dashes; a tag of word characters, `.` and `-`, at
 * most 128).
 */
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const HOST = "(?:(?:localhost|[a-zA-Z0-9-]+(?:\\.[a-zA-Z0-9-]+)+)(?::[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+)/";
const REFERENCE = new RegExp(`^(?:${HOST})?${COMPONENT}(?:/${COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$`, "u");

/** Most symlinks followed from one guest path (the Engine's stat evaluates a chain at once; this only bounds a reply that would loop). */
const MAX_LINK_HOPS = 8;

/**
 * Whether `path` is an executable regular file in the (never started) container `id`,
 * following symlinks: `HEAD /containers/{id}/archive` reports a symlink itself, with its
 * target fully evaluated inside the container's file system as `linkTarget`.
 */
async function isGuestExecutable(engine: DockerEngine, id: string, path: string): Promise<boolean> {
  for (let hop = 0, at = path; hop <= MAX_LINK_HOPS; hop++) {
    const stat = await statContainerPath(engine, id, at, { timeoutMs: 30_000 });
    if (stat === undefined) return false;
    const kind = containerPathKind(stat.mode);
    if (kind === "file") return (stat.mode & 0o111) !== 0;
    if (kind !== "symlink" || !stat.linkTarget.startsWith("/")) return false;
    at = stat.linkTarget;
  }
  return false;
}

/**
 * Refuse a source without what every sandbox runs (docs/policy.md, "Preparing an image"):
 * `/bin/sh`, the keeper (PID 1, `keeper/spec.ts`) and the wrapper every process starts
 * through (`process/process.ts`); and `sleep` on the fixed guest `PATH`, which the keeper's
 * loop and the guest-side guards (the controller lease, the execution deadline) run. A
 * sandbox from an image without them cannot start, or its keeper would spin. Looked up with
 * the Engine's path stat of the flattening container, which is never started: nothing in the
 * image runs.
 *
 * @throws {SandboxUnsupportedError} naming what is missing and how to get it
 */
async function refuseWithoutGuestNeeds(engine: DockerEngine, id: string, action: string): Promise<void> {
  const directories = FIXED_GUEST_ENV.PATH.split(":");
  const [shell, ...sleeps] = await Promise.all([
    isGuestExecutable(engine, id, "/bin/sh"),
    ...directories.map((directory) => isGuestExecutable(engine, id, `${directory}/sleep`)),
  ]);
  const missing = [
    ...(shell ? [] : ["no executable /bin/sh (the keeper, PID 1 of every sandbox, and the wrapper every process starts through are /bin/sh scripts)"]),
    ...(sleeps.some(Boolean) ? [] : [`no executable sleep in the guest PATH ${FIXED_GUEST_ENV.PATH} (the keeper's loop and the guest-side deadline guards run it)`]),
  ];
  if (missing.length === 0) return;
  throw new SandboxUnsupportedError(
    `Cannot ${action}: it has ${missing.join(", and ")}; the sandbox needs both: prepare an image that has a POSIX shell at /bin/sh and sleep on PATH ` +
      "(busybox, alpine and debian:*-slim have both; or build FROM one of them with your files), and nothing was made",
  );
}

/**
 * Flatten the local image `source` into a new image the sandbox admits, tagged `reference`
 * when given. It first checks that `source` has what every sandbox runs (an executable
 * `/bin/sh`, `sleep` on the fixed guest `PATH`), with the Engine's path stat of the
 * flattening container. The export streams straight into the import (no temporary file); the
 * flattening container is never started and is removed however it ends.
 *
 * @param endpoint the Docker Engine, `unix:///absolute/path.sock`
 * @param source a local image (name, `name:tag` or ID); never pulled
 * @param reference `repo[:tag]` for the new image
 * @default {undefined} reference (untagged)
 * @returns the new image's ID (`sha256:` and 64 hex digits), to pass as `imageDigest`
 * @throws {SandboxConfigurationError} when `source` is not a local image of this engine
 *   (the message says how to pull or list images), or `reference` is not an image reference
 * @throws {SandboxUnsupportedError} when `source` has no executable `/bin/sh` or no `sleep`
 *   on the fixed guest `PATH`, which every sandbox runs; checked before the export, so no
 *   image is made (the flattening container is removed as always)
 * @throws {SandboxEngineError} when the Engine fails a step
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine with busybox:latest pulled
 * import { prepareImage } from "@agentcell/docker";
 *
 * const imageDigest = await prepareImage("unix:///var/run/docker.sock", "busybox:latest", "hello/busybox:1");
 * ```
 */
export async function prepareImage(endpoint: string, source: string, reference?: string): Promise<string> {
  const engine = new DockerEngine(endpoint);
  const action = `prepare an image from ${source}`;
  // Refused before any work: the Engine would refuse it only after the export and import.
  if (reference !== undefined && !REFERENCE.test(reference)) {
    throw new SandboxConfigurationError(
      `Cannot ${action}: reference ${JSON.stringify(reference).slice(0, 200)} is not an image reference; give repo[:tag] with a lowercase repo, e.g. agentcell/guest:1`,
    );
  }
  let id: string;
  try {
    ({ id } = await createContainer(engine, `agentcell-prepare-${crypto.randomUUID()}`, {
      Image: source,
      Entrypoint: ["/bin/true"],
      Cmd: [],
      NetworkDisabled: true,
    }));
  } catch (error) {
    if (error instanceof DockerEngineError && error.code === "not_found") {
      throw new SandboxConfigurationError(
        `Cannot ${action}: it is not a local image of this engine (${error.engineMessage ?? "not found"}); ` +
          `pull or load it first (docker -H ${endpoint} pull ${source}), or list local images with docker -H ${endpoint} image ls`,
        { cause: error },
      );
    }
    throw asSandboxError(error, action);
  }
  try {
    await refuseWithoutGuestNeeds(engine, id, action);
    const at = reference?.lastIndexOf(":") ?? -1;
    const tagged = reference !== undefined && at > 0 && !reference.slice(at + 1).includes("/");
    return await importImage(engine, await exportContainer(engine, id), {
      ...(reference === undefined ? {} : { repo: tagged ? reference.slice(0, at) : reference }),
      ...(tagged ? { tag: reference.slice(at + 1) } : {}),
      changes: Object.entries(FIXED_GUEST_ENV).map(([name, value]) => `ENV ${name}=${value}`),
    });
  } catch (error) {
    throw asSandboxError(error, action);
  } finally {
    await removeContainer(engine, id).catch(() => {});
  }
}
