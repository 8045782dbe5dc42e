// The leftover sweep of the benchmarks: containers, volumes and networks carrying one of the
// given labels, listed and removed (force), so a benchmark that failed half-way leaves
// nothing behind and the count it prints is the count of what it leaked.
import { z } from "zod";
import type { DockerEngine } from "../lib/engine/client.ts";

const idList = z.array(z.object({ Id: z.string() }));

/**
 * Lists and removes (containers first, with their anonymous volumes; then volumes; then
 * networks) everything on the Engine carrying one of `labels` (`key` or `key=value`, as the
 * Engine's `label` filter takes them); resolves with what was found, e.g. `container
 * 0123456789ab`, `volume name`, `network 0123456789ab`.
 */
export async function sweep(engine: DockerEngine, labels: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const label of labels) {
    const filters = JSON.stringify({ label: [label] });
    const containers = await engine.request("GET", "/containers/json", { query: { all: true, filters }, schema: idList });
    for (const { Id } of containers.value) {
      found.push(`container ${Id.slice(0, 12)}`);
      await engine.request("DELETE", `/containers/${Id}`, { query: { force: true, v: true }, expect: [204, 404] });
    }
    const volumes = await engine.request("GET", "/volumes", {
      query: { filters },
      schema: z.object({ Volumes: z.array(z.object({ Name: z.string() })).nullable() }),
    });
    for (const { Name } of volumes.value.Volumes ?? []) {
      found.push(`volume ${Name}`);
      await engine.request("DELETE", `/volumes/${Name}`, { expect: [204, 404] });
    }
    const networks = await engine.request("GET", "/networks", { query: { filters }, schema: idList });
    for (const { Id } of networks.value) {
      found.push(`network ${Id.slice(0, 12)}`);
      await engine.request("DELETE", `/networks/${Id}`, { expect: [204, 404] });
    }
  }
  return found;
}
