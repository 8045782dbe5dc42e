/**
 * `@agentcell/docker`: a hardened Docker sandbox backend for AI agent hosts, on Deno 2,
 * Bun 1 and Node ≥ 23.6.
 *
 * A host program gives an agent a locked-down container on a local Docker Engine (Engine
 * API 1.44–1.52 over a Unix socket it names): one private volume at `/workspace`, one keeper
 * container with a read-only root, a non-root user, no capabilities, no-new-privileges,
 * private PID/IPC/cgroup namespaces, exact CPU/memory/PID limits, ulimits and bounded tmpfs;
 * and a network by intent (`isolated`, `outbound`, or an egress allowlist).
 *
 * - **Processes**: any number per sandbox, one after another or at once, through Docker
 *   exec: `sandbox.run()` for one call, or `reserveProcess(request).start()` for binary
 *   stdin/stdout/stderr as Web Streams; each with its own output bound and deadline and an
 *   exact exit receipt from the Engine.
 * - **Files**: in and out while it runs (`writeFile`/`readFile`, inside the guest as the
 *   sandbox user), a tree in between processes (`importTree`), and out after `stop()`
 *   through a never-started read-only accessor and the strict tar reader (`exportTree`).
 * - **Egress allowlist**: `network: { kind: "allowlist", hosts }` routes the guest through a
 *   hardened proxy container of the sandbox that allows only the listed hosts, checks every
 *   resolved address and reports each decision (`sandbox.egress`).
 * - **Recovery**: every resource is recorded through the caller's recovery port before it is
 *   created, so a fresh process removes exactly what a crashed one left
 *   (`backend.recover()`, `createFileRecoveryStore()`); `controllerLoss: "stop"` stops
 *   compute when its controller dies.
 * - **Warm pool** (`backend.pool()`), read-only **datasets** from local images
 *   (`config.datasets`), **profiles** including gVisor (`linux-x64-gvisor`), and the typed
 *   Engine client with `engine.fetch` for any endpoint.
 *
 * The Agent Client Protocol bridge is the separate entry point `@agentcell/docker/acp`.
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
 * await using sandbox = await reservation.start(); // destroyed at the end of the scope
 * await sandbox.writeFile("work/in.txt", "hello\n");
 * const result = await sandbox.run("/bin/sh", ["-c", "tr a-z A-Z < in.txt > out.txt"]);
 * console.log(result.exit, new TextDecoder().decode(await sandbox.readFile("work/out.txt")));
 * await sandbox.stop(); // compute removed, files kept
 * for await (const entry of await sandbox.exportTree({ kind: "workspace" })) {
 *   console.log(entry.path, entry.size);
 *   await entry.body.cancel();
 * }
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
