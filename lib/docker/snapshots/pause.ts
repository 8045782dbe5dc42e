/**
 * Pausing a sandbox: every container of its compute frozen by the Engine's cgroup freezer
 * (`POST /containers/{id}/pause`), thawed again in the reverse order
 * (`POST /containers/{id}/unpause`).
 *
 * The set of containers is {@linkcode computeContainers}, the one place that lists them (the
 * keeper, the egress proxy of an allowlist sandbox, the port relay once it exists; a sidecar
 * added later joins there).
 * Pause freezes the keeper first (the guest stops before its egress does) and resume thaws
 * it last (its egress runs again before the guest does). A pause that fails part way thaws
 * what it froze, so the sandbox stays running as a whole.
 *
 * Before freezing, a pause waits until every exec of the container is launched
 * ({@linkcode settleLaunches}): the Engine answers an exec's start before runc has launched its
 * process, and a process launched into a frozen cgroup fails (a guard that fails so stops
 * the sandbox).
 *
 * @module
 */
import type { DockerEngine } from "../../engine/client.ts";
import { inspectContainer, pauseContainer, unpauseContainer } from "../../engine/containers.ts";
import { inspectExec } from "../../engine/exec.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import type { AcquiredSandbox } from "../acquire.ts";

/**
 * The exact container IDs of a sandbox's compute, in pause order: the keeper, then the egress
 * proxy when the policy is an allowlist, then the port relay once its record entry is
 * `created` (made by the first `connect()`).
 *
 * @param acquired the sandbox's acquired resources
 * @returns the container IDs, keeper first
 */
export function computeContainers(acquired: Pick<AcquiredSandbox, "keeperId" | "egress" | "log">): readonly string[] {
  const relay = acquired.log.record.resources.relay;
  return [
    acquired.keeperId,
    ...(acquired.egress === undefined ? [] : [acquired.egress.proxyId]),
    ...(relay?.state === "created" && relay.id !== undefined ? [relay.id] : []),
  ];
}

/**
 * Freeze `ids` in order; on a failure, thaw the ones already frozen (best effort) and throw.
 *
 * @param engine the Engine
 * @param ids containers in pause order (see {@linkcode computeContainers})
 * @param timeoutMs whole deadline per Engine call, milliseconds
 * @throws {DockerEngineError} / {DockerEngineTransportError} the first failed pause
 */
export async function pauseAll(engine: DockerEngine, ids: readonly string[], timeoutMs: number): Promise<void> {
  const frozen: string[] = [];
  try {
    for (const id of ids) {
      await settleLaunches(engine, id, timeoutMs);
      await pauseFreezing(engine, id, timeoutMs);
      frozen.push(id);
    }
  } catch (error) {
    await unpauseAll(engine, frozen, timeoutMs).catch(() => {});
    throw error;
  }
}

/**
 * How many times a pause is asked of the Engine when runc could not freeze the container's
 * cgroup: under heavy load (processes in uninterruptible sleep, a busy disk) runc's freezer
 * gives up with "unable to freeze" and thaws the cgroup again, leaving the container running
 * and unpaused, so asking again is safe. Measured on these machines: one failure at load
 * average ~10, the next attempt froze.
 */
export const PAUSE_FREEZE_ATTEMPTS = 3;

/** Between two pause attempts after "unable to freeze", milliseconds (times the attempt). */
const FREEZE_RETRY_MS = 100;

/**
 * `POST /containers/{id}/pause`, asked again (at most {@linkcode PAUSE_FREEZE_ATTEMPTS} in
 * all) while the Engine answers that runc was unable to freeze the cgroup.
 *
 * @throws {DockerEngineError} the last answer when every attempt failed, or any other failure at once
 */
async function pauseFreezing(engine: DockerEngine, id: string, timeoutMs: number): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      return await pauseContainer(engine, id, { timeoutMs });
    } catch (error) {
      // Engine API v1.44+: 500 "Cannot pause container <id>: OCI runtime pause failed: unable to freeze: unknown".
      const unfrozen = error instanceof DockerEngineError && /unable to freeze/u.test(error.engineMessage ?? error.message);
      if (!unfrozen || attempt >= PAUSE_FREEZE_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, FREEZE_RETRY_MS * attempt));
    }
  }
}

/** Between two looks at an exec that is still being launched, milliseconds. */
const LAUNCH_POLL_MS = 20;

/**
 * Wait until no exec of container `id` is between its start and its launch: each exec the
 * Engine still holds (`ExecIDs` of `GET /containers/{id}/json`) is running, has exited, or
 * is gone (`GET /exec/{id}/json`). Polling is the only way the Engine API tells it (no event
 * marks an exec's launch). An exec created but never started would look the same: after
 * `timeoutMs` the pause goes ahead.
 *
 * @param engine the Engine
 * @param id the container's exact ID
 * @param timeoutMs the longest wait, milliseconds
 */
export async function settleLaunches(engine: DockerEngine, id: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let pending = (await inspectContainer(engine, id, { timeoutMs })).ExecIDs ?? [];
  while (pending.length > 0 && Date.now() < until) {
    const still: string[] = [];
    for (const execId of pending) {
      const state = await inspectExec(engine, execId, { timeoutMs }).catch((error) => {
        if (error instanceof DockerEngineError && error.code === "not_found") return undefined;
        throw error;
      });
      if (state !== undefined && !state.Running && state.ExitCode === null) still.push(execId);
    }
    pending = still;
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, LAUNCH_POLL_MS));
  }
}

/**
 * Thaw `ids` in the reverse of pause order. Every container is tried; the first failure is
 * thrown after the others were tried. One the Engine says is not paused counts as thawed: a
 * sidecar made while the pause ran (the port relay of a `connect()` already under way) was
 * never frozen, and a resume must not stay stuck on it.
 *
 * @param engine the Engine
 * @param ids containers in pause order (see {@linkcode computeContainers})
 * @param timeoutMs whole deadline per Engine call, milliseconds
 * @throws {DockerEngineError} / {DockerEngineTransportError} the first failed unpause
 */
export async function unpauseAll(engine: DockerEngine, ids: readonly string[], timeoutMs: number): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const id of [...ids].reverse()) {
    await unpauseContainer(engine, id, { timeoutMs }).catch((error) => {
      // The Engine answers 409 or 500 "Container <id> is not paused" (Engine API v1.44).
      if (error instanceof DockerEngineError && /is not paused/u.test(error.engineMessage ?? error.message)) return;
      failure ??= { error };
    });
  }
  if (failure !== undefined) throw failure.error;
}
