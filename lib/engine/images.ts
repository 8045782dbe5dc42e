/**
 * Engine image inspection (Docker Engine API v1.44–v1.52, "Image" group). The library
 * never pulls, builds or removes images.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";
import { DockerEngineError } from "./errors.ts";

/** Schema of `GET /images/{id}/json` (fields this project reads for admission). */
export const imageInspectSchema = z.looseObject({
  Id: z.string(),
  Architecture: z.string(),
  Os: z.string(),
  Variant: z.string().optional(),
  Config: z.looseObject({
    Env: z.array(z.string()).nullable().optional(),
    Volumes: z.record(z.string(), z.unknown()).nullable().optional(),
    Entrypoint: z.array(z.string()).nullable().optional(),
  }).nullable().optional(),
});

/** A validated image inspection. */
export type ImageInspect = z.infer<typeof imageInspectSchema>;

/** `GET /images/{id}/json`; `undefined` when no such image exists locally. */
export async function inspectImage(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<ImageInspect | undefined> {
  const reply = await engine.request("GET", `/images/${encodeURIComponent(id)}/json`, {
    action: "inspect image",
    expect: [200, 404],
    schema: imageInspectSchema.optional(),
    ...options,
  });
  return reply.status === 404 ? undefined : reply.value;
}

/** Largest progress answer of an image import read, in bytes: 1 MiB (an import answers a few lines). */
const MAX_IMPORT_PROGRESS_BYTES = 1024 * 1024;

/** What {@linkcode importImage} makes of the imported file system. */
export interface ImportImageOptions extends EngineCallOptions {
  /** Repository of the new image's tag (`repo` of `repo:tag`). @default undefined (untagged) */
  readonly repo?: string;
  /** Tag within `repo`. @default undefined ("latest" when `repo` is given) */
  readonly tag?: string;
  /** Dockerfile instructions applied to the image (`ENV NAME=value`, …). @default [] */
  readonly changes?: readonly string[];
}

/**
 * `POST /images/create?fromSrc=-` with a tar stream as the body: import a root file system
 * as a new image (Docker Engine API "Image" group, `ImageCreate` from a source). The body is
 * streamed (no temporary file); the progress answer is read up to 1 MiB.
 *
 * @param body the root file system as a tar stream (e.g. from `exportContainer` of `./containers.ts`)
 * @returns the new image ID, `sha256:` and 64 hex digits
 * @throws {DockerEngineError} by status, or `invalid_body` when the progress names no image ID
 */
export async function importImage(engine: DockerEngine, body: ReadableStream<Uint8Array>, options: ImportImageOptions = {}): Promise<string> {
  const query = new URLSearchParams({ fromSrc: "-" });
  if (options.repo !== undefined) query.set("repo", options.repo);
  if (options.tag !== undefined) query.set("tag", options.tag);
  for (const change of options.changes ?? []) query.append("changes", change);
  const response = await engine.stream("POST", `/images/create?${query}`, {
    body,
    contentType: "application/x-tar",
    maxBodyBytes: MAX_IMPORT_PROGRESS_BYTES,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  if (response.status !== 200) throw await engine.failure(response, "import image");
  const progress = await new Response(response.body).text();
  const id = /"status":"(sha256:[0-9a-f]{64})"/u.exec(progress)?.[1];
  if (id === undefined) {
    throw new DockerEngineError("invalid_body", `Cannot import image: the Engine's answer names no image ID (${progress.slice(0, 500)})`, { status: 200 });
  }
  return id;
}
