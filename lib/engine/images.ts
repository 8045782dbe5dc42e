/**
 * Engine image inspection (Docker Engine API v1.44–v1.52, "Image" group). The library
 * never pulls, builds or removes images.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";

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
