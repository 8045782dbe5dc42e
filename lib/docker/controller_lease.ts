/**
 * Compute that ends without its controller: two small guest-side guards, each a Docker exec
 * of the keeper's own shell that ends the keeper (`kill -TERM 1`; the keeper traps it and
 * exits, so the container and everything in it stops).
 *
 * - The **controller lease** (`policy.controllerLoss: "stop"`): an exec whose stdin this
 *   controller holds open for the sandbox's life and never writes. When the controller
 *   process dies or its Engine connection drops, the Engine closes the exec's stdin, the
 *   lease reads EOF and ends the keeper. No polling: the kernel's socket close is the event.
 * - The **guest deadline** (`policy.execution: { kind: "deadline" }`): a detached exec that
 *   sleeps for the deadline plus {@linkcode GUEST_DEADLINE_GRACE_MS} and then ends the
 *   keeper, so the deadline holds after the host died.
 *
 * Both run as the sandbox user, like the agent, so the agent can end them too (which only
 * ends its own sandbox sooner or, for the deadline, leaves the host's timer alone in
 * charge). The stopped keeper container stays until `stop()`, `destroy()` or `recover()`
 * removes it.
 *
 * @module
 */
import type { DockerEngine } from "../engine/client.ts";
import { createExec, startExec, startExecDetached } from "../engine/exec.ts";
import type { EngineUpgrade } from "../engine/http/mod.ts";
import { WORK_PATH } from "./workload.ts";

/** Added to the execution deadline before the guest ends the keeper itself, milliseconds. */
export const GUEST_DEADLINE_GRACE_MS = 2_000;

/** The lease script: block on stdin (no fork), then end the keeper at EOF. */
export const LEASE_SCRIPT = "while read -r line; do :; done; kill -TERM 1";

/** An open controller lease. */
export interface ControllerLease {
  /** The lease exec's ID. */
  readonly execId: string;
  /** Drop the connection without ending the keeper first (after compute was removed). */
  release(): void;
}

/** Identity and bounds of a guard exec. */
export interface GuardContext {
  readonly engine: DockerEngine;
  readonly keeperId: string;
  readonly user: { readonly uid: number; readonly gid: number };
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Start the controller lease on a running keeper.
 *
 * @throws {DockerEngineError} / {DockerEngineTransportError} when the exec cannot start
 */
export async function startControllerLease(context: GuardContext): Promise<ControllerLease> {
  const { engine, keeperId, user, timeoutMs, signal } = context;
  const execId = await createExec(engine, keeperId, {
    Cmd: ["/bin/sh", "-c", LEASE_SCRIPT],
    Env: [],
    User: `${user.uid}:${user.gid}`,
    WorkingDir: WORK_PATH,
  }, { timeoutMs, signal });
  const attach: EngineUpgrade = await startExec(engine, execId, { signal });
  // Nothing is ever written; the output side carries nothing either, but is drained so the
  // connection never stalls on it.
  attach.readable.pipeTo(new WritableStream()).catch(() => {});
  return {
    execId,
    release: () => attach.abort(new Error("the sandbox's compute was removed")),
  };
}

/**
 * Start the guest deadline: ends the keeper `timeoutMs + GUEST_DEADLINE_GRACE_MS` after now
 * (rounded up to whole seconds, as `sleep` counts them).
 *
 * @throws {DockerEngineError} / {DockerEngineTransportError} when the exec cannot start
 */
export async function startGuestDeadline(context: GuardContext, deadlineMs: number): Promise<void> {
  const { engine, keeperId, user, timeoutMs, signal } = context;
  // `sleep` takes whole seconds; past 2^31 - 1 s (68 years) the keeper's own sleep is the bound.
  const seconds = Math.min(Math.ceil((deadlineMs + GUEST_DEADLINE_GRACE_MS) / 1000), 2 ** 31 - 1);
  const execId = await createExec(engine, keeperId, {
    Cmd: ["/bin/sh", "-c", `sleep ${seconds}; kill -TERM 1`],
    Env: [],
    User: `${user.uid}:${user.gid}`,
    WorkingDir: WORK_PATH,
  }, { timeoutMs, signal });
  await startExecDetached(engine, execId, { timeoutMs, signal });
}
