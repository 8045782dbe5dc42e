/**
 * The recovery log of one sandbox: an immutable record, persisted through the caller's
 * {@linkcode SandboxRecoveryPort} *before* each resource effect (planned → creating →
 * created → removed), so a fresh controller can later reclaim cleanup by exact names and IDs.
 *
 * @module
 */
import type { SandboxRecoveryPort, SandboxRecoveryRecord } from "../sandbox/backend.ts";
import { SandboxAbortedError, SandboxDeadlineError } from "../sandbox/errors.ts";
import type { SandboxResourceNames, SandboxResourceRole } from "./names.ts";

/** Schema name of the records this backend writes. */
export const RECOVERY_SCHEMA = "agentcell.docker-sandbox-recovery.v1";

/** Lifecycle of one resource in the record. */
export type RecoveryResourceState = "planned" | "creating" | "created" | "removed";

/** One resource in a recovery record. */
export interface RecoveryResource {
  /** Exact name, derived from the reservation. */
  readonly name: string;
  /** Exact Engine ID once inspected (volumes are identified by name). */
  readonly id?: string;
  /** Where the resource is in its lifecycle. */
  readonly state: RecoveryResourceState;
}

/** A recovery record of this backend. */
export interface DockerSandboxRecoveryRecord extends SandboxRecoveryRecord {
  /** {@linkcode RECOVERY_SCHEMA}. */
  readonly schema: typeof RECOVERY_SCHEMA;
  /** Backend revision, `engine-1.52-v1-<profile>`. */
  readonly revision: string;
  /** Reservation ID. */
  readonly reservationId: string;
  /** Backend namespace. */
  readonly namespace: string;
  /** Exact image ID. */
  readonly imageDigest: string;
  /** Daemon ID (`GET /info` `ID`), once admitted. */
  readonly daemonId?: string;
  /** Resources by role; `network` only for `outbound`. */
  readonly resources: Readonly<Partial<Record<SandboxResourceRole, RecoveryResource>>>;
}

/** The fixed identity fields of a record. */
export interface RecoveryIdentity {
  /** Backend revision. */
  readonly revision: string;
  /** Reservation ID. */
  readonly reservationId: string;
  /** Backend namespace. */
  readonly namespace: string;
  /** Exact image ID. */
  readonly imageDigest: string;
}

/** Keeps the latest record and persists every change before the effect it announces. */
export class RecoveryLog {
  #record: DockerSandboxRecoveryRecord;
  readonly #port: SandboxRecoveryPort;
  #limit: () => { timeoutMs: number; signal?: AbortSignal } = () => ({ timeoutMs: 30_000 });

  /** Start from the planned record of a reservation. */
  constructor(
    port: SandboxRecoveryPort,
    base: RecoveryIdentity,
    names: SandboxResourceNames,
    roles: readonly SandboxResourceRole[],
  ) {
    this.#port = port;
    const resources: Partial<Record<SandboxResourceRole, RecoveryResource>> = {};
    for (const role of roles) resources[role] = Object.freeze({ name: names[role], state: "planned" });
    this.#record = Object.freeze({ ...base, schema: RECOVERY_SCHEMA, resources: Object.freeze(resources) });
  }

  /** The latest record. */
  get record(): DockerSandboxRecoveryRecord {
    return this.#record;
  }

  /**
   * Bound every later `record()` call: a port that does not settle within `timeoutMs`
   * fails with {@linkcode SandboxDeadlineError}, one whose `signal` aborts with
   * {@linkcode SandboxAbortedError}. Startup bounds it by its remaining startup time,
   * cleanup by `deadlines.cleanupMs`.
   */
  bound(limit: () => { timeoutMs: number; signal?: AbortSignal }): void {
    this.#limit = limit;
  }

  /** Persist the record as it is (the planned record, before any effect). */
  async persist(): Promise<void> {
    const { timeoutMs, signal } = this.#limit();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const bounded = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new SandboxDeadlineError(`Cannot persist the recovery record: the recovery port did not settle within ${timeoutMs} ms`)),
        timeoutMs,
      );
      onAbort = () => reject(new SandboxAbortedError("Cannot persist the recovery record: aborted", { cause: signal?.reason }));
      if (signal?.aborted) onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      await Promise.race([
        Promise.resolve().then(() => this.#port.record(this.#record)).catch((cause) => {
          const reason = cause instanceof Error ? cause.message : String(cause);
          throw new SandboxAbortedError(`Cannot persist the recovery record: the recovery port failed: ${reason}`, { cause });
        }),
        bounded,
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Set fields of the record and persist it. */
  async update(fields: { readonly daemonId?: string }): Promise<void> {
    this.#record = Object.freeze({ ...this.#record, ...fields });
    await this.persist();
  }

  /** Move one resource to `state` (with its ID once known) and persist. */
  async mark(role: SandboxResourceRole, state: RecoveryResourceState, id?: string): Promise<void> {
    const current = this.#record.resources[role];
    if (!current) return;
    const next: RecoveryResource = Object.freeze({ name: current.name, state, ...(id ?? current.id ? { id: id ?? current.id } : {}) });
    this.#record = Object.freeze({ ...this.#record, resources: Object.freeze({ ...this.#record.resources, [role]: next }) });
    await this.persist();
  }

  /** Add a resource (the accessor, created on first export) in state `planned`. */
  add(role: SandboxResourceRole, name: string): void {
    if (this.#record.resources[role]) return;
    this.#record = Object.freeze({
      ...this.#record,
      resources: Object.freeze({ ...this.#record.resources, [role]: Object.freeze({ name, state: "planned" as const }) }),
    });
  }
}
