/**
 * The bounds of one transfer: its deadline, the caller's signal, the sandbox's own stop or
 * destroy, logical quotas and progress. The first failure wins; it aborts {@linkcode
 * TransferGuard.signal} so the Engine exchange stops, and every later error of the transfer
 * is reported as that first failure.
 *
 * @module
 */
import { SandboxAbortedError, SandboxDeadlineError, type SandboxError, SandboxQuotaError } from "../../sandbox/errors.ts";
import type { NormalizedTransferOptions } from "../../sandbox/transfer_input.ts";
import { setLongTimeout } from "../../internal/long_timer.ts";

/** Deadline, quota, cancellation and progress of one import or export. */
export class TransferGuard {
  readonly #action: string;
  readonly #options: NormalizedTransferOptions;
  readonly #controller = new AbortController();
  readonly #cleanups: (() => void)[] = [];
  #failure: SandboxError | undefined;
  /** Entries admitted. */
  #files = 0;
  /** Declared content bytes admitted (for the byte quota). */
  #admittedBytes = 0;
  /** Content bytes that actually moved. */
  #bytes = 0;

  /**
   * Arms the deadline and the listeners. Fails at once when the deadline already passed or
   * a signal is already aborted.
   *
   * @param action "import files" / "export files", for messages.
   * @param options The validated caller options.
   * @param stops Signals of the sandbox whose `reason` (a `SandboxError`) fails the transfer.
   */
  constructor(action: string, options: NormalizedTransferOptions, stops: readonly AbortSignal[]) {
    this.#action = action;
    this.#options = options;
    const { deadlineAt, deadlineDefault, signal } = options;
    if (deadlineAt !== undefined) {
      const left = deadlineAt - Date.now();
      const reason = deadlineDefault === undefined
        ? `its deadline ${new Date(deadlineAt).toISOString()} passed`
        : `it did not finish within ${deadlineDefault.ms} ms (${deadlineDefault.source}, which applies when options.deadlineAt is not set); ` +
          `pass options.deadlineAt or raise ${deadlineDefault.source}`;
      const expire = () => this.fail(new SandboxDeadlineError(`Cannot ${action}: ${reason}`));
      if (left <= 0) expire();
      else this.#cleanups.push(setLongTimeout(expire, left));
    }
    this.#listen(signal, () => new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: signal!.reason }));
    for (const stop of stops) this.#listen(stop, () => stop.reason as SandboxError);
  }

  #listen(signal: AbortSignal | undefined, reason: () => SandboxError): void {
    if (signal === undefined) return;
    const onAbort = () => this.fail(reason());
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener("abort", onAbort, { once: true });
    this.#cleanups.push(() => signal.removeEventListener("abort", onAbort));
  }

  /** Aborted with the first failure; pass it to the Engine exchange. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The first failure, once there is one. */
  get failure(): SandboxError | undefined {
    return this.#failure;
  }

  /** Entries admitted so far. */
  get files(): number {
    return this.#files;
  }

  /** Content bytes moved so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Record `reason` as the failure unless there is one already, and abort
   * {@linkcode signal} (with the failure that counts) if it is not aborted yet: for
   * failures that arrive from outside the byte flow (deadline, signals, Engine errors).
   *
   * @returns The failure that counts (the first one)
   */
  fail(reason: SandboxError): SandboxError {
    this.#failure ??= reason;
    if (!this.#controller.signal.aborted) {
      this.dispose();
      this.#controller.abort(this.#failure);
    }
    return this.#failure;
  }

  /**
   * Record `reason` as the failure unless there is one already, without aborting
   * {@linkcode signal}: for failures found in the byte flow itself (quotas, progress), which
   * the caller throws into that flow. An import's archive then ends where the error is,
   * after the bytes before it reached the Engine, so the partial-import record stays exact;
   * the deadline and the signals stay armed until the transfer ends.
   */
  #refuse(reason: SandboxError): SandboxError {
    this.#failure ??= reason;
    return this.#failure;
  }

  /** @throws {SandboxError} the failure, if there is one */
  check(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }

  /**
   * Count one entry against the quotas before it moves, then report progress.
   *
   * @param path Its path (for the message).
   * @param size Its declared content bytes (0 for a directory).
   * @throws {SandboxQuotaError} when it would exceed `quota.files` or `quota.bytes` (recorded as the failure)
   */
  admit(path: string, size: number): void {
    this.check();
    const { files, bytes } = this.#options.quota;
    if (files !== undefined && this.#files + 1 > files) {
      throw this.#refuse(new SandboxQuotaError(`Cannot ${this.#action}: entry '${path}' would exceed the quota of ${files} ${files === 1 ? "entry" : "entries"}`));
    }
    if (bytes !== undefined && this.#admittedBytes + size > bytes) {
      const source = this.#options.quotaBytesDefault;
      const fix = source === undefined ? "" : `; the quota is ${source}, which applies when options.quota.bytes is not set: pass options.quota.bytes to set this transfer's own`;
      throw this.#refuse(
        new SandboxQuotaError(
          `Cannot ${this.#action}: entry '${path}' (${size} bytes) would exceed the quota of ${bytes} bytes (${this.#admittedBytes} already admitted)${fix}`,
        ),
      );
    }
    this.#files += 1;
    this.#admittedBytes += size;
    this.#report();
  }

  /** Count content bytes that moved and report progress. */
  moved(bytes: number): void {
    this.#bytes += bytes;
    this.#report();
  }

  #report(): void {
    const onProgress = this.#options.onProgress;
    if (onProgress === undefined || this.#failure !== undefined) return;
    try {
      onProgress({ files: this.#files, bytes: this.#bytes });
    } catch (cause) {
      throw this.#refuse(new SandboxAbortedError(`Cannot ${this.#action}: the onProgress callback threw`, { cause }));
    }
  }

  /**
   * The error to report for `error`: the recorded failure when there is one, else
   * `map(error)`, which becomes the failure.
   */
  settle(error: unknown, map: (error: unknown) => SandboxError): SandboxError {
    return this.#failure ?? this.fail(map(error));
  }

  /** Disarm the timer and listeners (the transfer ended). Idempotent. */
  dispose(): void {
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
  }
}
