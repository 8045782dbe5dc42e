/**
 * The sandbox's execution deadline (policy `execution: { kind: "deadline", timeoutMs }`): it
 * belongs to the sandbox, not to a process. Its first process arms it, once: a host timer that
 * stops the whole sandbox after `timeoutMs`, and the same deadline inside the guest (one guard
 * exec per sandbox, see `../keeper/guards.ts`) so it holds after the host died. Later
 * processes neither restart nor extend it.
 *
 * @module
 */
import { SandboxDeadlineError, SandboxStoppedError } from "../../sandbox/errors.ts";
import { guardLoss, startGuestDeadline } from "../keeper/guards.ts";
import type { ExitObserverHost } from "./exit_observer.ts";
import { asSandboxError } from "../_engine_errors.ts";
import { setLongTimeout } from "../../internal/long_timer.ts";

/** What the deadline needs of its sandbox. */
export interface ExecutionDeadlineHost extends ExitObserverHost {
  /** The keeper's identity: the guard runs as it, out of the processes' reach. */
  readonly keeperUser: { readonly uid: number; readonly gid: number };
}

/**
 * Arm the execution deadline of `timeoutMs` milliseconds from now: the host timer at once,
 * then the guest guard. A guard that cannot start, or whose stream ends before compute was
 * removed (something ended it, or the Engine connection was lost), stops the sandbox. Both end with the sandbox's stop.
 *
 * @returns Resolves once the guard runs in the guest (or its failure stopped the sandbox);
 *   never rejects.
 */
export async function armExecutionDeadline(host: ExecutionDeadlineHost, timeoutMs: number): Promise<void> {
  const cancel = setLongTimeout(() => {
    host.stopFor(new SandboxDeadlineError(`Cannot continue process: its execution deadline of ${timeoutMs} ms elapsed`)).catch(() => {});
  }, timeoutMs);
  host.stopping.addEventListener("abort", cancel, { once: true });
  if (host.stopping.aborted) cancel();
  try {
    const guard = await startGuestDeadline({ ...host, user: host.keeperUser, timeoutMs: host.policy.deadlines.startupMs }, timeoutMs);
    host.computeRemoved.then(() => guard.release());
    guard.lost.then(async () => {
      const why = await guardLoss(host.engine, guard, host.policy.deadlines.cleanupMs);
      await host.stopFor(
        new SandboxStoppedError(
          why === "engine"
            ? "Cannot continue process: the guest-side execution deadline's Engine connection was lost (the Engine stopped or restarted), so the sandbox was stopped"
            : "Cannot continue process: the guest-side execution deadline ended early (something ended it, or the keeper went away), so the sandbox was stopped",
        ),
      );
    }).catch(() => {});
  } catch (error) {
    if (host.stopping.aborted) return;
    await host.stopFor(asSandboxError(error, "start the guest deadline")).catch(() => {});
  }
}
