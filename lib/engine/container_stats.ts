/**
 * `GET /containers/{id}/stats` one-shot (Docker Engine API v1.44–v1.52, "Container" group:
 * "Get container stats based on resource usage"), validated.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";

const count = z.number().int().nonnegative();

const cpuStatsSchema = z.looseObject({
  cpu_usage: z.looseObject({ total_usage: count }),
  system_cpu_usage: count.optional(),
  online_cpus: count.optional(),
});

const ioEntrySchema = z.looseObject({ op: z.string(), value: count });

/** Schema of the `GET /containers/{id}/stats?stream=false` reply (fields this project reads; cgroup v1 and v2). */
export const containerStatsSchema = z.looseObject({
  read: z.string(),
  cpu_stats: cpuStatsSchema,
  precpu_stats: cpuStatsSchema.partial().extend({ cpu_usage: z.looseObject({ total_usage: count }).optional() }),
  memory_stats: z.looseObject({
    usage: count.optional(),
    limit: count.optional(),
    stats: z.record(z.string(), z.number()).optional(),
  }),
  pids_stats: z.looseObject({ current: count.optional(), limit: count.optional() }).optional(),
  networks: z.record(z.string(), z.looseObject({ rx_bytes: count, tx_bytes: count })).optional(),
  blkio_stats: z.looseObject({ io_service_bytes_recursive: z.array(ioEntrySchema).nullable().optional() }).optional(),
});

/** The validated one-shot stats reply. */
export type ContainerStats = z.infer<typeof containerStatsSchema>;

/**
 * `GET /containers/{id}/stats?stream=false`: one sample, with `precpu_stats` from the
 * Engine's previous read about a second earlier (so the call takes about a second).
 *
 * @throws {DockerEngineError} `not_found` when the container is gone
 */
export async function containerStats(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<ContainerStats> {
  const reply = await engine.request("GET", `/containers/${encodeURIComponent(id)}/stats?stream=false`, {
    action: "read container stats",
    schema: containerStatsSchema,
    ...options,
  });
  return reply.value;
}
