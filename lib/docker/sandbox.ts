/**
 * A running Docker sandbox: its exact resources, its state, the one process it may run,
 * and `stop()` / `destroy()`.
 *
 * @module
 */
import type { Sandbox, SandboxState } from "../sandbox/backend.ts";
import { type SandboxError, SandboxStateError, SandboxStoppedError } from "../sandbox/errors.ts";
import type { SandboxPolicy } from "../sandbox/policy.ts";
import { normalizeProcessRequest, type SandboxProcessRequest, type SandboxProcessReservation } from "../sandbox/process.ts";
import type { DockerEngine } from "../engine/client.ts";
import { removeContainer } from "../engine/containers.ts";
import { removeNetwork } from "../engine/networks.ts";
import { removeVolume } from "../engine/volumes.ts";
import type { AcquiredSandbox } from "./acquire.ts";
import type { DockerSandboxBackendSettings } from "./config.ts";
import type { SandboxResourceNames } from "./names.ts";
import { DockerProcessReservation } from "./process.ts";
import { asSandboxError } from "./_engine_errors.ts";

/** The exact resources of a sandbox, for callers that verify cleanup. */
export interface DockerSandboxResources {
  /** Keeper container ID. */
  readonly keeperId: string;
  /** Volume name. */
  readonly volumeName: string;
  /** Network ID (`outbound`), else `undefined`. */
  readonly networkId: string | undefined;
  /** Export accessor container ID once created, else `undefined`. */
  readonly accessorId: string | undefined;
}

/** The pieces a process needs from its sandbox (kept narrow on purpose). */
export interface SandboxHost {
  readonly engine: DockerEngine;
  readonly keeperId: string;
  readonly user: { readonly uid: number; readonly gid: number };
  readonly policy: SandboxPolicy;
  /** Aborted with the stop cause as soon as compute removal begins. */
  readonly stopping: AbortSignal;
  /** Settles once the keeper container is gone. */
  readonly computeRemoved: Promise<void>;
  /** Stop the whole sandbox because of `cause` (idempotent). */
  stopFor(cause: SandboxError): Promise<void>;
}

/**
 * A sandbox on a Docker Engine. Made by `reservation.start()`; see the `Sandbox` contract.
 *
 * - `stop()` force-removes the exact keeper container ID and keeps the volume (files can
 *   still be exported). The running process's exit receipt becomes
 *   `{ kind: "unavailable", reason: "sandbox_stopped" }` unless it was already observed.
 * - `destroy()` stops, then removes the exact accessor, network and volume; retryable after
 *   a partial failure; "already gone" (404) counts as done. No prune, label scan or name
 *   fallback.
 * - `await using sandbox = await reservation.start()` destroys at scope exit.
 */
export class DockerSandbox implements Sandbox {
  /** Reservation ID. */
  readonly id: string;
  readonly #engine: DockerEngine;
  readonly #settings: DockerSandboxBackendSettings;
  readonly #policy: SandboxPolicy;
  readonly #acquired: AcquiredSandbox;
  readonly #names: SandboxResourceNames;
  #state: SandboxState = "running";
  #stopCause: SandboxError | undefined;
  #stopping = new AbortController();
  #stopTask: Promise<void> | undefined;
  #computeRemoved: { promise: Promise<void>; resolve: () => void };
  #processTaken = false;
  #accessorId: string | undefined;
  #removed = { keeper: false, network: false, volume: false, accessor: false };
  #destroyTask: Promise<void> | undefined;

  /** @internal Made by the reservation; not for callers. */
  constructor(
    id: string,
    engine: DockerEngine,
    settings: DockerSandboxBackendSettings,
    policy: SandboxPolicy,
    names: SandboxResourceNames,
    acquired: AcquiredSandbox,
  ) {
    this.id = id;
    this.#engine = engine;
    this.#settings = settings;
    this.#policy = policy;
    this.#names = names;
    this.#acquired = acquired;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#computeRemoved = { promise, resolve };
  }

  /** `running`, `stopped` (compute removed or being removed) or `destroyed`. */
  get state(): SandboxState {
    return this.#state;
  }

  /** Why compute stopped: `undefined` while running; a `SandboxStoppedError` for `stop()`. */
  get stopCause(): SandboxError | undefined {
    return this.#stopCause;
  }

