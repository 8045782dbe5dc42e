/**
 * Watching a container of a sandbox (the keeper, the egress proxy) for stopping on its own:
 * a long poll `POST /containers/{id}/wait?condition=not-running`, renewed every
 * {@linkcode WATCH_RENEW_MS} and re-armed after a transport failure, so a lost reply or a
 * proxy that drops idle connections cannot switch the watch off.
 *
 * Worst case: a container's stop goes unnoticed for one renewal period
 * ({@linkcode WATCH_RENEW_MS}, 30 s) when the watch's reply is lost; a dropped connection is
 * re-armed after 250 ms doubling to {@linkcode WATCH_RETRY_MAX_MS}; an Engine that answers no
 * watch for `unreachableMs` ends the watch with `onUnreachable`.
 *
 * @module
 */
import type { DockerEngine } from "../../engine/client.ts";
import { waitContainer } from "../../engine/containers.ts";
import { isNotFound } from "../_engine_errors.ts";

/** How often a watch's long poll is renewed, in milliseconds: 30 seconds. */
export const WATCH_RENEW_MS = 30_000;
/** Longest wait before a failed watch is re-armed, in milliseconds: 5 seconds. */
export const WATCH_RETRY_MAX_MS = 5_000;

/** What a watch reports; it calls exactly one of these, once, unless `stopping` aborted. */
export interface ContainerWatchOptions {
  /** The sandbox's stop signal: the watch ends, reporting nothing. */
  readonly stopping: AbortSignal;
  /** How long the Engine may fail every watch before `onUnreachable`, in milliseconds. */
  readonly unreachableMs: number;
  /** The container is not running: its exit code, or `undefined` when it is gone (404). */
  onStopped(exitCode: number | undefined): void;
  /** No watch was answered for `unreachableMs`: the last failure. */
  onUnreachable(error: unknown): void;
}

/**
 * Watch container `id` until it stops, the Engine stays unreachable, or `stopping` aborts.
 * Never rejects.
 *
 * @param engine the Engine
 * @param id exact container ID
 * @param options what to report and when to give up
 */
export async function watchContainer(engine: DockerEngine, id: string, options: ContainerWatchOptions): Promise<void> {
  const { stopping } = options;
  let failingSince: number | undefined;
  let retryMs = 250;
  while (!stopping.aborted) {
    const renew = new AbortController();
    const timer = setTimeout(() => renew.abort(new Error("the watch is renewed")), WATCH_RENEW_MS);
    const sentAt = Date.now();
    try {
      const exitCode = await waitContainer(engine, id, { condition: "not-running", signal: AbortSignal.any([stopping, renew.signal]) });
      if (!stopping.aborted) options.onStopped(exitCode);
      return;
    } catch (error) {
      if (stopping.aborted) return;
      if (isNotFound(error)) return options.onStopped(undefined);
      if (renew.signal.aborted) {
        // The renewal: the poll lasted its period (answered or not), so it is simply sent again.
        failingSince = undefined;
        retryMs = 250;
        continue;
      }
      failingSince ??= sentAt;
      if (Date.now() - failingSince >= options.unreachableMs) return options.onUnreachable(error);
      await new Promise<void>((resolve) => {
        const wake = setTimeout(done, retryMs);
        function done() {
          clearTimeout(wake);
          stopping.removeEventListener("abort", done);
          resolve();
        }
        stopping.addEventListener("abort", done, { once: true });
      });
      retryMs = Math.min(retryMs * 2, WATCH_RETRY_MAX_MS);
    } finally {
      clearTimeout(timer);
    }
  }
}
