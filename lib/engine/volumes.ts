/**
 * Engine volume endpoints (Docker Engine API v1.44–v1.52, "Volume" group).
 *
 * Fact: creating a volume whose name exists answers `201` with the *existing* volume, so
 * a create alone never proves ownership; callers compare labels and check for the name
 * before creating.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";

/** Schema of a volume (`GET /volumes/{name}`, `POST /volumes/create`). */
export const volumeSchema = z.looseObject({
  Name: z.string(),
  Driver: z.string(),
  Labels: z.record(z.string(), z.string()).nullable(),
  CreatedAt: z.string().optional(),
  Mountpoint: z.string().optional(),
});

/** A validated volume. */
export type Volume = z.infer<typeof volumeSchema>;

/** `POST /volumes/create` with the local driver. */
export async function createVolume(
  engine: DockerEngine,
  name: string,
  labels: Readonly<Record<string, string>>,
  options: EngineCallOptions = {},
): Promise<Volume> {
  const reply = await engine.request("POST", "/volumes/create", {
    action: "create volume",
    json: { Name: name, Driver: "local", Labels: labels },
    expect: [201],
    schema: volumeSchema,
    ...options,
  });
  return reply.value;
}

/** `GET /volumes/{name}`; `undefined` when it does not exist. */
export async function inspectVolume(engine: DockerEngine, name: string, options: EngineCallOptions = {}): Promise<Volume | undefined> {
  const reply = await engine.request("GET", `/volumes/${encodeURIComponent(name)}`, {
    action: "inspect volume",
    expect: [200, 404],
    schema: volumeSchema.optional(),
    ...options,
  });
  return reply.status === 404 ? undefined : reply.value;
}

/**
 * `DELETE /volumes/{name}`; a `404` counts as done.
 *
 * @returns `true` when this call removed it
 * @throws {DockerEngineError} `conflict` while a container still uses it
 */
export async function removeVolume(engine: DockerEngine, name: string, options: EngineCallOptions = {}): Promise<boolean> {
  const reply = await engine.request("DELETE", `/volumes/${encodeURIComponent(name)}`, {
    action: "remove volume",
    expect: [204, 404],
    ...options,
  });
  return reply.status === 204;
}
