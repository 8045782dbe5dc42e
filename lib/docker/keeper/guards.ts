/**
 * Compute that ends without its controller: two small guest-side guards, each a Docker exec
 * of the keeper's own shell that ends the keeper (`kill -TERM 1`; the keeper traps it and
 * exits, so the container and everything in it stops).
 *
 * - The **controller lease** (`policy.controllerLoss: "stop"`): an exec whose stdin this
 *   controller holds open for the sandbox's life and never writes. When the controller
 *   process dies or its Engine connection drops, the Engine closes the exec's stdin, the
 *   lease reads EOF and ends the keeper. No polling: the kernel's socket close is the event.
 * - The **guest deadline** (`policy.execution: { kind: "deadline" }`): an exec that
 *   sleeps for the deadline plus {@linkcode GUEST_DEADLINE_GRACE_MS} and then ends the
 *   keeper, so the deadline holds after the host died.
 *
 * Both run as the keeper's own identity (`config.keeperUser`), not as the sandbox user: the
 * agent's processes cannot signal them (probed from inside: `kill` of a guard fails with
 * EPERM). The controller keeps both attached and treats the end of either stream before
 * compute was removed as the loss of the guard: the sandbox stops. A stream also ends when the
 * Engine dies or restarts (with `live-restore` the containers live on, the guard execs do
 * not), so the loss is told apart by inspecting the guard's exec ({@linkcode guardLoss}), and
 * a compute removal that fails then is retried in the background until the Engine is back
 * (see `DockerSandbox`). The stopped keeper container stays until `stop()`, `destroy()` or
 * `recover()` removes it.
 *
 * @module
 */
import type { DockerEngine } from "../../engine/client.ts";
import { createExec, inspectExec, startExec } from "../../engine/exec.ts";
import { DockerEngineTransportError } from "../../engine/errors.ts";
import type { EngineUpgrade } from "../../engine/http/mod.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import { WORK_PATH } from "../guest_paths.ts";

/** Added to the execution deadline before the guest ends the keeper itself, milliseconds. */
export const GUEST_DEADLINE_GRACE_MS = 2_000;

/**
 * What a guard writes to its stdout once it runs: the controller counts a guard as started
 * only when this arrived ({@linkcode attachGuard}).
 */
export const GUARD_READY = "ready";

/** The lease script: say it runs, block on stdin (no fork), then end the keeper at EOF. */
export const LEASE_SCRIPT = `echo ${GUARD_READY}; while read -r line; do :; done; kill -TERM 1`;

/** A guard exec the controller stays attached to. */
export interface GuestGuard {
  /** The guard exec's ID. */
  readonly execId: string;
  /** Settles when the guard's stream ended before `release()`: the guard is gone. */
  readonly lost: Promise<void>;
  /** Drop the connection (after compute was removed); `lost` then never settles. */
  release(): void;
}

/** An open controller lease. */
export type ControllerLease = GuestGuard;

/**
 * The egress proxy's lease program (`node -e`): block on stdin, then end the proxy (PID 1 of
 * its container, the same user) at EOF. The proxy program handles SIGTERM by exiting (a PID 1
 * ignores a signal it has no handler for). Node, not a shell: a proxy image need not have one.
 */
export const PROXY_LEASE_PROGRAM = `process.stdout.write("${GUARD_READY}\\n"); process.stdin.resume(); const end = () => process.kill(1, "SIGTERM"); process.stdin.on("end", end); process.stdin.on("close", end);`;

/**
 * Attach to a guard exec running `cmd` in container `keeperId`, wait until it runs, and watch
 * its stream end.
 *
 * The exec start's reply (the hijacked stream) comes before runc has finished setting up the
 * process: a `pause()` that freezes the container in between makes the exec fail, and the
 * guard would end at once. So the guard counts as started only when its first output (it
 * writes {@linkcode GUARD_READY} first) arrived, within `context.timeoutMs`.
 *
 * @throws {DockerEngineError} / {DockerEngineTransportError} when the exec cannot start, or
 *   it ended, wrote nothing or was aborted before it ran
 */
