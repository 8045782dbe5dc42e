/**
 * `GET /events` over a closed time range: the Engine answers the events it still holds for
 * that range and ends the reply (Engine API v1.44 `since`/`until`, both Unix seconds with a
 * fraction). No long poll: a range that ends now returns at once.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";
import { DockerEngineError } from "./errors.ts";

/**
 * Reply bound of one {@linkcode containerEventsBetween} call, bytes: an event line is about
 * 400 bytes, so this holds some 600 events; a longer reply fails with `response_limit`.
 */
export const MAX_EVENTS_REPLY_BYTES = 256 * 1024;

/** One event of a container as the Engine reports it (the fields read; others are kept). */
export const containerEventSchema = z.looseObject({
  Type: z.string(),
  Action: z.string(),
  Actor: z.looseObject({ ID: z.string() }),
  timeNano: z.number(),
});

/** A container event (`Type`, `Action`, `Actor.ID`, `timeNano`: nanoseconds since the epoch). */
export type ContainerEvent = z.infer<typeof containerEventSchema>;

/** What {@linkcode containerEventsBetween} asks for. */
export interface ContainerEventsQuery {
  /** The container's exact ID. */
  readonly containerId: string;
  /** Event actions to keep (`"oom"`, `"die"`, …). */
  readonly actions: readonly string[];
  /** Start of the range, epoch milliseconds. */
  readonly sinceMs: number;
  /** End of the range, epoch milliseconds (not in the future: the Engine would wait for it). */
  readonly untilMs: number;
}

/**
 * The events of one container between two instants that the Engine still holds (it keeps
 * the latest 256 events of all containers in memory; older ones are gone). One request,
 * bounded by `options.timeoutMs` (default 30 s) and {@linkcode MAX_EVENTS_REPLY_BYTES}.
 *
 * @returns The events, oldest first.
 * @throws {DockerEngineError} `invalid_body` for a line that is not an event; a status error
 *   for an unexpected status
 * @throws {DockerEngineTransportError} on transport faults (`deadline`, `response_limit`, …)
 */
export async function containerEventsBetween(
  engine: DockerEngine,
  query: ContainerEventsQuery,
  options: EngineCallOptions = {},
): Promise<ContainerEvent[]> {
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const response = await engine.stream("GET", "/events", {
    query: {
      since: seconds(query.sinceMs),
      until: seconds(query.untilMs),
      filters: JSON.stringify({ type: ["container"], container: [query.containerId], event: query.actions }),
    },
    timeoutMs: options.timeoutMs ?? 30_000,
    maxBodyBytes: MAX_EVENTS_REPLY_BYTES,
    signal: options.signal,
  });
  if (response.status !== 200) throw await engine.failure(response, "read container events");
  const text = await new Response(response.body).text();
  const events: ContainerEvent[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let parsed: ReturnType<typeof containerEventSchema.safeParse>;
    try {
      parsed = containerEventSchema.safeParse(JSON.parse(line));
    } catch (error) {
      throw new DockerEngineError("invalid_body", "Cannot read container events: a line of the reply is not JSON", { cause: error });
    }
    if (!parsed.success) {
      throw new DockerEngineError("invalid_body", "Cannot read container events: a line of the reply is not an event", { cause: parsed.error });
    }
    events.push(parsed.data);
  }
  return events;
}
