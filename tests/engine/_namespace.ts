// What a namespace has on the engine: its containers and volumes found by the namespace
// label, for tests that run whole programs (the README's, the CLI, the MCP server) and
// check they leave nothing behind.
import assert from "node:assert/strict";
import { LABELS } from "../../lib/docker/names.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { eventually } from "./_engine.ts";

/** The IDs of containers and names of volumes of `namespace` on the engine. */
export async function resourcesOf(engine: DockerEngine, namespace: string): Promise<string[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABELS.namespace}=${namespace}`] }));
  const containers = await (await engine.fetch(`/containers/json?all=true&filters=${filters}`)).json() as { Id: string }[];
  const volumes = await (await engine.fetch(`/volumes?filters=${filters}`)).json() as { Volumes: { Name: string }[] | null };
  return [...containers.map((c) => c.Id), ...(volumes.Volumes ?? []).map((v) => v.Name)];
}

/** Wait until nothing of `namespace` is left on the engine. */
export async function assertNamespaceEmpty(engine: DockerEngine, namespace: string): Promise<void> {
  const left = await eventually(`no resources of ${namespace}`, async () => {
    const names = await resourcesOf(engine, namespace);
    return names.length === 0 ? names : undefined;
  }).catch(async () => await resourcesOf(engine, namespace));
  assert.deepEqual(left, [], `resources of ${namespace} are left`);
}