async function attachGuard(context: GuardContext, cmd: readonly string[], workingDir: string = WORK_PATH): Promise<GuestGuard> {
  const { engine, keeperId, user, timeoutMs, signal } = context;
  const execId = await createExec(engine, keeperId, {
    Cmd: [...cmd],
    Env: [],
    User: `${user.uid}:${user.gid}`,
    WorkingDir: workingDir,
  }, { timeoutMs, signal });
  const attach: EngineUpgrade = await startExec(engine, execId, { signal });
  const reader = attach.readable.getReader();
  const fail = (code: "deadline" | "aborted" | "connection", why: string, cause?: unknown) => {
    attach.abort(new Error(why));
    return new DockerEngineTransportError(code, `Cannot start guard exec ${execId}: ${why}`, { cause });
  };
  const first = await raceDeadline(reader.read(), {
    timeoutMs,
    signal,
    onTimeout: () => fail("deadline", `it did not run within ${timeoutMs} ms`),
    onAbort: (reason) => fail("aborted", "aborted", reason),
  }).catch((error) => {
    throw error instanceof DockerEngineTransportError ? error : fail("connection", "its stream failed before it ran", error);
  });
  if (first.done) throw fail("connection", "it ended before it ran (its container was paused or stopped as it started)");
  let released = false;
  // Nothing is ever written; after its first line the output carries nothing either, but is
  // drained so the connection never stalls on it. Its end is the guard's end.
  const drain = async () => {
    while (!(await reader.read()).done);
  };
  const lost = drain().catch(() => {}).then(() => {
    if (released) return new Promise<void>(() => {});
  });
  return {
    execId,
    lost,
    release: () => {
      released = true;
      attach.abort(new Error("the sandbox's compute was removed"));
    },
  };
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
export function startControllerLease(context: GuardContext): Promise<ControllerLease> {
  return attachGuard(context, ["/bin/sh", "-c", LEASE_SCRIPT]);
}

/**
 * Start the controller lease of the egress proxy container (`context.keeperId` is the
 * proxy's ID here): when the controller goes, the proxy ends too, so nothing of the sandbox
 * computes without it.
 *
 * @throws {DockerEngineError} / {DockerEngineTransportError} when the exec cannot start
 */
export function startProxyLease(context: GuardContext): Promise<ControllerLease> {
  return attachGuard(context, ["node", "-e", PROXY_LEASE_PROGRAM], "/");
}

/**
 * One lease of several (the keeper's and the proxy's): `lost` when the first is lost,
 * `release()` releases all; `execId` is the lost one's once `lost` settled, the first's
 * before.
 *
 * @param leases at least one lease
 * @returns the combined lease
 */
export function combinedLease(leases: readonly [ControllerLease, ...ControllerLease[]]): ControllerLease {
  let execId = leases[0].execId;
  return {
    get execId() {
      return execId;
    },
    lost: Promise.race(leases.map((lease) => lease.lost.then(() => void (execId = lease.execId)))),
    release: () => leases.forEach((lease) => lease.release()),
  };
}

/**
 * Start the guest deadline: ends the keeper `deadlineMs + GUEST_DEADLINE_GRACE_MS` after now
 * (rounded up to whole seconds, as `sleep` counts them).
 *
 * @throws {DockerEngineError} / {DockerEngineTransportError} when the exec cannot start
 */
export function startGuestDeadline(context: GuardContext, deadlineMs: number): Promise<GuestGuard> {
  // `sleep` takes whole seconds; past 2^31 - 1 s (68 years) the keeper's own sleep is the bound.
  const seconds = Math.min(Math.ceil((deadlineMs + GUEST_DEADLINE_GRACE_MS) / 1000), 2 ** 31 - 1);
  return attachGuard(context, ["/bin/sh", "-c", `echo ${GUARD_READY}; sleep ${seconds}; kill -TERM 1`]);
}

/**
 * Why a guard's stream ended before its release: its exec is inspected (bounded by
 * `timeoutMs`). An exec that exited means something ended the guard (`"killed"`: a guest
 * process, or the keeper went away); an Engine that does not answer, or no longer knows the
 * exec (a restarted daemon forgets every exec), means the Engine connection was lost
 * (`"engine"`).
 *
 * @param engine the Engine
 * @param guard the guard whose stream ended
 * @param timeoutMs bound on the inspection, in milliseconds
 * @returns `"killed"` or `"engine"`; never rejects
 */
export async function guardLoss(engine: DockerEngine, guard: GuestGuard, timeoutMs: number): Promise<"killed" | "engine"> {
  try {
    const state = await inspectExec(engine, guard.execId, { timeoutMs });
    return state.Running ? "engine" : "killed";
  } catch {
    return "engine";
  }
}
