/**
 * The processes of one sandbox as its bounds see them: the one-process reservation of policy
 * `processes: "one"`, the execs running at once (`maxConcurrentProcesses`) and the import
 * that excludes process starts.
 *
 * @module
 */
import { SandboxQuotaError, SandboxStateError } from "../../sandbox/errors.ts";
import { MAX_CONCURRENT_PROCESSES, type SandboxProcessMode } from "../../sandbox/policy.ts";

/**
 * What an exec is, for the bounds: `"process"`, a caller's process (`reserveProcess`,
 * `run()`); `"file"`, the backend's reader or writer of `readFile` / `writeFile`. Both count
 * against `maxConcurrentProcesses`; only processes wait for imports. The backend's guard and
 * kill execs are not counted (they are not the caller's).
 */
export type ProcessKind = "process" | "file";

/** The process bounds of one sandbox. */
export class ProcessRegistry {
  readonly #mode: SandboxProcessMode;
  readonly #max: number;
  /** Policy `processes: "one"`: its process was reserved. */
  #reserved = false;
  /** Execs admitted whose receipt was not observed yet. */
  #running = 0;
  /** Of those, the caller's processes. */
  #processes = 0;
  #importing = false;

  /**
   * @param mode Many processes or one.
   * @param maxConcurrent Most execs at once (`policy.maxConcurrentProcesses`).
   */
  constructor(mode: SandboxProcessMode, maxConcurrent: number) {
    this.#mode = mode;
    this.#max = maxConcurrent;
  }

  /** Execs running now (admitted, receipt not yet observed), processes and file execs together. */
  get running(): number {
    return this.#running;
  }

  /**
   * A process is being reserved. Policy `"one"`: the first reservation takes the sandbox's
   * process; policy `"many"`: reservations are inert and unlimited.
   *
   * @throws {SandboxStateError} policy `"one"`: when the process was reserved already or an import runs
   */
  reserve(): void {
    if (this.#mode === "many") return;
    if (this.#reserved) {
      throw new SandboxStateError(
        'Cannot reserve process: this sandbox already reserved its one process (policy.processes "one"); run several commands from that one process (say /bin/sh -c "a; b"), start another sandbox, or leave policy.processes at its default "many"',
      );
    }
    if (this.#importing) throw new SandboxStateError("Cannot reserve process: an import is still running");
    this.#reserved = true;
  }

  /**
   * Count a starting exec; returns its release (idempotent), called once its receipt was
   * observed or its start failed.
   *
   * @throws {SandboxStateError} when `kind` is `"process"` and an import runs
   * @throws {SandboxQuotaError} when `maxConcurrentProcesses` execs already run
   */
  admit(kind: ProcessKind, action: string): () => void {
    if (kind === "process" && this.#importing) {
      throw new SandboxStateError(`Cannot ${action}: an import is running; start processes once importTree settled`);
    }
    if (this.#running >= this.#max) {
      throw new SandboxQuotaError(
        `Cannot ${action}: ${this.#running} processes already run in this sandbox (policy.maxConcurrentProcesses ${this.#max}); ` +
          `wait for one to exit, or raise policy.maxConcurrentProcesses (up to ${MAX_CONCURRENT_PROCESSES})`,
      );
    }
    this.#running += 1;
    if (kind === "process") this.#processes += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running -= 1;
      if (kind === "process") this.#processes -= 1;
    };
  }

  /**
   * An import begins; returns its end. Imports come between processes: none may run.
   *
   * @throws {SandboxStateError} when another import runs; policy `"one"`: once the process was
   *   reserved; policy `"many"`: while a process runs
   */
  beginImport(): () => void {
    if (this.#importing) throw new SandboxStateError("Cannot import files: another import is running");
    if (this.#mode === "one" && this.#reserved) {
      throw new SandboxStateError("Cannot import files: the process was already reserved; imports come before it (policy.processes \"one\")");
    }
    if (this.#processes > 0) {
      throw new SandboxStateError(
        `Cannot import files: ${this.#processes} ${this.#processes === 1 ? "process runs" : "processes run"}; imports run between processes (wait for their exit receipts), or use writeFile while they run`,
      );
    }
    this.#importing = true;
    return () => {
      this.#importing = false;
    };
  }
}
