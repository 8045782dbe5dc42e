/**
 * `@agentcell/docker/recovery`: what crash recovery reads and returns, for a host that keeps
 * its own records or inspects them. Every resource of a sandbox is named, labelled and
 * recorded before it is created ({@linkcode DockerSandboxRecoveryRecord}, schema
 * {@linkcode RECOVERY_SCHEMA}); `backend.recover(record, port)` reconciles a record with the
 * Engine and returns a {@linkcode DockerSandboxRecovery} whose `cleanup()` removes exactly
 * what the record owns. The file store itself, `createFileRecoveryStore`, is on the main
 * entry.
 *
 * @module
 */
export {
  backendRevision,
  type DockerSandboxRecoveryRecord,
  MAX_RECOVERY_RECORD_BYTES,
  RECOVERY_SCHEMA,
  type RecoveryIdentity,
  type RecoveryResource,
  type RecoveryResourceState,
} from "./record.ts";
export {
  checkRecoveryRecord,
  type DockerSandboxCleanupReport,
  type DockerSandboxRecoverOptions,
  type DockerSandboxRecovery,
  type DockerSandboxSquattedName,
} from "./recover.ts";
export type { RecoveryLockOwner, RecoveryLocks, RecoveryLockState } from "./lock.ts";
export type { StoredRecoveryRecord } from "./store.ts";
export { type ReclaimOutcome, type ReclaimReport, reclaimRecords } from "./reclaim.ts";
export { LABELS, type SandboxResourceNames, type SandboxResourceRole } from "../names.ts";
