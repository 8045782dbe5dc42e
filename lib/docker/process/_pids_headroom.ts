/**
 * Room for the kill exec in a full PID table: while a fork bomb holds every PID of a sandbox
 * (its `resources.pids`), the runtime cannot start the kill exec inside the guest — `runc
 * exec`'s `runc init` joins the container's cgroup and needs several tasks of it (measured on
 * runc 1.1.5, Linux 6.18, cgroup v1: 4 spare PIDs were too few, 8 enough). The kill asks the
 * Engine to raise the limit by {@linkcode KILL_PIDS_HEADROOM} for its attempt, and to set it
 * back right after.
 *
 * The bound stays a bound: the extra PIDs exist only while a kill runs (at most
 * `deadlines.cleanupMs`), and when the limit is set back the sandbox's tasks must be within
 * it again by the end of that deadline (the killed group's tasks are gone by then), else
 * the sandbox stops — a guest that forked into the room keeps none of it. Kills of several
 * processes of one sandbox share one raise: the first raises, the last sets it back.
 *
 * @module
 */
import { containerStats } from "../../engine/container_stats.ts";
import { updatePidsLimit } from "../../engine/containers.ts";
import type { ExitObserverHost } from "./exit_observer.ts";

/** PIDs the limit grows by while a kill exec starts in a full PID table. */
export const KILL_PIDS_HEADROOM = 16;

/** Milliseconds between two reads of the task count after the limit was set back. */
const SETTLE_POLL_MS = 100;

/** Per keeper: how many kills hold the raised limit, and the raise itself. */
const raises = new Map<string, { holders: number; raised: Promise<void> }>();

/**
 * Run `attempt` with the sandbox's PID limit raised by {@linkcode KILL_PIDS_HEADROOM}, then
 * set it back to `policy.resources.pids` (the last of concurrent holders does) and wait,
 * within `deadlines.cleanupMs`, until the sandbox's tasks are within it.
 *
 * @returns what `attempt` returned
 * @throws {Error} when the limit cannot be raised (the attempt did not run), cannot be set
 *   back, or the tasks stay above it: the caller stops the sandbox
 */
export async function withKillHeadroom<T>(host: ExitObserverHost, attempt: () => Promise<T>): Promise<T> {
  const { engine, keeperId, policy } = host;
  const limit = policy.resources.pids;
  const options = { timeoutMs: policy.deadlines.cleanupMs, signal: host.stopping };
  let entry = raises.get(keeperId);
  if (entry === undefined) {
    entry = { holders: 0, raised: updatePidsLimit(engine, keeperId, limit + KILL_PIDS_HEADROOM, options) };
    raises.set(keeperId, entry);
  }
  entry.holders += 1;
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    await entry.raised;
    outcome = { ok: true, value: await attempt() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  entry.holders -= 1;
  if (entry.holders === 0) {
    if (raises.get(keeperId) === entry) raises.delete(keeperId);
    // Set back even when the raise failed: a raise whose reply was lost may have been applied.
    const restored = await restore(host, limit).then(() => undefined, (error: unknown) => error);
    if (outcome.ok && restored !== undefined) throw restored;
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** Set the limit back to `limit` and wait until the sandbox's tasks are within it. */
async function restore(host: ExitObserverHost, limit: number): Promise<void> {
  const { engine, keeperId, policy } = host;
  const deadline = Date.now() + policy.deadlines.cleanupMs;
  await updatePidsLimit(engine, keeperId, limit, { timeoutMs: policy.deadlines.cleanupMs, signal: host.stopping });
  for (;;) {
    const stats = await containerStats(engine, keeperId, { timeoutMs: Math.max(1, deadline - Date.now()), signal: host.stopping, oneShot: true });
    const current = stats.pids_stats?.current;
    if (current !== undefined && current <= limit) return;
    if (Date.now() + SETTLE_POLL_MS > deadline) {
      throw new Error(`the sandbox holds ${current ?? "an unknown number of"} tasks, above its limit of ${limit}, after the kill's headroom of ${KILL_PIDS_HEADROOM} was taken back`);
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
}
