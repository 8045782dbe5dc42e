/**
 * The exit receipt of an exec, read from `GET /exec/{id}/json` on a bounded schedule, never
 * from its stream ending.
 *
 * @module
 */
import { type SandboxError, SandboxStoppedError } from "../../sandbox/errors.ts";
import type { SandboxPolicy } from "../../sandbox/policy.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { inspectContainer } from "../../engine/containers.ts";
import { inspectExec } from "../../engine/exec.ts";
import { isNotFound, unansweredError } from "../_engine_errors.ts";
import { keeperStoppedError } from "../keeper/keeper_stopped.ts";

/** What the observer needs of its sandbox. */
export interface ExitObserverHost {
  /** The Engine. */
  readonly engine: DockerEngine;
  /** Keeper container ID (inspected when an exit code never appears). */
  readonly keeperId: string;
  /** The policy (`deadlines.cleanupMs` bounds each inspection). */
  readonly policy: SandboxPolicy;
  /** Aborted with the stop cause as soon as compute removal begins. */
  readonly stopping: AbortSignal;
  /** Settles once the keeper container is gone. */
  readonly computeRemoved: Promise<void>;
  /**
   * Settles once the first compute removal attempt ended, whether it removed compute or
   * failed (the Engine gone): what every pending receipt waits for, so none outlives a
   * failed removal.
   */
  readonly stopEnded: Promise<void>;
  /** Stop the whole sandbox because of `cause` (idempotent). */
  stopFor(cause: SandboxError): Promise<void>;
}

/** The leader's exit as the Engine reports it, or the sandbox's stop first. */
export type ObservedExit =
  | { readonly kind: "exited"; readonly code: number }
  | { readonly kind: "unavailable"; readonly reason: "sandbox_stopped" };

/**
 * Inspect the keeper (bounded by `deadlines.cleanupMs`). One that no longer runs (or is being
 * removed) stops the sandbox with a `SandboxStoppedError` saying so (a stop already under way
 * keeps its own cause), so whoever asks learns of a keeper that went away before the
 * sandbox's own watch reported it.
 *
 * @param host The sandbox's engine, keeper and stop.
 * @returns `running`; `exited` or `removed` (404, or being removed), and the sandbox is
 *   stopping; `unknown` when the inspection itself failed (say, the Engine is unreachable)
 */
export async function checkKeeper(host: ExitObserverHost): Promise<"running" | "exited" | "removed" | "unknown"> {
  let state: "exited" | "removed";
  let oomKilled = false;
  try {
    const keeper = await inspectContainer(host.engine, host.keeperId, { timeoutMs: host.policy.deadlines.cleanupMs });
    // One being removed (`docker rm -f` after its kill) is gone too.
    if (keeper.State.Status === "removing") state = "removed";
    else if (keeper.State.Running) return "running";
    else state = "exited";
    oomKilled = keeper.State.OOMKilled === true;
  } catch (error) {
    if (!isNotFound(error)) return "unknown";
    state = "removed";
  }
  // The same causes as the sandbox's keeper watch gives, whichever notices first.
  const cause = state === "exited"
    ? keeperStoppedError(oomKilled, host.policy.resources.memoryBytes)
    : new SandboxStoppedError("Cannot continue: the keeper container was removed from outside");
  host.stopFor(cause).catch(() => {});
  return state;
}

/** Poll interval while the output is still open (descendants may hold it after the leader exits). */
export const OPEN_STREAM_POLL_MS = 2_000;
/** First poll interval once the output ended; it doubles with each poll. */
export const ENDED_STREAM_FIRST_POLL_MS = 10;
/**
 * Longest poll interval once the output ended: an exec whose inspect never reports a
 * numeric `ExitCode` costs at most one exec inspect and one keeper inspect per 5 s.
 */
export const ENDED_STREAM_MAX_POLL_MS = 5_000;

/**
 * The wait before the next inspection once the output ended: 10 ms doubling with each
 * poll, capped at {@linkcode ENDED_STREAM_MAX_POLL_MS} (10, 20, 40, … 2,560, then 5,000 ms
 * for as long as the exit code stays unreported).
 *
 * @param poll Inspections made since the output ended, minus one (0 for the first wait).
 * @returns The wait, in milliseconds.
 */
export function endedStreamPollMs(poll: number): number {
  return Math.min(ENDED_STREAM_FIRST_POLL_MS * 2 ** poll, ENDED_STREAM_MAX_POLL_MS);
}

/**
 * Waits `ms` milliseconds, or less when one of `wake` settles first; the exit observer's
 * only clock, replaceable so a test can observe the schedule as a sequence of waits.
 */
export type ExitPollWait = (ms: number, wake: readonly Promise<unknown>[]) => Promise<void>;

