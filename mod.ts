/**
 * `@agentcell/docker`: a hardened Docker sandbox backend for AI agent hosts, on Deno 2,
 * Bun 1 and Node ≥ 23.6.
 *
 * A host program gives an agent a locked-down container on a local Docker Engine (Engine
 * API 1.44–1.52 over a Unix socket): one private volume at `/workspace`, one keeper
 * container with a read-only root, a non-root user, no capabilities, no-new-privileges,
 * private PID/IPC/cgroup namespaces and exact CPU/memory/PID limits; one agent process with
 * binary stdout/stderr/stdin as Web Streams and an exact exit receipt; files in as a tar
 * stream before the process runs (`importTree`) and out through a never-started read-only
 * accessor after it stopped (`exportTree`); and cleanup of exactly what was created.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a local image ID
 * import { createDockerSandboxBackend } from "@agentcell/docker";
 *
 * const backend = createDockerSandboxBackend({
 *   profile: "linux-x64-cgroupfs",
 *   endpoint: "unix:///var/run/docker.sock",
 *   namespace: "my-app",
 *   spillDirectory: "/var/lib/my-app/spill",
 *   imageDigest: "sha256:<64 lowercase hex digits>",
 *   user: { uid: 65534, gid: 65534 },
 * });
 * const reservation = backend.reserve(
 *   { policy: { resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 } } },
 *   { record: async (record) => { /* persist before effects *\/ } },
 * );
 * await using sandbox = await reservation.start();
 * const agent = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "cat"] }).start();
 * await agent.stdin.close();
 * console.log(await new Response(agent.stdout).text(), await agent.exit);
 * ```
 *
 * @module
 */
export * from "./lib/sandbox/mod.ts";
export {
  createDockerSandboxBackend,
  type DockerSandboxBackend,
  type DockerSandboxReservation,
} from "./lib/docker/backend.ts";
export {
  canonicalPathDefect,
  type DockerSandboxBackendConfig,
  type DockerSandboxBackendSettings,
  MAX_GUEST_ID,
} from "./lib/docker/config.ts";
export {
  DATASETS_PATH,
  type DockerSandboxDataset,
  MAX_DATASET_SUBPATH_LENGTH,
  MAX_DATASETS,
} from "./lib/docker/datasets/configuration.ts";
export { IMAGE_MOUNT_API_VERSION } from "./lib/docker/datasets/admission.ts";
export { IMAGE_MOUNT_ADVISORY } from "./lib/docker/datasets/warnings.ts";
export { DockerSandbox, type DockerSandboxResources } from "./lib/docker/sandbox.ts";
export {
  DEFAULT_EGRESS_EVENT_CAPACITY,
  DockerEgressEvents,
  type EgressEvent,
  MAX_EGRESS_LINE_LENGTH,
} from "./lib/docker/egress/events.ts";
export { EGRESS_ALLOWLIST_API_VERSION } from "./lib/docker/egress/admission.ts";
export { PROXY_LIMITS, PROXY_PORT } from "./lib/docker/egress/proxy_container.ts";
export { EGRESS_NO_PROXY } from "./lib/docker/egress/guest_env.ts";
export {
  createDockerSandboxPool,
  type DockerSandboxPool,
  type DockerSandboxPoolOptions,
  MAX_POOL_SIZE,
  type DockerSandboxPoolBackend,
  type DockerSandboxPoolReservation,
} from "./lib/docker/pool.ts";
export { DockerProcess, DockerProcessReservation } from "./lib/docker/process/process.ts";
export { importDirectory } from "./lib/docker/files/import_directory.ts";
export { DEFAULT_EXPORT_MODE_MASK, exportToDirectory, type ExportToDirectoryOptions } from "./lib/docker/files/export_to_directory.ts";
export {
  DOCKER_SANDBOX_PROFILES,
  type DockerSandboxProfile,
  type DockerSandboxProfileRow,
} from "./lib/docker/profiles.ts";
export { admitDaemon, admitHost, type DaemonAdmission, unmetDaemonRequirements } from "./lib/docker/admission/daemon.ts";
export { LABELS, type SandboxResourceNames, type SandboxResourceRole } from "./lib/docker/names.ts";
export {
  backendRevision,
  type DockerSandboxRecoveryRecord,
  MAX_RECOVERY_RECORD_BYTES,
  RECOVERY_SCHEMA,
  type RecoveryIdentity,
  type RecoveryResource,
  type RecoveryResourceState,
} from "./lib/docker/recovery/record.ts";
export {
  checkRecoveryRecord,
  type DockerSandboxCleanupReport,
  type DockerSandboxRecoverOptions,
  type DockerSandboxRecovery,
  type DockerSandboxSquattedName,
} from "./lib/docker/recovery/recover.ts";
export type { RecoveryLockOwner, RecoveryLocks, RecoveryLockState } from "./lib/docker/recovery/lock.ts";
export { GUEST_DEADLINE_GRACE_MS } from "./lib/docker/keeper/guards.ts";
export { createFileRecoveryStore, type FileRecoveryStore, type StoredRecoveryRecord } from "./lib/docker/recovery/store.ts";
export {
  DockerEngine,
  type DockerEngineMethod,
  type DockerEngineQuery,
  type DockerEngineReply,
  type ReplySchema,
  type DockerEngineRequestOptions,
  type DockerEngineStreamOptions,
} from "./lib/engine/client.ts";
export type { DockerEngineFetchBody, DockerEngineFetchInit } from "./lib/engine/fetch.ts";
export { DockerEngineError, type DockerEngineErrorCode, type DockerEngineErrorOptions } from "./lib/engine/errors.ts";
export { MAX_SOCKET_PATH_BYTES, parseEngineEndpoint } from "./lib/engine/endpoint.ts";
export { MAX_API_VERSION, MIN_API_VERSION, negotiateApiVersion } from "./lib/engine/api_version.ts";
export type { EngineInfo, EngineVersion } from "./lib/engine/system.ts";
export * from "./lib/engine/http/mod.ts";
export * from "./lib/tar/mod.ts";
