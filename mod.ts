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
 * - **Guest servers**: `sandbox.connect(port)` (a byte duplex to the guest's loopback),
 *   `sandbox.fetch(port, request)` and `sandbox.forwardPort(port)` (a host listener to open
 *   in a browser), through a hardened relay container of the sandbox: no published port, no
 *   host route, under every network policy.
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
 * The main entry holds what a host program needs every day: the backend, the sandbox, its
 * processes and `run()`, files, the policy, the errors and the file recovery store. The
 * rest has entries of its own: `@agentcell/docker/recovery` (records and what `recover()`
 * returns), `@agentcell/docker/egress` (the allowlist's events), `@agentcell/docker/engine`
 * (the Engine client and `engine.fetch`), `@agentcell/docker/tar` (the strict tar reader and
 * writer), `@agentcell/docker/admission` (the profile table and daemon checks),
 * `@agentcell/docker/limits` (the bounds and defaults as constants; egress's and
 * recovery's are in their own entries),
 * `@agentcell/docker/contract` (the runtime-neutral contract with its normalisers, for other
 * backends) and `@agentcell/docker/acp` (the Agent Client Protocol bridge).
 *
 * @module
 */
export {
  SandboxAbandonedOutputError,
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxConflictError,
  SandboxDeadlineError,
  SandboxEngineError,
  type SandboxEngineErrorOptions,
  SandboxError,
  type SandboxErrorCode,
  type SandboxErrorOptions,
  SandboxFramingError,
  SandboxOutputLimitError,
  SandboxQuotaError,
  SandboxStateError,
  SandboxStoppedError,
  type SandboxStoppedErrorOptions,
  SandboxUnsupportedError,
} from "./lib/sandbox/errors.ts";
export type {
  SandboxControllerLoss,
  SandboxDeadlines,
  SandboxDeadlinesInput,
  SandboxExecutionPolicy,
  SandboxNetwork,
  SandboxNetworkSettings,
  SandboxPolicy,
  SandboxPolicyInput,
  SandboxProcessMode,
  SandboxResources,
  SandboxTmpfs,
  SandboxTmpfsInput,
  SandboxWorkspaceDiskQuota,
} from "./lib/sandbox/policy.ts";
export type { SandboxUlimits, SandboxUlimitsInput } from "./lib/sandbox/ulimits.ts";
export type { SandboxAllowlistNetwork, SandboxAllowlistNetworkSettings } from "./lib/sandbox/network_allowlist.ts";
export type { SandboxRoute, SandboxRouteHeader, SandboxRouteSettings } from "./lib/sandbox/network_routes.ts";
export type { DockerSandboxSecrets, DockerSandboxStartOptions } from "./lib/docker/egress/secrets.ts";
export {
  FIXED_GUEST_ENV,
  SANDBOX_KILL_REASONS,
  type SandboxExitReceipt,
  type SandboxKillReason,
  type SandboxProcess,
  type SandboxProcessRequest,
  type SandboxProcessReservation,
  type SandboxStderrMode,
} from "./lib/sandbox/process.ts";
export type { SandboxContainerStats, SandboxStats } from "./lib/sandbox/stats.ts";
export { MAX_PROCESS_COMMAND_CHARS, type SandboxProcessInfo } from "./lib/sandbox/processes.ts";
export {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FETCH_LIMITS,
  DEFAULT_FORWARD_OPTIONS,
  MAX_SANDBOX_CONNECTIONS,
  type SandboxConnection,
  SandboxConnectionError,
  type SandboxConnectionFailure,
  type SandboxConnectOptions,
  type SandboxFetchOptions,
  type SandboxForwardEvent,
  type SandboxForwardOptions,
  type SandboxPortForward,
  type SandboxPorts,
} from "./lib/sandbox/ports.ts";
export {
  DEFAULT_STATS_INTERVAL_MS,
  MAX_STATS_INTERVAL_MS,
  MIN_STATS_INTERVAL_MS,
  type SandboxStatsStreamOptions,
} from "./lib/docker/stats_stream.ts";
export { DEFAULT_TERM, type SandboxTerminalRequest, type SandboxTerminalSize } from "./lib/sandbox/terminal.ts";
export { runOutputOf, type SandboxRunOptions, type SandboxRunOutput, type SandboxRunResult } from "./lib/sandbox/run.ts";
export { lines, type LinesOptions } from "./lib/sandbox/lines.ts";
export type { SandboxGuestFiles, SandboxReadFileOptions, SandboxWriteFileOptions } from "./lib/sandbox/guest_files.ts";
export type { SandboxStartOptions } from "./lib/sandbox/start_options.ts";
export type {
  Sandbox,
  SandboxBackend,
  SandboxRecoveryPort,
  SandboxRecoveryRecord,
  SandboxRequest,
  SandboxReservation,
  SandboxState,
} from "./lib/sandbox/backend.ts";
export {
  partialImportOf,
  type SandboxExportEntry,
  type SandboxExportOptions,
  type SandboxExportSelection,
  type SandboxFileTransfers,
  type SandboxImportEntry,
  type SandboxImportFailure,
  type SandboxImportOptions,
  type SandboxPartialImport,
  type SandboxTransferOptions,
  type SandboxTransferProgress,
  type SandboxTransferQuota,
  type SandboxTransferReceipt,
} from "./lib/sandbox/transfer.ts";
export { createDockerSandboxBackend, type DockerSandboxBackend, type DockerSandboxRequest, type DockerSandboxReservation } from "./lib/docker/backend.ts";
export { DockerWorkspaceSnapshot } from "./lib/docker/snapshots/snapshot.ts";
export type { DockerRemoveSnapshotOptions, SnapshotListingStore } from "./lib/docker/snapshots/manage.ts";
export type { DockerSnapshotTransferOptions } from "./lib/docker/snapshots/portable.ts";
export {
  DEFAULT_OPEN_NAMESPACE,
  DEFAULT_OPEN_RESOURCES,
  DEFAULT_OPEN_USER,
  OPEN_SPILL_PARENT,
  OPEN_SPILL_PREFIX,
  openSandbox,
  type OpenSandboxOptions,
  type OpenSandboxPolicyInput,
} from "./lib/docker/open_sandbox.ts";
export { prepareImage } from "./lib/docker/prepare_image.ts";
export type { DockerSandboxBackendConfig, DockerSandboxBackendSettings } from "./lib/docker/config.ts";
export type { DockerSandboxDataset } from "./lib/docker/datasets/configuration.ts";
export type { DockerSandboxProfile } from "./lib/docker/profiles.ts";
export { DockerSandbox, type DockerSandboxResources, type DockerSnapshotOptions } from "./lib/docker/sandbox.ts";
export {
  createDockerSandboxPool,
  type DockerSandboxPool,
  type DockerSandboxPoolBackend,
  type DockerSandboxPoolOptions,
  type DockerSandboxPoolReservation,
} from "./lib/docker/pool.ts";
export { DockerProcess, DockerProcessReservation } from "./lib/docker/process/process.ts";
export { importDirectory, type ImportDirectoryLinks, type ImportDirectoryOptions } from "./lib/docker/files/import_directory.ts";
export { exportToDirectory, type ExportToDirectoryOptions } from "./lib/docker/files/export_to_directory.ts";
export { createFileRecoveryStore, type FileRecoveryStore } from "./lib/docker/recovery/store.ts";