function sleep(ms: number, wake: readonly Promise<unknown>[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const promise of wake) promise.then(done, done);
  });
}

/**
 * Settle the exit receipt from `GET /exec/{id}/json`, never from the stream ending:
 * `exited` only for a non-running exec with a numeric `ExitCode` (`null` is still pending).
 * The exec is inspected every 2 s while its output is open (a descendant may keep the
 * output open after the leader exited) and, once the output ended, after waits of 10 ms
 * doubling up to 5 s ({@linkcode endedStreamPollMs}): quick for the usual exit, one
 * inspection per 5 s at most for an exec that keeps running or whose exit code never
 * appears. Once the sandbox is stopping, a status not yet observed is no longer trusted
 * (the stop itself kills the process): the receipt waits for compute removal and is
 * `unavailable`. From the fourth inspection after the output ended, the keeper is inspected
 * with each one too: a dead keeper stops the sandbox.
 *
 * @param host The sandbox's engine, keeper, deadlines and stop state.
 * @param execId The exec to observe.
 * @param streamEnded Settles when the exec's output ended.
 * @param wait The clock between inspections (tests pass their own to record the schedule).
 * @returns The receipt.
 */
export async function observeExit(
  host: ExitObserverHost,
  execId: string,
  streamEnded: Promise<void>,
  wait: ExitPollWait = sleep,
): Promise<ObservedExit> {
  // The listener goes when the receipt settles: one left behind per process would pile up on
  // the sandbox's signal for its whole life (and Node's EventTarget scans every listener on
  // each add, so each start would cost more than the one before).
  let onStopping!: () => void;
  const stopping = new Promise<void>((resolve) => {
    onStopping = resolve;
    if (host.stopping.aborted) resolve();
    else host.stopping.addEventListener("abort", onStopping, { once: true });
  });
  try {
    return await observe(host, execId, streamEnded, wait, stopping);
  } finally {
    host.stopping.removeEventListener("abort", onStopping);
  }
}

/** {@linkcode observeExit}'s schedule, with the sandbox's stop as a promise. */
async function observe(
  host: ExitObserverHost,
  execId: string,
  streamEnded: Promise<void>,
  wait: ExitPollWait,
  stopping: Promise<void>,
): Promise<ObservedExit> {
  const unavailable: ObservedExit = Object.freeze({ kind: "unavailable", reason: "sandbox_stopped" });
  const timeoutMs = host.policy.deadlines.cleanupMs;
  let ended = false;
  streamEnded.then(() => (ended = true));
  // When the first inspection of an unbroken run of failed ones was sent (undefined while
  // they are answered).
  let unansweredSince: number | undefined;
  await wait(OPEN_STREAM_POLL_MS, [streamEnded, stopping]);
  for (let poll = 0;; poll++) {
    if (host.stopping.aborted) {
      await host.stopEnded;
      return unavailable;
    }
    const endedBefore = ended;
    const sentAt = Date.now();
    try {
      const state = await inspectExec(host.engine, execId, { timeoutMs });
      unansweredSince = undefined;
      if (host.stopping.aborted) continue;
      if (!state.Running && state.ExitCode !== null) return Object.freeze({ kind: "exited", code: state.ExitCode });
    } catch (error) {
      if (isNotFound(error)) {
        forgotten(host);
        if (host.stopping.aborted) continue;
        return unavailable;
      }
      // A transient Engine failure is tried again below; one that lasts the cleanup deadline
      // (the Engine is gone) stops the sandbox, so the receipt settles `unavailable`.
      unansweredSince ??= sentAt;
      if (Date.now() - unansweredSince >= timeoutMs) {
        host.stopFor(unansweredError("observe the process's exit", timeoutMs, error)).catch(() => {});
        continue;
      }
    }
    if (endedBefore && poll >= 3 && !host.stopping.aborted && await checkKeeper(host) === "removed") {
      // The sandbox is stopping now: the receipt waits for the stop's end.
      if (host.stopping.aborted) continue;
      return unavailable;
    }
    if (endedBefore) await wait(endedStreamPollMs(poll), [stopping]);
    else {
      poll = -1;
      await wait(OPEN_STREAM_POLL_MS, [stopping, streamEnded]);
    }
  }
}

/**
 * The Engine no longer knows the exec or the keeper (404): compute is gone from under the
 * sandbox, which stops (if it is not stopping already), so the receipt settles `unavailable`
 * with the sandbox no longer `running`.
 */
function forgotten(host: ExitObserverHost): void {
  if (host.stopping.aborted) return;
  host.stopFor(
    new SandboxStoppedError("Cannot continue: the Engine no longer knows the keeper or the process's exec (the keeper was removed from outside, or the Engine restarted)"),
  ).catch(() => {});
}
