/**
 * The recovery log of one sandbox: the latest immutable {@linkcode DockerSandboxRecoveryRecord},
 * persisted through the caller's {@linkcode SandboxRecoveryPort} *before* each resource effect
 * it announces, so a fresh controller can later reclaim cleanup by exact names and IDs.
 *
 * @module
 */
import type { SandboxRecoveryPort } from "../../sandbox/backend.ts";
import { SandboxAbortedError, SandboxDeadlineError, SandboxStateError } from "../../sandbox/errors.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import type { SandboxResourceRole } from "../names.ts";
import type { DockerSandboxRecoveryRecord, RecoveryResource, RecoveryResourceState } from "./record.ts";
import { reasonOf } from "../../internal/reason.ts";

/** Keeps the latest record and persists every change before the effect it announces. */
export class RecoveryLog {
  #record: DockerSandboxRecoveryRecord;
  readonly #port: SandboxRecoveryPort;
  #limit: () => { timeoutMs: number; signal?: AbortSignal } = () => ({ timeoutMs: 30_000 });

  /**
   * Continue from `record`: the planned record of a new reservation, or a persisted record
   * that recovery parsed and checked.
   */
  constructor(port: SandboxRecoveryPort, record: DockerSandboxRecoveryRecord) {
    this.#port = port;
    this.#record = record;
  }

  /** The port the record is persisted through. */
  get port(): SandboxRecoveryPort {
    return this.#port;
  }

  /** The latest record. */
  get record(): DockerSandboxRecoveryRecord {
    return this.#record;
  }

  /**
   * Bound every later `record()` call: a port that does not settle within `timeoutMs`
   * fails with a `SandboxDeadlineError`, one whose `signal` aborts with a
   * `SandboxAbortedError`. Startup bounds it by its remaining startup time, cleanup by
   * `deadlines.cleanupMs`.
   */
  bound(limit: () => { timeoutMs: number; signal?: AbortSignal }): void {
    this.#limit = limit;
  }

  /** Persist the record as it is (the planned record, before any effect). */
  async persist(): Promise<void> {
    const { timeoutMs, signal } = this.#limit();
    const record = this.#record;
    await raceDeadline(
      Promise.resolve().then(() => this.#port.record(record)).catch((cause) => {
        throw new SandboxAbortedError(`Cannot persist the recovery record: the recovery port failed: ${reasonOf(cause)}`, { cause });
      }),
      {
        timeoutMs,
        signal,
        onTimeout: () => new SandboxDeadlineError(`Cannot persist the recovery record: the recovery port did not settle within ${timeoutMs} ms`),
        onAbort: (reason) => new SandboxAbortedError("Cannot persist the recovery record: aborted", { cause: reason }),
      },
    );
  }

  /** The entry of `role`; an error for a role the record does not hold. */
  resource(role: SandboxResourceRole): RecoveryResource {
    const current = this.#record.resources[role];
    if (!current) throw new SandboxStateError(`Cannot update the recovery record: it holds no ${role} resource`);
    return current;
  }

  /**
   * Move one resource to `state` (with its ID once known) and persist.
   *
   * @throws {SandboxStateError} for a role the record does not hold
   */
  async mark(role: SandboxResourceRole, state: RecoveryResourceState, id?: string): Promise<void> {
    this.replace(role, state, id);
    await this.persist();
  }

  /**
   * Move one resource to `state` without persisting (recovery's reconciliation: the caller
   * persists the advanced record itself). `planned` and `creating` drop the ID; `absentSince`
   * is kept only while the resource stays `creating`.
   *
   * @throws {SandboxStateError} for a role the record does not hold
   */
  replace(role: SandboxResourceRole, state: RecoveryResourceState, id?: string, absentSince?: number): void {
    const current = this.resource(role);
    const keepsId = state === "created" || state === "removing" || state === "removed";
    const nextId = keepsId ? id ?? current.id : undefined;
    const next: RecoveryResource = Object.freeze({
      name: current.name,
      state,
      ...(nextId !== undefined ? { id: nextId } : {}),
      ...(state === "creating" && (absentSince ?? current.absentSince) !== undefined ? { absentSince: absentSince ?? current.absentSince } : {}),
    });
    this.#record = Object.freeze({ ...this.#record, resources: Object.freeze({ ...this.#record.resources, [role]: next }) });
  }

  /** Add a resource (the accessor, created on first export) in state `planned`; no-op when present. */
  add(role: SandboxResourceRole): void {
    if (this.#record.resources[role]) return;
    const name = this.#record.identity.names[role];
    this.#record = Object.freeze({
      ...this.#record,
      resources: Object.freeze({ ...this.#record.resources, [role]: Object.freeze({ name, state: "planned" as const }) }),
    });
  }
}
