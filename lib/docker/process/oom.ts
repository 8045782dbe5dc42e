/**
 * Whether the kernel's OOM killer acted in a sandbox while one of its processes ran: the
 * keeper container's `oom` events (the Engine reports one each time the OOM killer ends a
 * process of the container's cgroup; Engine API v1.44 `GET /events`) between the process's
 * start and now.
 *
 * @module
 */
import { containerEventsBetween } from "../../engine/events.ts";
import type { ExitObserverHost } from "./exit_observer.ts";

/**
 * True when the Engine holds an `oom` event of the sandbox's keeper container between
 * `sinceMs` and now. The Engine keeps only its latest 256 events, so on a very busy Engine
 * an old enough one may be gone; an Engine that does not answer within
 * `policy.deadlines.cleanupMs` gives `false` (unknown counts as not OOM-killed).
 *
 * @param host The sandbox's engine, keeper and policy.
 * @param sinceMs When the process started, epoch milliseconds.
 */
export async function oomKilledSince(host: ExitObserverHost, sinceMs: number): Promise<boolean> {
  try {
    const events = await containerEventsBetween(host.engine, {
      containerId: host.keeperId,
      actions: ["oom"],
      sinceMs,
      untilMs: Date.now(),
    }, { timeoutMs: host.policy.deadlines.cleanupMs });
    return events.some((event) => event.Action === "oom" && event.Actor.ID === host.keeperId);
  } catch {
    return false;
  }
}
