/**
 * Engine network endpoints (Docker Engine API v1.44–v1.52, "Network" group): a private
 * bridge per sandbox for `outbound` access; for an egress allowlist an internal bridge with
 * an isolated gateway and the proxy's own bridge.
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
  Options: z.record(z.string(), z.string()).nullable().optional(),
  IPAM: z.looseObject({
    Config: z.array(z.looseObject({ Subnet: z.string().optional(), Gateway: z.string().optional() })).nullable().optional(),
  }).optional(),
});

/**
 * The bridge driver option that sets how the network's IPv4 gateway works
 * (`com.docker.network.bridge.gateway_mode_ipv4`, Engine 28.0 / API 1.48). Its value
 * `isolated` (internal networks only) gives the bridge no address on the host, so a
 * container on it has no gateway and cannot reach the host's listeners. Measured on Engine
 * 28.5: a container on a plain `Internal: true` bridge connected to a host listener on
 * `0.0.0.0` through the bridge's own address; with `isolated` it got `ENETUNREACH`.
 */
export const GATEWAY_MODE_OPTION = "com.docker.network.bridge.gateway_mode_ipv4";

/** Whether a network reads back internal with an isolated gateway (no host address). */
export function isolatedGateway(network: Network): boolean {
  return network.Internal && network.Options?.[GATEWAY_MODE_OPTION] === "isolated" &&
    (network.IPAM?.Config ?? []).every((config) => !config.Gateway);
}

/** A validated network. */
export type Network = z.infer<typeof networkSchema>;

/**
 * `POST /networks/create`: a bridge network, not attachable, no IPv6; not internal, or with
 * `options.internal` internal with an isolated gateway ({@linkcode GATEWAY_MODE_OPTION}).
 *
 * @returns the network ID
 * @throws {DockerEngineError} `conflict` when the name is taken
 */
export async function createNetwork(
  engine: DockerEngine,
  name: string,
  labels: Readonly<Record<string, string>>,
  options: EngineCallOptions & { readonly internal?: boolean } = {},
): Promise<string> {
  const { internal = false, ...call } = options;
  const reply = await engine.request("POST", "/networks/create", {
    action: "create network",
    json: {
      Name: name,
      Driver: "bridge",
      Internal: internal,
      Attachable: false,
      EnableIPv6: false,
      Labels: labels,
      ...(internal ? { Options: { [GATEWAY_MODE_OPTION]: "isolated" } } : {}),
    },
    expect: [201],
    schema: z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u) }),
    ...call,
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
