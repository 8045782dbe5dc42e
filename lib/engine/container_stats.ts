/**
 * `GET /containers/{id}/stats` one-shot (Docker Engine API v1.44–v1.52, "Container" group:
 * "Get container stats based on resource usage"), validated.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";
import { DockerEngineError } from "./errors.ts";
import { jsonLines } from "./_json_lines.ts";

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
 * Engine's previous read about a second earlier (so the call takes about a second). With
 * `options.oneShot` (`one-shot=true`, API v1.41+) the Engine answers at once and
 * `precpu_stats` is empty: for a caller that reads counts, not CPU rates.
 *
 * @throws {DockerEngineError} `not_found` when the container is gone
 */
export async function containerStats(
  engine: DockerEngine,
  id: string,
  options: EngineCallOptions & { readonly oneShot?: boolean } = {},
): Promise<ContainerStats> {
  const { oneShot, ...call } = options;
  const reply = await engine.request("GET", `/containers/${encodeURIComponent(id)}/stats?stream=false${oneShot ? "&one-shot=true" : ""}`, {
    action: "read container stats",
    schema: containerStatsSchema,
    ...call,
  });
  return reply.value;
}

/**
 * Longest line of the stats stream accepted, bytes: a sample is about 2 KiB (more with many
 * networks); a longer line errors the stream (`invalid_body`) instead of growing a buffer.
 */
export const MAX_STATS_LINE_BYTES = 64 * 1024;

/**
 * `GET /containers/{id}/stats?stream=true`: the Engine's samples (about one a second,
 * newline-delimited JSON) on one connection, each validated, read as the returned stream is
 * read (no read-ahead beyond the socket's own buffer and one line). Cancelling the stream,
 * or aborting `options.signal`, closes the connection; the stream closes when the Engine
 * ends the reply (the container was removed, or the Engine stopped).
 *
 * @param options `connectTimeoutMs`/`headerTimeoutMs` bound the opening; `signal` aborts it
 *   and the reading.
 * @returns The validated samples.
 * @throws {DockerEngineError} `not_found` when the container is gone, `invalid_body` (on the
 *   stream) for a line that fails the schema or is longer than {@linkcode MAX_STATS_LINE_BYTES}
 * @throws {DockerEngineTransportError} on transport faults
 */
export async function streamContainerStats(
  engine: DockerEngine,
  id: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ReadableStream<ContainerStats>> {
  const response = await engine.stream("GET", `/containers/${encodeURIComponent(id)}/stats`, {
    query: { stream: true },
    ...options,
  });
  if (response.status !== 200) throw await engine.failure(response, "stream container stats");
  return jsonLines(response.body, MAX_STATS_LINE_BYTES, (line) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DockerEngineError("invalid_body", "Cannot stream container stats: a line of the reply is not JSON", { cause: error });
    }
    const parsed = containerStatsSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue ? issue.path.join(".") || "(root)" : "(root)";
      throw new DockerEngineError(
        "invalid_body",
        `Cannot stream container stats: a sample does not match its schema at ${where}: ${issue?.message ?? "invalid"}`,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }, () => new DockerEngineError("invalid_body", `Cannot stream container stats: a line is longer than ${MAX_STATS_LINE_BYTES} bytes`));
}
