/**
 * The stop cause of a sandbox whose keeper container stopped on its own, saying whether the
 * kernel's OOM killer had acted in it (`State.OOMKilled` of `GET /containers/{id}/json`,
 * Engine API v1.44, read before anything removes it).
 *
 * @module
 */
import { SandboxStoppedError } from "../../sandbox/errors.ts";

/**
 * The `SandboxStoppedError` (code `stopped`) for a keeper that stopped on its own;
 * `oomKilled: true` on it, and the memory limit and the fix in its message, when it was
 * OOM-killed.
 *
 * @param oomKilled `State.OOMKilled` of the keeper (false when it could not be read).
 * @param memoryBytes The sandbox's `policy.resources.memoryBytes`.
 */
export function keeperStoppedError(oomKilled: boolean, memoryBytes: number): SandboxStoppedError {
  if (!oomKilled) return new SandboxStoppedError("Cannot continue: the keeper container stopped on its own");
  const limit = `${Math.round(memoryBytes / (1024 * 1024))} MiB`;
  return new SandboxStoppedError(
    `Cannot continue: the keeper container stopped on its own after the kernel's OOM killer acted at the sandbox's ${limit} memory limit; raise policy.resources.memoryBytes or run less at once`,
    { oomKilled: true },
  );
}