  /** Exact resource identities (for verifying cleanup). */
  get resources(): DockerSandboxResources {
    return {
      keeperId: this.#acquired.keeperId,
      volumeName: this.#acquired.volumeName,
      networkId: this.#acquired.networkId,
      accessorId: this.#accessorId,
    };
  }

  /** Resource names derived from the reservation. */
  get names(): SandboxResourceNames {
    return this.#names;
  }

  /**
   * Reserve the sandbox's one process. Inert: validates and returns; `start()` runs it.
   *
   * @throws {SandboxConfigurationError} for an invalid request or a conflicting HOME, TMPDIR
   *   or PATH override
   * @throws {SandboxStateError} when a process was already reserved
   * @throws {SandboxStoppedError} when compute is stopped
   */
  reserveProcess(request: SandboxProcessRequest): SandboxProcessReservation {
    const normalized = normalizeProcessRequest(request);
    if (this.#state !== "running") {
      throw this.#stopCause ?? new SandboxStoppedError("Cannot reserve process: the sandbox is stopped");
    }
    if (this.#processTaken) throw new SandboxStateError("Cannot reserve process: this sandbox already reserved its one process");
    this.#processTaken = true;
    return new DockerProcessReservation(normalized, this.#host());
  }

  /**
   * Force-remove the exact keeper container; the volume (and its files) stays.
   * Idempotent; a failed removal may be retried by calling again.
   *
   * @throws {SandboxEngineError} when the Engine fails to remove it
   */
  stop(): Promise<void> {
    return this.#stopFor(new SandboxStoppedError("Cannot continue: the sandbox was stopped"));
  }

  /**
   * Stop, then remove the accessor, the network and the volume by exact identity.
   * Retryable after a partial failure; 404 counts as done.
   *
   * @throws {SandboxEngineError} when a removal fails (call again to retry)
   */
  destroy(): Promise<void> {
    if (this.#state === "destroyed") return Promise.resolve();
    this.#destroyTask ??= this.#destroy().finally(() => {
      this.#destroyTask = undefined;
    });
    return this.#destroyTask;
  }

  /** `await using` support: destroys. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.destroy();
  }

  #host(): SandboxHost {
    return {
      engine: this.#engine,
      keeperId: this.#acquired.keeperId,
      user: this.#settings.user,
      policy: this.#policy,
      stopping: this.#stopping.signal,
      computeRemoved: this.#computeRemoved.promise,
      stopFor: (cause) => this.#stopFor(cause),
    };
  }

  #stopFor(cause: SandboxError): Promise<void> {
    if (this.#removed.keeper) return Promise.resolve();
    if (this.#state === "running") {
      this.#state = "stopped";
      this.#stopCause = cause;
      this.#stopping.abort(cause);
    }
    this.#stopTask ??= this.#removeKeeper().finally(() => {
      this.#stopTask = undefined;
    });
    return this.#stopTask;
  }

  async #removeKeeper(): Promise<void> {
    const log = this.#acquired.log;
    try {
      await removeContainer(this.#engine, this.#acquired.keeperId, { timeoutMs: this.#policy.deadlines.cleanupMs });
    } catch (error) {
      throw asSandboxError(error, "stop sandbox");
    }
    this.#removed.keeper = true;
    this.#computeRemoved.resolve();
    await log.mark("keeper", "removed");
  }

  async #destroy(): Promise<void> {
    await this.#stopFor(new SandboxStoppedError("Cannot continue: the sandbox was destroyed"));
    const timeoutMs = this.#policy.deadlines.cleanupMs;
    const log = this.#acquired.log;
    try {
      if (this.#accessorId && !this.#removed.accessor) {
        await removeContainer(this.#engine, this.#accessorId, { timeoutMs });
        this.#removed.accessor = true;
        await log.mark("accessor", "removed");
      }
      if (this.#acquired.networkId && !this.#removed.network) {
        await removeNetwork(this.#engine, this.#acquired.networkId, { timeoutMs });
        this.#removed.network = true;
        await log.mark("network", "removed");
      }
      if (!this.#removed.volume) {
        await removeVolume(this.#engine, this.#acquired.volumeName, { timeoutMs });
        this.#removed.volume = true;
        await log.mark("volume", "removed");
      }
    } catch (error) {
      throw asSandboxError(error, "destroy sandbox");
    }
    this.#state = "destroyed";
  }
}
