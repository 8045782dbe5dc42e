/**
 * A sandbox's live {@linkcode SandboxStats}: the keeper's Engine stats stream (one
 * connection, about a sample a second), thinned to the caller's interval, newest sample
 * first, nothing queued.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "../engine/client.ts";
import { type ContainerStats, streamContainerStats } from "../engine/container_stats.ts";
import { integerFrom, parseConfiguration } from "../internal/zod_issues.ts";
import type { SandboxStats } from "../sandbox/stats.ts";
import { asSandboxError } from "./_engine_errors.ts";
import { sandboxStatsOf } from "./stats.ts";

/** Shortest `intervalMs` of a stats stream, milliseconds: the Engine samples about once a second. */
export const MIN_STATS_INTERVAL_MS = 1_000;
/** Longest `intervalMs` of a stats stream, milliseconds (one hour). */
export const MAX_STATS_INTERVAL_MS = 3_600_000;
/** Default `intervalMs` of a stats stream, milliseconds: every Engine sample. */
export const DEFAULT_STATS_INTERVAL_MS = 1_000;
/**
 * How much earlier than `intervalMs` after the last sample handed out a sample may be read
 * by the Engine and still be handed out, milliseconds: the Engine's own period jitters
 * around a second, and a 1 s interval must not drop every other sample.
 */
const INTERVAL_SLACK_MS = 250;

/**
 * Options of `DockerSandbox.statsStream`.
 *
 * @example
 * ```ts
 * import type { SandboxStatsStreamOptions } from "./stats_stream.ts";
 *
 * const options: SandboxStatsStreamOptions = { intervalMs: 5_000 };
 * ```
 */
export interface SandboxStatsStreamOptions {
  /**
   * Least time between two samples handed out, milliseconds (by the Engine's `readAt`, less
   * 250 ms of slack for the Engine's own jitter): an integer from
   * {@linkcode MIN_STATS_INTERVAL_MS} (1,000, the Engine's rate) to
   * {@linkcode MAX_STATS_INTERVAL_MS} (3,600,000). Samples in between are dropped, not queued.
   *
   * @default {1000}
   */
  readonly intervalMs?: number;
}

const optionsSchema = z.strictObject({
  intervalMs: integerFrom(MIN_STATS_INTERVAL_MS, MAX_STATS_INTERVAL_MS, "milliseconds").optional(),
});

/**
 * Validate {@linkcode SandboxStatsStreamOptions}.
 *
 * @returns The interval, milliseconds.
 * @throws {SandboxConfigurationError} naming the field when it is out of range or unknown
 */
export function statsIntervalOf(options: unknown): number {
  const parsed = parseConfiguration(optionsSchema, options ?? {}, "stream sandbox stats", "options");
  return parsed.intervalMs ?? DEFAULT_STATS_INTERVAL_MS;
}

/** What {@linkcode sandboxStatsStream} reads from. */
export interface StatsStreamSource {
  readonly engine: DockerEngine;
  readonly keeperId: string;
  /** The policy's `resources.cpus`. */
  readonly cpus: number;
  /** Aborted when the sandbox stops: the stream closes and its connection is closed. */
  readonly stopping: AbortSignal;
  /** Connect and header deadline of the opening, milliseconds. */
  readonly openTimeoutMs: number;
}

/**
 * The stream of `DockerSandbox.statsStream`. One Engine connection, opened on the first
 * read and read continuously at the Engine's rate; only the newest sample is kept (a slow
 * reader gets the newest one, never a backlog: memory stays one sample and one line of at
 * most `MAX_STATS_LINE_BYTES`). A read waits for a sample read by the Engine at least
 * `intervalMs` (less 250 ms) after the last one handed out.
 *
 * Closes when the sandbox stops (`source.stopping`) or the Engine ends the reply; errors
 * with a `SandboxError` (`asSandboxError`) when the Engine fails. `cancel()` closes the
 * connection at once. In every case no connection is left open.
 *
 * @param source The engine, the keeper and the sandbox's stop signal.
 * @param intervalMs A validated interval ({@linkcode statsIntervalOf}).
 * @returns The samples.
 */
export function sandboxStatsStream(source: StatsStreamSource, intervalMs: number): ReadableStream<SandboxStats> {
  const ended = new AbortController();
  const onStop = () => ended.abort();
  let newest: { sample: SandboxStats; readMs: number } | undefined;
  let handedMs = Number.NEGATIVE_INFINITY;
  let failure: { error: unknown } | undefined;
  let finished = false;
  let changed = Promise.withResolvers<void>();
  const notify = () => {
    changed.resolve();
    changed = Promise.withResolvers<void>();
  };
  const finish = () => {
    source.stopping.removeEventListener("abort", onStop);
    finished = true;
    notify();
  };
  const run = async () => {
    let samples: ReadableStream<ContainerStats> | undefined;
    try {
      samples = await streamContainerStats(source.engine, source.keeperId, {
        connectTimeoutMs: source.openTimeoutMs,
        headerTimeoutMs: source.openTimeoutMs,
        signal: ended.signal,
      });
      const reader = samples.getReader();
      const release = () => void reader.cancel().catch(() => {});
      ended.signal.addEventListener("abort", release, { once: true });
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const readMs = Date.parse(value.read);
          newest = { sample: sandboxStatsOf(value, source.cpus), readMs: Number.isNaN(readMs) ? Date.now() : readMs };
          notify();
        }
      } finally {
        ended.signal.removeEventListener("abort", release);
        await reader.cancel().catch(() => {});
      }
    } catch (error) {
      if (!ended.signal.aborted) failure = { error: asSandboxError(error, "stream sandbox stats") };
    } finally {
      finish();
    }
  };
  return new ReadableStream<SandboxStats>({
    start() {
      if (source.stopping.aborted) return finish();
      source.stopping.addEventListener("abort", onStop, { once: true });
      void run();
    },
    async pull(controller) {
      for (;;) {
        if (newest !== undefined && newest.readMs - handedMs >= intervalMs - INTERVAL_SLACK_MS) {
          handedMs = newest.readMs;
          controller.enqueue(newest.sample);
          newest = undefined;
          return;
        }
        if (finished) {
          if (failure !== undefined) return controller.error(failure.error);
          return controller.close();
        }
        await changed.promise;
      }
    },
    cancel() {
      ended.abort();
    },
  }, { highWaterMark: 0 });
}
