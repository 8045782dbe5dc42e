/**
 * Pausing a sandbox: every container of its compute frozen by the Engine's cgroup freezer
 * (`POST /containers/{id}/pause`), thawed again in the reverse order
 * (`POST /containers/{id}/unpause`).
 *
 * The set of containers is {@linkcode computeContainers}, the one place that lists them (the
 * keeper, and the egress proxy of an allowlist sandbox; a sidecar added later joins there).
 * Pause freezes the keeper first (the guest stops before its egress does) and resume thaws
 * it last (its egress runs again before the guest does). A pause that fails part way thaws
 * what it froze, so the sandbox stays running as a whole.
 *
 * @module
 */
import type { DockerEngine } from "../../engine/client.ts";
import { pauseContainer, unpauseContainer } from "../../engine/containers.ts";
import type { AcquiredSandbox } from "../acquire.ts";

/**
 * The exact container IDs of a sandbox's compute, in pause order: the keeper, then the egress
 * proxy when the policy is an allowlist.
 *
 * @param acquired the sandbox's acquired resources
 * @returns the container IDs, keeper first
 */
export function computeContainers(acquired: Pick<AcquiredSandbox, "keeperId" | "egress">): readonly string[] {
  return acquired.egress === undefined ? [acquired.keeperId] : [acquired.keeperId, acquired.egress.proxyId];
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
      await pauseContainer(engine, id, { timeoutMs });
      frozen.push(id);
    }
  } catch (error) {
    await unpauseAll(engine, frozen, timeoutMs).catch(() => {});
    throw error;
  }
}

/**
 * Thaw `ids` in the reverse of pause order. Every container is tried; the first failure is
 * thrown after the others were tried.
 *
 * @param engine the Engine
 * @param ids containers in pause order (see {@linkcode computeContainers})
 * @param timeoutMs whole deadline per Engine call, milliseconds
 * @throws {DockerEngineError} / {DockerEngineTransportError} the first failed unpause
 */
export async function unpauseAll(engine: DockerEngine, ids: readonly string[], timeoutMs: number): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const id of [...ids].reverse()) {
    await unpauseContainer(engine, id, { timeoutMs }).catch((error) => void (failure ??= { error }));
  }
  if (failure !== undefined) throw failure.error;
}
