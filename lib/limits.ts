/**
 * `@agentcell/docker/limits`: the bounds and defaults of the policy, processes, `run()`,
 * files, transfers, datasets and the pool as constants, for a host that sizes its own checks
 * (each constant's own doc says its unit and where it applies). The egress proxy's limits are
 * in `@agentcell/docker/egress`, the recovery record's in `@agentcell/docker/recovery`.
 *
 * @example
 * ```ts
 * import { DEFAULT_CLEANUP_MS, MAX_CPUS } from "./limits.ts";
 *
 * console.log(`cpus up to ${MAX_CPUS}, cleanup within ${DEFAULT_CLEANUP_MS} ms by default`);
 * ```
 *
 * @module
 */
export {
  DEFAULT_CLEANUP_MS,
  DEFAULT_GUEST_FILE_MS,
  DEFAULT_MAX_CONCURRENT_PROCESSES,
  DEFAULT_SHM_BYTES,
  DEFAULT_STARTUP_MS,
  DEFAULT_TMPFS_BYTES,
  DEFAULT_TMPFS_INODES,
  MAX_CONCURRENT_PROCESSES,
  MAX_CPUS,
  MAX_INFRASTRUCTURE_DEADLINE_MS,
  MAX_PIDS,
  MAX_TMPFS_INODES,
  MIN_CPUS,
  MIN_MEMORY_BYTES,
  MIN_PIDS,
  MIN_TMPFS_BYTES,
} from "./sandbox/policy.ts";
export {
  DEFAULT_MEMLOCK_BYTES,
  DEFAULT_MSGQUEUE_BYTES,
  DEFAULT_NOFILE,
  DEFAULT_NPROC,
  DEFAULT_SIGPENDING,
  MAX_NOFILE,
  MAX_NPROC,
  MAX_SIGPENDING,
} from "./sandbox/ulimits.ts";
export { MAX_ALLOWLIST_CONFIG_BYTES, MAX_ALLOWLIST_ENTRIES, MAX_EGRESS_CONNECTIONS, MAX_RESOLVE_ADDRESSES } from "./sandbox/network_allowlist.ts";
export { MAX_ROUTE_HEADERS, MAX_ROUTES, MAX_UPSTREAM_CA_CERTIFICATES } from "./sandbox/network_routes.ts";
export { DEFAULT_MAX_BUFFERED_OUTPUT_BYTES, MAX_BUFFERED_OUTPUT_BYTES } from "./sandbox/process.ts";
export { DEFAULT_MAX_RUN_OUTPUT_BYTES, MAX_RUN_OUTPUT_BYTES } from "./sandbox/run.ts";
export { DEFAULT_MAX_LINE_LENGTH } from "./sandbox/lines.ts";
export { DEFAULT_READ_FILE_MAX_BYTES, MAX_READ_FILE_BYTES } from "./sandbox/guest_files.ts";
export { MAX_TRANSFER_FILE_BYTES } from "./sandbox/transfer.ts";
export { MAX_GUEST_ID } from "./docker/config.ts";
export { DATASETS_PATH, MAX_DATASET_SUBPATH_LENGTH, MAX_DATASETS } from "./docker/datasets/configuration.ts";
export { MAX_POOL_SIZE } from "./docker/pool.ts";
export { DEFAULT_EXPORT_MODE_MASK } from "./docker/files/export_to_directory.ts";
export { GUEST_DEADLINE_GRACE_MS } from "./docker/keeper/guards.ts";
