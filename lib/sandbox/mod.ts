/**
 * `@agentcell/docker/contract`: the runtime-neutral sandbox contract, for a host or a backend
 * other than Docker that implements it: what a host asks of a sandbox backend, independent of
 * Docker. Errors ({@linkcode SandboxError} and one subclass per code), the policy and its
 * normalisation, canonical relative paths, the process request and receipts, `run()`'s
 * options and result, the `lines()` reader, files while compute runs, and the backend,
 * reservation and sandbox interfaces.
 *
 * The zod schemas behind the normalisers (`sandboxPolicyInputSchema`,
 * `sandboxProcessRequestSchema`, `sandboxExitReceiptSchema`) are exported by their own files
 * for use inside this library, but not from here: zod's types are not part of the public API.
 *
 * @example
 * ```ts
 * import { normalizePolicy, normalizeProcessRequest } from "./mod.ts";
 *
 * const policy = normalizePolicy({ resources: { cpus: 2, memoryBytes: 2 ** 31, pids: 512 } });
 * const request = normalizeProcessRequest({ executable: "/usr/bin/env" });
 * console.log(policy.execution.kind, request.env.PATH);
 * ```
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
  SandboxError,
  SandboxFramingError,
  SandboxOutputLimitError,
  SandboxQuotaError,
  SandboxStateError,
  SandboxStoppedError,
  type SandboxStoppedErrorOptions,
  SandboxUnsupportedError,
} from "./errors.ts";
export type { SandboxEngineErrorOptions, SandboxErrorCode, SandboxErrorOptions } from "./errors.ts";
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
} from "./ports.ts";
export {
  DEFAULT_CLEANUP_MS,
  DEFAULT_GUEST_FILE_MS,
  DEFAULT_MAX_CONCURRENT_PROCESSES,
  DEFAULT_STARTUP_MS,
  DEFAULT_SHM_BYTES,
  DEFAULT_TMPFS_BYTES,
  DEFAULT_TMPFS_INODES,
  MAX_CPUS,
  MIN_CPUS,
  MIN_PIDS,
  MAX_CONCURRENT_PROCESSES,
  MAX_INFRASTRUCTURE_DEADLINE_MS,
  MAX_PIDS,
  MIN_MEMORY_BYTES,
  MAX_TMPFS_INODES,
  MIN_TMPFS_BYTES,
  normalizePolicy,
} from "./policy.ts";
export {
  DEFAULT_MEMLOCK_BYTES,
  DEFAULT_MSGQUEUE_BYTES,
  DEFAULT_NOFILE,
  DEFAULT_NPROC,
  DEFAULT_SIGPENDING,
  MAX_NOFILE,
  MAX_NPROC,
  MAX_SIGPENDING,
} from "./ulimits.ts";
export type { SandboxUlimits, SandboxUlimitsInput } from "./ulimits.ts";
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
} from "./policy.ts";
export {
  MAX_ALLOWLIST_ENTRIES,
  MAX_EGRESS_CONNECTIONS,
  MAX_RESOLVE_ADDRESSES,
  type SandboxAllowlistNetwork,
  type SandboxAllowlistNetworkSettings,
} from "./network_allowlist.ts";
export {
  MAX_ROUTE_HEADERS,
  MAX_ROUTES,
  MAX_UPSTREAM_CA_CERTIFICATES,
  type SandboxRoute,
  type SandboxRouteHeader,
  type SandboxRouteSettings,
} from "./network_routes.ts";
export { parseSandboxRelativePath } from "./paths.ts";
export {
  DEFAULT_MAX_BUFFERED_OUTPUT_BYTES,
  FIXED_GUEST_ENV,
  MAX_BUFFERED_OUTPUT_BYTES,
  normalizeProcessRequest,
  SANDBOX_KILL_REASONS,
} from "./process.ts";
export type {
  NormalizedSandboxProcessRequest,
  SandboxExitReceipt,
  SandboxKillReason,
  SandboxProcess,
  SandboxProcessRequest,
  SandboxProcessReservation,
  SandboxStderrMode,
} from "./process.ts";
export type { SandboxStats } from "./stats.ts";
export { MAX_PROCESS_COMMAND_CHARS, type SandboxProcessInfo } from "./processes.ts";
export { DEFAULT_TERM, MAX_TERMINAL_CELLS, normalizeTerminalSize } from "./terminal.ts";
export type { NormalizedSandboxTerminal, SandboxTerminalRequest, SandboxTerminalSize } from "./terminal.ts";
export { DEFAULT_MAX_RUN_OUTPUT_BYTES, markRunOutput, MAX_RUN_OUTPUT_BYTES, normalizeRunRequest, runOutputOf } from "./run.ts";
export type { NormalizedRunRequest, SandboxRunOptions, SandboxRunOutput, SandboxRunResult } from "./run.ts";
export { DEFAULT_MAX_LINE_LENGTH, lines, type LinesOptions } from "./lines.ts";
export { DEFAULT_READ_FILE_MAX_BYTES, MAX_READ_FILE_BYTES } from "./guest_files.ts";
export type { SandboxGuestFiles, SandboxReadFileOptions, SandboxWriteFileOptions } from "./guest_files.ts";
export type { SandboxStartOptions } from "./start_options.ts";
export type {
  Sandbox,
  SandboxBackend,
  SandboxRecoveryPort,
  SandboxRecoveryRecord,
  SandboxRequest,
  SandboxReservation,
  SandboxState,
} from "./backend.ts";
export { MAX_TRANSFER_FILE_BYTES, markPartialImport, partialImportOf } from "./transfer.ts";
export type {
  SandboxExportEntry,
  SandboxExportOptions,
  SandboxExportSelection,
  SandboxFileTransfers,
  SandboxImportEntry,
  SandboxImportFailure,
  SandboxImportOptions,
  SandboxPartialImport,
  SandboxTransferOptions,
  SandboxTransferProgress,
  SandboxTransferQuota,
  SandboxTransferReceipt,
} from "./transfer.ts";
