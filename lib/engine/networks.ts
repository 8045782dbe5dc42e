/**
 * Engine network endpoints (Docker Engine API v1.44–v1.52, "Network" group): a private
 * bridge per sandbox for `outbound` access.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";

/** Schema of `GET /networks/{id}` (fields this project reads). */
export const networkSchema = z.looseObject({
  Id: z.string().regex(/^[0-9a-f]{64}$/u),
  Name: z.string(),
  Driver: z.string(),
  Internal: z.boolean(),
  Attachable: z.boolean(),
  Labels: z.record(z.string(), z.string()).nullable(),
});

/** A validated network. */
export type Network = z.infer<typeof networkSchema>;

/**
 * `POST /networks/create`: a bridge network, not internal, not attachable.
 *
 * @returns the network ID
 * @throws {DockerEngineError} `conflict` when the name is taken
 */
export async function createNetwork(
  engine: DockerEngine,
  name: string,
  labels: Readonly<Record<string, string>>,
  options: EngineCallOptions = {},
): Promise<string> {
  const reply = await engine.request("POST", "/networks/create", {
    action: "create network",
    json: { Name: name, Driver: "bridge", Internal: false, Attachable: false, EnableIPv6: false, Labels: labels },
    expect: [201],
    schema: z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u) }),
    ...options,
  });
  return reply.value.Id;
}

/** `GET /networks/{idOrName}`; `undefined` when it does not exist. */
export async function inspectNetwork(engine: DockerEngine, idOrName: string, options: EngineCallOptions = {}): Promise<Network | undefined> {
  const reply = await engine.request("GET", `/networks/${encodeURIComponent(idOrName)}`, {
    action: "inspect network",
    expect: [200, 404],
    schema: networkSchema.optional(),
    ...options,
  });
  return reply.status === 404 ? undefined : reply.value;
}

/** `DELETE /networks/{id}`; a `404` counts as done. @returns `true` when this call removed it */
export async function removeNetwork(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<boolean> {
  const reply = await engine.request("DELETE", `/networks/${encodeURIComponent(id)}`, {
    action: "remove network",
    expect: [204, 404],
    ...options,
  });
  return reply.status === 204;
}
