/**
 * The Docker backend's answer to `policy.workspaceDiskQuota`: overlay2 on ext4 gives a named
 * volume no size bound (measured on the build machines, 2026-12-01), so a required hard
 * quota is refused at `reserve()`; `best_effort` (and none) pass.
 *
 * @module
 */
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { SandboxWorkspaceDiskQuota } from "../../sandbox/policy.ts";

/**
 * Refuses a policy that requires a hard workspace disk quota.
 *
 * The Docker backend cannot enforce such a quota: the workspace is a named volume on the
 * engine's storage, and neither CPU, memory and PID limits nor logical transfer quotas bound
 * what the guest writes there. A backend calls this during inert reservation, before any
 * resource is created. `{ kind: "not_requested" }` (the default) passes.
 *
 * @param policy A policy, normalised or not; only `workspaceDiskQuota` is read.
 * @throws {SandboxUnsupportedError} When `policy.workspaceDiskQuota.kind` is `"required"`.
 *
 * @example
 * ```ts
 * import { normalizePolicy } from "../../sandbox/policy.ts";
 * import { assertSupportedDiskQuota } from "./disk_quota.ts";
 *
 * const policy = normalizePolicy({ resources: { cpus: 1, memoryBytes: 2 ** 30, pids: 64 } });
 * assertSupportedDiskQuota(policy); // passes: no quota requested
 * ```
 */
export function assertSupportedDiskQuota(
  policy: { readonly workspaceDiskQuota?: SandboxWorkspaceDiskQuota },
): void {
  if (policy.workspaceDiskQuota?.kind !== "required") return;
  throw new SandboxUnsupportedError(
    `Cannot reserve sandbox: policy.workspaceDiskQuota requires a hard workspace disk quota, which ` +
      "this backend cannot enforce (CPU, memory and PID limits and transfer quotas do not " +
      "bound what the guest writes to the workspace volume)",
  );
}
