/**
 * A running Docker sandbox: its exact resources, its state, its processes (through a
 * registry of their bounds), files while it runs, and `stop()` / `destroy()`.
 *
 * @module
 */
import type { Sandbox, SandboxState } from "../sandbox/backend.ts";
import { SandboxEngineError, type SandboxError, SandboxStateError, SandboxStoppedError } from "../sandbox/errors.ts";
import {
  normalizeReadFile,
  normalizeWriteFile,
  type SandboxGuestFiles,
  type SandboxReadFileOptions,
  type SandboxWriteFileOptions,
} from "../sandbox/guest_files.ts";
import type { SandboxPolicy } from "../sandbox/policy.ts";
import {
  DEFAULT_MAX_BUFFERED_OUTPUT_BYTES,
  type NormalizedSandboxProcessRequest,
  normalizeProcessRequest,
  type SandboxProcessRequest,
} from "../sandbox/process.ts";
import { normalizeRunRequest, type SandboxRunOptions, type SandboxRunResult } from "../sandbox/run.ts";
import {
  markPartialImport,
  type SandboxExportEntry,
  type SandboxExportOptions,
  type SandboxExportSelection,
  type SandboxFileTransfers,
  type SandboxImportEntry,
  type SandboxImportOptions,
  type SandboxTransferReceipt,
} from "../sandbox/transfer.ts";
import { normalizeTransferOptions, parseExportSelection } from "../sandbox/transfer_input.ts";
import type { DockerEngine } from "../engine/client.ts";
import { inspectContainer, topContainer } from "../engine/containers.ts";
import { containerStats } from "../engine/container_stats.ts";
import type { SandboxStats } from "../sandbox/stats.ts";
import type { SandboxProcessInfo } from "../sandbox/processes.ts";
import { processesOf, TOP_PS_ARGS, topReplyBytes } from "./processes.ts";
import { sandboxStatsOf } from "./stats.ts";
import { sandboxStatsStream, type SandboxStatsStreamOptions, statsIntervalOf } from "./stats_stream.ts";
import { watchContainer } from "./keeper/container_watch.ts";
import { keeperStoppedError } from "./keeper/keeper_stopped.ts";
import type { AcquiredSandbox } from "./acquire.ts";
import type { DockerSandboxBackendSettings } from "./config.ts";
import { guardLoss } from "./keeper/guards.ts";
import { armExecutionDeadline } from "./process/execution_deadline.ts";
import { resourceLabels, type SandboxResourceNames } from "./names.ts";
import { DockerProcessReservation, type ProcessHost } from "./process/process.ts";
import { confineWorkingDirectory } from "./guest_paths.ts";
import { ProcessRegistry } from "./process/registry.ts";
import { runToEnd } from "./process/run.ts";
import { asSandboxError, isNotFound, unansweredError } from "./_engine_errors.ts";
import { PROXY_LIMITS } from "./egress/proxy_container.ts";
import { RELAY_LIMITS } from "./ports/relay_container.ts";
import { type AccessorContext, createAccessor, verifyAccessor } from "./files/accessor.ts";
import { removeAllRecorded, removeRecorded } from "./recovery/resources.ts";
import { claimExportSlot } from "./files/_export_slot.ts";
import { openExport } from "./files/export_tree.ts";
import { importTreeInto } from "./files/import_tree.ts";
import { readGuestFile, writeGuestFile } from "./files/guest_files.ts";
import { TransferGuard } from "./files/_transfer_guard.ts";
import { raceDeadline } from "../streams/deadline.ts";
import type { DockerEgressEvents } from "./egress/events.ts";
import { proxyStoppedError } from "./egress/proxy_stopped.ts";
import { computeContainers, pauseAll, unpauseAll } from "./snapshots/pause.ts";
import { type DockerWorkspaceSnapshot, newSnapshot } from "./snapshots/snapshot.ts";
import { copyTree } from "./snapshots/copier.ts";
import { copyBound, type SnapshotByteBound, snapshotByteBound } from "./snapshots/byte_bound.ts";
import { WORK_DIRECTORY } from "./guest_paths.ts";

/** Options of `sandbox.snapshot()`. */
export interface DockerSnapshotOptions {
  /** Deadline of the whole snapshot (the copy included), milliseconds. @default 300000 */
  readonly timeoutMs?: number;
  /**
   * Most bytes of regular-file content the snapshot may hold (a non-negative safe integer),
   * counted at apparent size — a sparse file at its full length, as the copy writes it out
   * whole. Checked before the copy writes anything (the tree is measured with compute
   * paused, so the measure is exact for the copy); past it the snapshot fails with
   * `SandboxQuotaError` and nothing is kept. @default `config.defaultExportQuota.bytes`
   * (the bound of `snapshot.export()` and `importSnapshot()`), or none when that is unset
   */
  readonly maxBytes?: number;
}
import { DockerSandboxPorts } from "./ports/ports.ts";
import type { SandboxConnection, SandboxConnectOptions, SandboxFetchOptions, SandboxForwardOptions, SandboxPortForward, SandboxPorts } from "../sandbox/ports.ts";
import { runDestroySteps } from "./_destroy_steps.ts";

/** The exact resources of a sandbox, for callers that verify cleanup. */
export interface DockerSandboxResources {
  /** Keeper container ID. */
  readonly keeperId: string;
  /** Volume name. */
  readonly volumeName: string;
  /** Network ID (`outbound`; for `allowlist` the internal network), else `undefined`. */
  readonly networkId: string | undefined;
  /** Export accessor container ID once created, else `undefined`. */
  readonly accessorId: string | undefined;
  /** Egress proxy container ID (`allowlist`), else `undefined`. */
  readonly proxyId?: string;
  /** Egress bridge network ID (`allowlist`), else `undefined`. */
  readonly egressId?: string;
  /** Port relay container ID once created (the first `connect()`), else `undefined`. */
  readonly relayId?: string;
}

/**
 * A sandbox on a Docker Engine. Made by `reservation.start()`; see the `Sandbox` contract.
 *
 * - `reserveProcess(request).start()` and `run()` start processes, many at once (policy
 *   `processes`, `maxConcurrentProcesses`); `writeFile` / `readFile` move single files
 *   through the guest while compute runs.
 * - `stop()` force-removes the exact keeper container ID and keeps the volume (files can
 *   still be exported). Every running process's exit receipt becomes
 *   `{ kind: "unavailable", reason: "sandbox_stopped" }` unless it was already observed.
 * - `destroy()` stops, then removes the exact accessor, network and volume; retryable after
 *   a partial failure; "already gone" (404) counts as done. No prune, label scan or name
 *   fallback.
 * - `await using sandbox = await reservation.start()` destroys at scope exit.
 * - With policy `network: { kind: "allowlist" }`, `egress` yields the proxy's decisions;
 *   `stop()` also removes the proxy container, `destroy()` both networks, and a proxy that
 *   stops on its own stops the sandbox.
 * - `connect()`, `fetch()` and `forwardPort()` reach guest servers through the sandbox's port
 *   relay (`ports/`, created on the first connect); `stop()` ends them and removes the relay.
 * - `importTree()` writes trees between processes (policy `processes: "one"`: before the
 *   process is reserved); `exportTree()` reads them after `stop()` through a never-started
 *   read-only accessor container.
 */
export class DockerSandbox implements Sandbox, SandboxFileTransfers, SandboxGuestFiles, SandboxPorts {
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
  readonly #computeRemoved: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  /** Resolved when the first compute removal attempt ended (removed or failed). */
  readonly #stopEnded: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  /** The processes' bounds: the one process, concurrency, imports. */
  readonly #processes: ProcessRegistry;
  /** What processes see of this sandbox. */
  readonly #host: ProcessHost;
  /** The execution deadline, armed by the first process. */
  #deadline: Promise<void> | undefined;
  #accessorId: string | undefined;
  /** The accessor being created and checked (shared by concurrent exports). */
  #accessorTask: Promise<string> | undefined;
  /** Aborted once `destroy()` was called: exports end and no new one starts. */
  #destroying = new AbortController();
  #keeperRemoved = false;
  #destroyTask: Promise<void> | undefined;
  /** The pause or resume in flight (they run one at a time). */
  #pauseTask: Promise<void> = Promise.resolve();
  /** The guest ports (`ports/`), made on first use. */
  #ports: DockerSandboxPorts | undefined;

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
    const promise = this.#computeRemoved.promise;
    this.#processes = new ProcessRegistry(policy.processes, policy.maxConcurrentProcesses);
    this.#host = {
      engine,
      keeperId: acquired.keeperId,
      user: acquired.spec.user,
      keeperUser: settings.keeperUser,
      policy,
      stopping: this.#stopping.signal,
      computeRemoved: promise,
      stopEnded: this.#stopEnded.promise,
      stopFor: (cause) => this.#stopFor(cause),
      admit: (kind, action) => {
        this.#assertRunning(action);
        return this.#processes.admit(kind, action);
      },
      processStarted: () => this.#processStarted(),
    };
    acquired.log.bound(() => ({ timeoutMs: policy.deadlines.cleanupMs }));
    this.#watchKeeper();
    this.#watchProxy();
    // A lease that ends before compute is removed (ended, or its Engine connection lost) no longer
    // guards anything: the sandbox stops.
    const lease = acquired.lease;
    lease?.lost.then(async () => {
      const why = await guardLoss(engine, lease, policy.deadlines.cleanupMs);
      await this.#stopFor(
        new SandboxStoppedError(
          why === "engine"
            ? "Cannot continue: the controller lease's Engine connection was lost before compute was removed (the Engine stopped or restarted), so the sandbox was stopped"
            : "Cannot continue: the controller lease ended before compute was removed (something ended it, or the keeper went away), so the sandbox was stopped",
        ),
      );
    }).catch(() => {});
  }

  /**
   * Notice a keeper that stops on its own (killed from inside, OOM, removed from outside):
   * one long poll per sandbox, renewed and re-armed (`keeper/container_watch.ts`: a lost reply
   * delays the notice by 30 s at most). When it answers while the sandbox is running, the
   * sandbox stops (and cleans up) with a `SandboxStoppedError`; an Engine that answers no
   * watch for `deadlines.cleanupMs` stops it with a `SandboxEngineError`. Ends with `stop()`.
   */
  #watchKeeper(): void {
    void watchContainer(this.#engine, this.#acquired.keeperId, {
      stopping: this.#stopping.signal,
      unreachableMs: this.#policy.deadlines.cleanupMs,
      onStopped: async (exitCode) => {
        if (exitCode === undefined) {
          return void this.#stopFor(new SandboxStoppedError("Cannot continue: the keeper container was removed from outside")).catch(() => {});
        }
        // Read its end before #stopFor removes it: was it the kernel's OOM killer?
        const inspect = await inspectContainer(this.#engine, this.#acquired.keeperId, { timeoutMs: this.#policy.deadlines.cleanupMs }).catch(() => undefined);
        await this.#stopFor(keeperStoppedError(inspect?.State.OOMKilled === true, this.#policy.resources.memoryBytes)).catch(() => {});
      },
      onUnreachable: (error) => void this.#stopFor(unansweredError("watch the keeper", this.#policy.deadlines.cleanupMs, error)).catch(() => {}),
    });
  }

  /**
   * Notice an egress proxy that stops on its own (killed, OOM, removed from outside): the
   * guest's egress is gone, so the sandbox stops with a `SandboxStoppedError` that says so,
   * with whether it was OOM-killed and its exit code (`./egress/proxy_stopped.ts`; watched
   * like the keeper). Allowlist sandboxes only.
   */
  #watchProxy(): void {
    const egress = this.#acquired.egress;
    if (egress === undefined) return;
    const signal = this.#stopping.signal;
    void watchContainer(this.#engine, egress.proxyId, {
      stopping: signal,
      unreachableMs: this.#policy.deadlines.cleanupMs,
      onStopped: async (exitCode) => {
        // Read the proxy's end before #stopFor removes it; a removed proxy leaves it unknown.
        const inspect = await inspectContainer(this.#engine, egress.proxyId).catch(() => undefined);
        if (!signal.aborted) {
          await this.#stopFor(proxyStoppedError({ exitCode, oomKilled: inspect === undefined ? undefined : inspect.State.OOMKilled === true })).catch(() => {});
        }
      },
      onUnreachable: (error) => void this.#stopFor(unansweredError("watch the egress proxy", this.#policy.deadlines.cleanupMs, error)).catch(() => {}),
    });
  }

  /**
   * The first process started: with policy `execution: { kind: "deadline" }` the sandbox's
   * execution deadline starts now, once (see `process/execution_deadline.ts`).
   */
  #processStarted(): Promise<void> {
    const execution = this.#policy.execution;
    if (execution.kind !== "deadline") return Promise.resolve();
    this.#deadline ??= armExecutionDeadline(this.#host, execution.timeoutMs);
    return this.#deadline;
  }

  /**
   * `running`, `paused` (compute frozen by `pause()`; `resume()` thaws it), `stopped`
   * (compute removed or being removed), `stop_failed` (its removal failed: compute may still
   * exist; `stop()` or `destroy()` retries) or `destroyed`.
   */
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
      ...(this.#acquired.egress ? { proxyId: this.#acquired.egress.proxyId, egressId: this.#acquired.egress.egressId } : {}),
      ...(this.#acquired.log.record.resources.relay?.id ? { relayId: this.#acquired.log.record.resources.relay.id } : {}),
    };
  }

  /**
   * The egress proxy's decisions (policy `network: { kind: "allowlist" }`), else
   * `undefined`: a bounded queue read as an async iterable (see {@linkcode DockerEgressEvents}).
   */
  get egress(): DockerEgressEvents | undefined {
    return this.#acquired.egress?.events;
  }

  /** Resource names derived from the reservation. */
  get names(): SandboxResourceNames {
    return this.#names;
  }

  /**
   * Reserve a process. Inert: validates and returns; `start()` runs it. Policy `processes:
   * "many"` (the default): any number of reservations, each started once, up to
   * `maxConcurrentProcesses` running at once. Policy `"one"`: the sandbox's one process.
   *
   * @throws {SandboxConfigurationError} for an invalid request or a conflicting HOME, TMPDIR
   *   or PATH override
   * @throws {SandboxStateError} policy `"one"`: when its process was already reserved
   * @throws {SandboxStoppedError} when compute is stopped
   */
  reserveProcess(request: SandboxProcessRequest): DockerProcessReservation {
    const normalized = normalizeProcessRequest(request);
    confineWorkingDirectory(normalized.cwd, "reserve process", "request.cwd");
    return this.#reserve(normalized, true);
  }

  /** Reserve the validated `request`; `attachStdin` false: the guest reads `/dev/null`. */
  #reserve(request: NormalizedSandboxProcessRequest, attachStdin: boolean): DockerProcessReservation {
    this.#assertRunning("reserve process");
    this.#processes.reserve();
    return new DockerProcessReservation(request, this.#host, this.#policy.processes === "one", attachStdin);
  }

  /**
   * Run one command to its end (see `Sandbox.run` and `SandboxRunOptions`): start it, feed
   * `options.stdin` (then half-close), capture stdout and stderr (at most `maxOutputBytes`
   * together), wait for its receipt. `executable` runs with literal `args`, never through a
   * shell unless it is one. It counts as a process (policy `processes: "one"`: it is the
   * sandbox's one process). Every error after the start carries what was captured:
   * `runOutputOf(error)` → `{ stdout, stderr, exit }`.
   *
   * @returns `{ exit: { kind: "exited", code }, stdout, stderr, stdoutText, stderrText }`; a
   *   non-zero code is a result, not an error.
   * @throws {SandboxConfigurationError} for an invalid argument or option (the message names it)
   * @throws {SandboxOutputLimitError} / {SandboxDeadlineError} / {SandboxAbortedError} when
   *   `maxOutputBytes`, `timeoutMs` or `signal` ended the command (it was killed)
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox stopped first
   * @throws {SandboxQuotaError} / {SandboxStateError} / {SandboxEngineError} as a process start
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const result = await sandbox.run("/bin/sh", ["-c", "ls -1 /workspace/work | wc -l"]);
   * console.log(result.exit.code, result.stdoutText.trim());
   * ```
   */
  async run(executable: string, args?: readonly string[], options?: SandboxRunOptions): Promise<SandboxRunResult> {
    const request = normalizeRunRequest(executable, args, options);
    confineWorkingDirectory(request.cwd, "run process", "options.cwd");
    // Validated once: the run's fields are those of a process request. Stdin is attached
    // only when there is input to send (without it the command reads /dev/null).
    const reservation = this.#reserve(Object.freeze({
      executable: request.executable,
      args: request.args,
      env: request.env,
      cwd: request.cwd,
      maxBufferedOutputBytes: DEFAULT_MAX_BUFFERED_OUTPUT_BYTES,
      timeoutMs: request.timeoutMs,
      killDescendantsOnExit: request.killDescendantsOnExit,
      stderr: request.stderr,
      tty: undefined,
    }), request.stdin !== undefined);
    return await runToEnd(reservation, request, this.#stopping.signal);
  }

  /**
   * One sample of what the sandbox uses (see {@linkcode SandboxStats}): CPU as a fraction of
   * the policy's `resources.cpus` over about the last second, memory usage, limit and working
   * set, tasks and their limit, network and block I/O bytes, from the keeper's cgroup
   * (`GET /containers/{id}/stats?stream=false`; it takes one to two seconds: the Engine reads twice, a second apart), and in `sidecars`
   * the same of the egress proxy (allowlist sandboxes) and the port relay (once made), read
   * at the same time against their own limits.
   *
   * @param options `signal` aborts the call.
   * @returns The sample.
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is not running
   * @throws {SandboxAbortedError} when `options.signal` aborted
   * @throws {SandboxEngineError} when the Engine fails or does not answer within
   *   `policy.deadlines.cleanupMs`
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox
   * const stats = await sandbox.stats();
   * console.log(stats.cpu.fraction, stats.memory.workingSetBytes, stats.pids.current);
   * ```
   */
  async stats(options: { readonly signal?: AbortSignal } = {}): Promise<SandboxStats> {
    this.#assertRunning("read sandbox stats");
    const read = (id: string) => containerStats(this.#engine, id, { timeoutMs: this.#policy.deadlines.cleanupMs, signal: options.signal });
    // A sidecar being removed (404) is left out; any other failure fails the call.
    const sidecar = (id: string | undefined, cpus: number) =>
      id === undefined ? undefined : read(id).then((stats) => sandboxStatsOf(stats, cpus), (error) => {
        if (isNotFound(error)) return undefined;
        throw error;
      });
    try {
      const resources = this.resources;
      const [keeper, proxy, relay] = await Promise.all([
        read(this.#acquired.keeperId),
        sidecar(resources.proxyId, PROXY_LIMITS.cpus),
        sidecar(resources.relayId, RELAY_LIMITS.cpus),
      ]);
      const sidecars = { ...(proxy ? { proxy } : {}), ...(relay ? { relay } : {}) };
      const sample = sandboxStatsOf(keeper, this.#policy.resources.cpus);
      return Object.keys(sidecars).length === 0 ? sample : Object.freeze({ ...sample, sidecars: Object.freeze(sidecars) });
    } catch (error) {
      this.#assertRunning("read sandbox stats");
      throw asSandboxError(error, "read sandbox stats");
    }
  }

  /**
   * What runs in the sandbox now: one {@linkcode SandboxProcessInfo} per process of its
   * compute (PID and parent PID as the host numbers them, uid, RSS bytes, seconds since
   * start, the command line cut at 1,000 characters; the backend's keeper and guards marked
   * `guard`), oldest PID first. From the Engine's process list of the keeper container
   * (`GET /containers/{id}/top`, Engine API v1.44: `ps` on the Engine's host, so the image
   * needs no tool and no exec runs); the reply is bounded by `resources.pids` rows.
   *
   * @param options `signal` aborts the call.
   * @returns The processes.
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is not running
   * @throws {SandboxAbortedError} when `options.signal` aborted
   * @throws {SandboxEngineError} when the Engine fails, answers something `ps` did not
   *   write, or does not answer within `policy.deadlines.cleanupMs`
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox
   * for (const each of await sandbox.processes()) if (!each.guard) console.log(each.pid, each.command);
   * ```
   */
  async processes(options: { readonly signal?: AbortSignal } = {}): Promise<SandboxProcessInfo[]> {
    const action = "list sandbox processes";
    this.#assertRunning(action);
    let reply: unknown;
    try {
      reply = await topContainer(this.#engine, this.#acquired.keeperId, TOP_PS_ARGS, {
        timeoutMs: this.#policy.deadlines.cleanupMs,
        maxResponseBytes: topReplyBytes(this.#policy.resources.pids),
        signal: options.signal,
      });
    } catch (error) {
      this.#assertRunning(action);
      throw asSandboxError(error, action);
    }
    try {
      return processesOf(reply, this.#settings.keeperUser.uid);
    } catch (error) {
      throw new SandboxEngineError(`Cannot ${action}: the Engine's process list is not what ps writes (${(error as Error).message})`, { cause: error });
    }
  }

  /**
   * Live samples of what the sandbox uses (each a {@linkcode SandboxStats}, as
   * {@linkcode DockerSandbox.stats} gives one) from the keeper's Engine stats stream
   * (`GET /containers/{id}/stats?stream=true`, about one sample a second on one connection),
   * at most one per `options.intervalMs`; see `stats_stream.ts`. A slow reader gets the
   * newest sample, never a backlog (samples in between are dropped). The stream closes when
   * the sandbox stops and errors with a `SandboxEngineError` when the Engine fails;
   * `cancel()` closes its connection at once. Nothing is read before the first read. The
   * first sample's `cpu.fraction` is 0 (the Engine has no previous read yet).
   *
   * @param options `intervalMs`, from 1,000 (the default) to 3,600,000.
   * @returns The samples.
   * @throws {SandboxConfigurationError} when `options.intervalMs` is not an integer in range
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is not running
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox
   * for await (const stats of sandbox.statsStream({ intervalMs: 5_000 })) {
   *   console.log(stats.cpu.fraction, stats.memory.workingSetBytes);
   * }
   * ```
   */
  statsStream(options: SandboxStatsStreamOptions = {}): ReadableStream<SandboxStats> {
    const intervalMs = statsIntervalOf(options);
    this.#assertRunning("stream sandbox stats");
    return sandboxStatsStream({
      engine: this.#engine,
      keeperId: this.#acquired.keeperId,
      cpus: this.#policy.resources.cpus,
      stopping: this.#stopping.signal,
      openTimeoutMs: this.#policy.deadlines.cleanupMs,
    }, intervalMs);
  }

  /**
   * Write one regular file while compute runs, through the guest (see `SandboxGuestFiles`
   * and `files/guest_files.ts`): a fixed writer exec as the sandbox user replaces `path`
   * atomically; a symlink in the path is followed inside the guest only. Counts against
   * `maxConcurrentProcesses`.
   *
   * @param path Canonical path relative to `/workspace` (`work/…` for the work directory).
   * @param data Bytes (copied), UTF-8 text or a `Blob` (streamed).
   * @param options `mode` (default 0o644), `deadlineAt` (default: `policy.deadlines.guestFileMs`,
   *   60 s, from the call), `quota`, `signal`, `onProgress`.
   * @returns `{ files: 1, bytes }`.
   * @throws {SandboxConfigurationError} / {SandboxUnsupportedError} / {SandboxQuotaError} /
   *   {SandboxDeadlineError} / {SandboxAbortedError} / {SandboxStoppedError} /
   *   {SandboxEngineError} as `writeGuestFile` says
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * await sandbox.writeFile("work/run.sh", "#!/bin/sh\necho hi\n", { mode: 0o755 });
   * console.log((await sandbox.run("/workspace/work/run.sh")).stdoutText); // "hi\n"
   * ```
   */
  async writeFile(path: string, data: Uint8Array | string | Blob, options?: SandboxWriteFileOptions): Promise<SandboxTransferReceipt> {
    const request = normalizeWriteFile(path, data, options);
    this.#assertRunning("write file");
    return await writeGuestFile(this.#host, request);
  }

  /**
   * Read one regular file while compute runs, through the guest (see `SandboxGuestFiles`):
   * a fixed reader exec (`head -c`) as the sandbox user; a symlink is followed inside the
   * guest, so a link to a file outside the workspace reads the guest's file, never the
   * host's. Counts against `maxConcurrentProcesses`.
   *
   * @param path Canonical path relative to `/workspace`.
   * @param options `maxBytes` (default 16 MiB, or the backend's `config.defaultExportQuota.bytes`
   *   when that is smaller; up to 1 GiB), `deadlineAt` (default: `policy.deadlines.guestFileMs`,
   *   60 s, from the call), `signal`, `onProgress`.
   * @returns The file's bytes.
   * @throws {SandboxConfigurationError} / {SandboxUnsupportedError} / {SandboxQuotaError} /
   *   {SandboxDeadlineError} / {SandboxAbortedError} / {SandboxStoppedError} /
   *   {SandboxEngineError} as `readGuestFile` says
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const bytes = await sandbox.readFile("work/out/report.json", { maxBytes: 1024 * 1024 });
   * console.log(JSON.parse(new TextDecoder().decode(bytes)));
   * ```
   */
  async readFile(path: string, options?: SandboxReadFileOptions): Promise<Uint8Array> {
    const normalized = normalizeReadFile(path, options);
    const fallback = this.#settings.defaultExportQuota?.bytes;
    const request = options?.maxBytes === undefined && fallback !== undefined && fallback < normalized.maxBytes
      ? { ...normalized, maxBytes: fallback, maxBytesDefault: "config.defaultExportQuota.bytes" }
      : normalized;
    this.#assertRunning("read file");
    return await readGuestFile(this.#host, request);
  }

  /**
   * Write a tree of regular files and directories into `/workspace/work`, between processes
   * (no process of the sandbox runs; policy `processes: "one"`: before the process is
   * reserved). Entry paths are relative to `/workspace/work` (the process's
   * working directory); they are streamed as a tar through
   * `PUT /containers/{keeperId}/archive?path=/workspace/work` and written as the sandbox
   * user (uid/gid are set here, never taken from the caller). Only regular files and
   * directories leave the writer. A missing parent directory is sent before its first
   * descendant (mode 0755). A later entry with the same path replaces an earlier file.
   *
   * Not atomic: the Engine writes each entry as it arrives, so after a failure the first
   * `partialImport.entriesSent` entries may be there (the last possibly truncated and
   * root-owned) and no later one is; every rejection carries that record (see
   * `partialImportOf`). Destroy the sandbox to start over.
   *
   * Quotas are checked per entry from its declared size before it is sent; the receipt and
   * `onProgress` count entries (files and directories, added parents included) and content
   * bytes as numbers.
   *
   * @param source Entries in order (see {@linkcode SandboxImportEntry}).
   * @param options `deadlineAt`, `quota`, `signal`, `onProgress` (all optional, no default bound).
   * @returns `{ files, bytes }` written.
   * @throws {SandboxStateError} `invalid_state`: not running, a process runs (policy
   *   `"one"`: the process was already reserved), or another import runs
   * @throws {SandboxConfigurationError} `configuration`: invalid options or entry (the
   *   message names `entry[i]` and the field), or a writer rejection
   * @throws {SandboxUnsupportedError} `unsupported`: a file above 8 GiB − 1
   * @throws {SandboxQuotaError} `quota`: an entry would exceed `quota.files` or `quota.bytes`
   * @throws {SandboxDeadlineError} `deadline`: `deadlineAt` passed
   * @throws {SandboxAbortedError} `aborted`: `signal` aborted, the source or a body
   *   failed, or `onProgress` threw (`cause` says which)
   * @throws {SandboxStoppedError} `stopped`: the sandbox stopped meanwhile (or its stop cause)
   * @throws {SandboxEngineError} `engine`: the Engine refused or failed
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const bytes = new TextEncoder().encode("print('hi')\n");
   * const receipt = await sandbox.importTree([
   *   { path: "src", type: "directory", mode: 0o755, size: 0 },
   *   { path: "src/main.py", type: "file", mode: 0o644, size: bytes.length, body: new Blob([bytes]).stream() },
   * ], { quota: { bytes: 1024 ** 2 }, deadlineAt: Date.now() + 30_000 });
   * console.log(receipt); // { files: 2, bytes: 12 }
   * ```
   */
  async importTree(
    source: AsyncIterable<SandboxImportEntry> | Iterable<SandboxImportEntry>,
    options: SandboxImportOptions = {},
  ): Promise<SandboxTransferReceipt> {
    const refuse = (reason: string) =>
      markPartialImport(new SandboxStateError(`Cannot import files: ${reason}`), { entriesSent: 0, bytesSent: 0, lastPathSent: undefined });
    if (this.#state !== "running") throw refuse(this.#state === "paused" ? "the sandbox is paused; call resume() first" : `the sandbox is ${this.#state}`);
    let endImport: () => void;
    try {
      endImport = this.#processes.beginImport();
    } catch (error) {
      throw markPartialImport(error as SandboxError, { entriesSent: 0, bytesSent: 0, lastPathSent: undefined });
    }
    try {
      return await importTreeInto({
        engine: this.#engine,
        keeperId: this.#acquired.keeperId,
        user: this.#acquired.spec.user,
        stopping: this.#stopping.signal,
      }, source, options);
    } finally {
      endImport();
    }
  }

  /**
   * Stream a selection of the workspace after compute stopped (`state === "stopped"`),
   * through a never-started accessor container of this sandbox's volume (created on the
   * first export, recorded in the recovery log first, reused, removed by `destroy()`).
   *
   * Selection paths are relative to `/workspace` (the process writes `work/…`):
   * `{ kind: "workspace" }` streams all of it, `{ kind: "file", path }` one regular file
   * (a hard link to it counts as one), `{ kind: "subtree", path }` one real directory and
   * its descendants. Every ancestor is checked with `HEAD` first and must be a real
   * directory; only the selected path is fetched.
   *
   * The returned stream yields entries with workspace-relative paths; everything it hands
   * out is provisional until it closes without error. Archive failures (a symlink, hard
   * link, device or FIFO in a subtree, a file above 8 GiB − 1, a bad archive) and the
   * options' deadline, quota and signal arrive as the stream's error. Cancel the stream to
   * stop early (that closes the connection and removes spill files).
   *
   * One export at a time: while the Engine streams an archive it holds the container's lock,
   * so until the returned stream is read to its end, errors or is cancelled, another
   * `exportTree` of this sandbox rejects at once with `SandboxStateError`. An abandoned,
   * uncancelled stream keeps the sandbox's export slot until its `deadlineAt`, `signal` or
   * `destroy()` ends it.
   *
   * @param selection What to export (see {@linkcode SandboxExportSelection}).
   * @param options `deadlineAt`, `quota` (`quota.bytes` defaults to the backend's
   *   `config.defaultExportQuota.bytes`, when set), `signal`, `onProgress`, `maxInMemoryPaths`
   *   (default 65,536; past it path checks spill to the backend's `spillDirectory`).
   * @returns The entry stream (high-water mark 0).
   * @throws {SandboxStateError} `invalid_state`: compute is running, compute removal did not
   *   complete, the sandbox is destroyed (or being destroyed), or another export of this
   *   sandbox is still open
   * @throws {SandboxConfigurationError} `configuration`: invalid selection or options; the
   *   selected path or an ancestor is missing, a symlink or of the wrong type
   * @throws {SandboxDeadlineError} / {SandboxAbortedError} / {SandboxEngineError} before the
   *   archive starts; the same and {SandboxQuotaError}, {SandboxUnsupportedError} as stream errors
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * await sandbox.stop();
   * const entries = await sandbox.exportTree({ kind: "subtree", path: "work/artifacts" });
   * for await (const entry of entries) {
   *   console.log(entry.type, entry.path, entry.size);
   *   await entry.body.cancel();
   * }
   * ```
   */
  async exportTree(selection: SandboxExportSelection, options: SandboxExportOptions = {}): Promise<ReadableStream<SandboxExportEntry>> {
    const action = "export files";
    const target = parseExportSelection(selection, action);
    const given = normalizeTransferOptions(options, action, true);
    const fallback = this.#settings.defaultExportQuota?.bytes;
    const parsed = given.quota.bytes === undefined && fallback !== undefined
      ? { ...given, quota: { ...given.quota, bytes: fallback }, quotaBytesDefault: "config.defaultExportQuota.bytes" }
      : given;
    const refuse = (reason: string) => new SandboxStateError(`Cannot ${action}: ${reason}`);
    if (this.#state === "running" || this.#state === "paused") throw refuse("compute is running; call stop() first");
    if (this.#state === "destroyed" || this.#destroying.signal.aborted) throw refuse("the sandbox is destroyed");
    if (!this.#keeperRemoved) {
      await this.#stopTask?.catch(() => {});
      if (!this.#keeperRemoved) throw refuse("compute removal did not complete; call stop() again");
    }
    const release = claimExportSlot(this);
    if (release === undefined) throw refuse("another export of this sandbox is still open; read it to the end or cancel it");
    const guard = new TransferGuard(action, parsed, [this.#destroying.signal]);
    try {
      guard.check();
      const accessorId = await raceDeadline(this.#accessor(), { signal: guard.signal, onAbort: () => guard.failure });
      return await openExport({
        engine: this.#engine,
        accessorId,
        spillDirectory: this.#settings.spillDirectory,
        timeoutMs: this.#policy.deadlines.startupMs,
        release,
      }, target, parsed, guard);
    } catch (error) {
      release();
      guard.dispose();
      throw guard.settle(error, (cause) => asSandboxError(cause, action));
    }
  }

  /** The accessor's identity and creation context. */
  #accessorContext(): AccessorContext {
    const settings = this.#settings;
    return {
      engine: this.#engine,
      spec: this.#acquired.spec,
      name: this.#names.accessor,
      labels: resourceLabels(this.#acquired.log.record, "accessor"),
      platform: settings.profile.image.platform,
      log: this.#acquired.log,
      timeoutMs: this.#policy.deadlines.startupMs,
    };
  }

  /** The checked accessor's ID, creating it once; a failed attempt can be retried. */
  #accessor(): Promise<string> {
    if (this.#accessorTask === undefined) {
      const task = (async () => {
        const context = this.#accessorContext();
        this.#accessorId ??= await createAccessor(context);
        await verifyAccessor(context, this.#accessorId);
        return this.#accessorId;
      })();
      this.#accessorTask = task;
      task.catch(() => {
        if (this.#accessorTask === task) this.#accessorTask = undefined;
      });
    }
    return this.#accessorTask;
  }

  /** The ports of this sandbox, made on first use. */
  #portsOf(): DockerSandboxPorts {
    this.#ports ??= new DockerSandboxPorts({
      engine: this.#engine,
      log: this.#acquired.log,
      name: this.#names.relay,
      keeperId: this.#acquired.keeperId,
      user: this.#settings.keeperUser,
      imageDigest: this.#settings.proxyImageDigest,
      platform: this.#settings.profile.image.platform,
      runtime: this.#settings.profile.runtime,
      cleanupMs: this.#policy.deadlines.cleanupMs,
      stopping: this.#stopping.signal,
      assertRunning: (action) => this.#assertRunning(action),
    });
    return this.#ports;
  }

  /**
   * Open a byte connection to `127.0.0.1:port` inside the sandbox's network namespace (any
   * network policy, `isolated` included), through the sandbox's port relay: a hardened
   * container of ours joined to the keeper's namespace, created on the first call (needs
   * `config.proxyImageDigest`). See `docs/ports.md`.
   *
   * @param port the guest's TCP port, 1 … 65535
   * @param options `signal`, `timeoutMs` (default 30 s)
   * @returns `{ readable, writable, closed, close() }`; `writable.close()` half-closes
   * @throws {SandboxConnectionError} `refused` when nothing accepts the connection
   * @throws {SandboxConfigurationError} for an invalid port or option, or without `config.proxyImageDigest`
   * @throws {SandboxUnsupportedError} under gVisor (`linux-x64-gvisor`)
   * @throws {SandboxQuotaError} when 64 connections of this sandbox are open
   * @throws {SandboxDeadlineError} / {SandboxAbortedError} / {SandboxStoppedError} (or the stop cause)
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const connection = await sandbox.connect(8080);
   * const writer = connection.writable.getWriter();
   * await writer.write(new TextEncoder().encode("ping\n"));
   * await writer.close(); // half-close: the guest reads end of file
   * console.log(await new Response(connection.readable).text());
   * ```
   */
  connect(port: number, options?: SandboxConnectOptions): Promise<SandboxConnection> {
    return this.#portsOf().connect(port, options);
  }

  /**
   * One HTTP/1.1 exchange with the guest server on `port` over {@linkcode connect}
   * (`Connection: close`), answered as a standard `Response`; bounded by `options`
   * (`timeoutMs` 30 s, `maxHeadBytes` 16 KiB, `maxBodyBytes` 64 MiB, `signal`).
   *
   * @param port the guest's TCP port
   * @param request a path (`"/index.html"`), an `http:` URL (its host is the `Host` field) or a `Request`
   * @throws {SandboxConnectionError} `refused`, `reset`, `relay_lost` or `invalid_response`
   * @throws {SandboxQuotaError} past `maxHeadBytes` (the body stream errors past `maxBodyBytes`)
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const response = await sandbox.fetch(3000, "/");
   * console.log(response.status, await response.text());
   * ```
   */
  fetch(port: number, request: Request | string | URL, options?: SandboxFetchOptions): Promise<Response> {
    return this.#portsOf().fetch(port, request, options);
  }

  /**
   * Listen on the host (`127.0.0.1` and a free port unless `options` say otherwise) and relay
   * each accepted connection to the guest's `port` (one {@linkcode connect} each): open
   * `forward.url` in a browser. Bounded by `maxConnections` (default 16) and
   * `maxBytesPerConnection`; `events` reports `opened`, `closed` and `refused`. Closed by
   * `close()` or when the sandbox stops. On Deno it needs `--allow-net=<hostname>`.
   *
   * @throws {SandboxConfigurationError} for an invalid option, or a Deno permission (named)
   * @throws {SandboxConflictError} when the host port is in use
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * await using forward = await sandbox.forwardPort(5173);
   * console.log(`open ${forward.url}`);
   * ```
   */
  forwardPort(port: number, options?: SandboxForwardOptions): Promise<SandboxPortForward> {
    return this.#portsOf().forwardPort(port, options);
  }

  /**
   * Freeze compute: every container of the sandbox (the keeper, the egress proxy of an
   * allowlist sandbox, the port relay once `connect()` made it) is paused by the Engine's cgroup freezer (`POST
   * /containers/{id}/pause`); its processes keep their memory and use no CPU. `state` is
   * `paused` from the call on; calls that need a running guest (`reserveProcess`, `run`,
   * `stats`, file transfers, guest files) throw `invalid_state` until `resume()`. Running
   * processes stay attached and produce nothing while frozen.
   *
   * Clocks are wall clocks and keep running while paused (a pause does not extend a bound):
   * the `execution` deadline that comes due while paused stops the sandbox (the Engine
   * force-removes a paused container), the guest deadline fires as the guest thaws, and a
   * process whose `timeoutMs` elapsed while paused is ended (if the guest cannot be reached
   * to kill it, the sandbox stops, as for any kill that fails). The controller lease holds:
   * a controller that dies while its sandbox is paused leaves a record whose `recover()`
   * removes the paused containers. See docs/snapshots.md.
   *
   * Idempotent (a paused sandbox stays paused). A pause that fails part way thaws what it
   * froze and leaves the sandbox running.
   *
   * @throws {SandboxStateError} `invalid_state` when the sandbox is not running or paused
   * @throws {SandboxEngineError} when the Engine refuses or fails a pause
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * await sandbox.pause();
   * console.log(sandbox.state); // "paused"
   * await sandbox.resume();
   * ```
   */
  pause(): Promise<void> {
    const task = this.#pauseTask.catch(() => {}).then(async () => {
      if (this.#state === "paused") return;
      if (this.#state !== "running") throw new SandboxStateError(`Cannot pause sandbox: the sandbox is ${this.#state}`);
      // Paused from now on: no new exec is created against a container being frozen.
      this.#state = "paused";
      try {
        await pauseAll(this.#engine, computeContainers(this.#acquired), this.#policy.deadlines.cleanupMs);
      } catch (error) {
        if (this.#state === "paused") this.#state = "running";
        throw asSandboxError(error, "pause sandbox");
      }
    });
    this.#pauseTask = task;
    return task;
  }

  /**
   * Thaw compute paused by `pause()` (`POST /containers/{id}/unpause`, in the reverse order):
   * its processes continue where they were. Idempotent (a running sandbox stays running).
   *
   * @throws {SandboxStateError} `invalid_state` when the sandbox is stopped or destroyed
   * @throws {SandboxEngineError} when the Engine fails an unpause (the sandbox stays
   *   `paused`; call again to retry)
   */
  resume(): Promise<void> {
    const task = this.#pauseTask.catch(() => {}).then(async () => {
      if (this.#state === "running") return;
      if (this.#state !== "paused") throw new SandboxStateError(`Cannot resume sandbox: the sandbox is ${this.#state}`);
      try {
        await unpauseAll(this.#engine, computeContainers(this.#acquired), this.#policy.deadlines.cleanupMs);
      } catch (error) {
        throw asSandboxError(error, "resume sandbox");
      }
      if (this.#state === "paused") this.#state = "running";
    });
    this.#pauseTask = task;
    return task;
  }

  /**
   * Take an immutable workspace snapshot: the tree of `/workspace/work` copied into a volume
   * of its own, with a recovery record of its own written through this sandbox's recovery
   * port (see `docs/snapshots.md`). Only `/workspace` is in it: home, `/tmp` and `/dev/shm`
   * are tmpfs and are not.
   *
   * Consistency: a running sandbox is paused for the copy (the cgroup freezer: no guest write
   * lands while the tree is copied) and resumed after; a paused one stays paused; a stopped
   * one (compute removed, files retained) is copied as it is. The copy runs in a short-lived
   * helper container of ours inside the Engine (`snapshots/copier.ts`).
   *
   * @param options deadline of the whole snapshot; `maxBytes`, the bound of its files
   * @returns the snapshot; it outlives this sandbox (remove it with `backend.removeSnapshot()`)
   * @throws {SandboxConfigurationError} when `options.maxBytes` is not a non-negative safe integer
   * @throws {SandboxQuotaError} when the files of `/workspace/work` add up past the byte bound
   *   (`options.maxBytes`, else `config.defaultExportQuota.bytes`); nothing is kept
   * @throws {SandboxStateError} `invalid_state` when the sandbox is destroyed
   * @throws {SandboxEngineError} when the copy or the Engine fails (what was made is removed)
   *
   * @example
   * ```ts ignore
   * // ignore: needs a running sandbox on a Docker Engine
   * const snapshot = await sandbox.snapshot();
   * await using fork = await backend.reserve({ policy, workspace: { from: snapshot } }, store).start();
   * ```
   */
  snapshot(options: DockerSnapshotOptions = {}): Promise<DockerWorkspaceSnapshot> {
    const timeoutMs = options.timeoutMs ?? 300_000;
    let bound: SnapshotByteBound | undefined;
    try {
      bound = snapshotByteBound(this.#settings, options.maxBytes, "options.maxBytes", "take a snapshot");
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#state === "destroyed" || this.#destroying.signal.aborted) {
      return Promise.reject(new SandboxStateError("Cannot take a snapshot: the sandbox is destroyed"));
    }
    // Called before destroy(): destroy() waits for this task before it removes the volume.
    const task = this.#pauseTask.catch(() => {}).then(async () => {
      const log = this.#acquired.log;
      return await newSnapshot({
        engine: this.#engine,
        settings: this.#settings,
        recovery: log.port,
        daemonId: log.record.identity.daemonId,
        user: this.#acquired.spec.user,
        source: this.id,
        timeoutMs: this.#policy.deadlines.cleanupMs,
      }, async (snapshotLog, volumeName) => {
        const paused = this.#state === "running";
        if (paused) {
          this.#state = "paused";
          try {
            await pauseAll(this.#engine, computeContainers(this.#acquired), this.#policy.deadlines.cleanupMs);
          } catch (error) {
            if (this.#state === "paused") this.#state = "running";
            throw error;
          }
        }
        try {
          await copyTree({
            engine: this.#engine,
            log: snapshotLog,
            imageDigest: this.#settings.imageDigest,
            platform: this.#settings.profile.image.platform,
            runtime: this.#settings.profile.runtime,
            from: { volume: this.#acquired.volumeName, path: WORK_DIRECTORY },
            to: { volume: volumeName, path: "" },
            bound: copyBound(bound, "take a snapshot", "the tree of /workspace/work"),
            timeoutMs,
          });
        } finally {
          if (paused && this.#state === "paused") {
            await unpauseAll(this.#engine, computeContainers(this.#acquired), this.#policy.deadlines.cleanupMs);
            this.#state = "running";
          }
        }
      });
    });
    this.#pauseTask = task.then(() => {}, () => {});
    return task;
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
   * Stop, then remove the accessor, the network and the volume by exact identity; a sandbox
   * from `openSandbox()` then also removes the spill directory and record it made.
   * Retryable after a partial failure; 404 counts as done.
   *
   * @throws {SandboxEngineError} when a removal fails (call again to retry)
   */
  destroy(): Promise<void> {
    if (this.#state === "destroyed") return Promise.resolve();
    this.#destroying.abort(new SandboxStoppedError("Cannot export files: the sandbox is being destroyed"));
    this.#destroyTask ??= this.#destroy().finally(() => {
      this.#destroyTask = undefined;
    });
    return this.#destroyTask;
  }

  /**
   * Throw unless compute runs: the stop cause, or a `SandboxStoppedError` for `action`.
   *
   * @throws {SandboxError} the stop cause once the sandbox stopped
   */
  #assertRunning(action: string): void {
    if (this.#state === "paused") throw new SandboxStateError(`Cannot ${action}: the sandbox is paused; call resume() first`);
    if (this.#state !== "running") throw this.#stopCause ?? new SandboxStoppedError(`Cannot ${action}: the sandbox is stopped`);
  }

  /** `await using` support: destroys. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.destroy();
  }

  #stopFor(cause: SandboxError): Promise<void> {
    if (this.#keeperRemoved) return Promise.resolve();
    if (this.#state === "running" || this.#state === "paused") {
      this.#stopCause = cause;
      this.#stopping.abort(cause);
    }
    if (this.#state === "running" || this.#state === "paused" || this.#state === "stop_failed") this.#state = "stopped";
    this.#stopTask ??= this.#removeKeeper().catch((error) => {
      // Compute may still exist: say so, settle every pending call all the same, and keep
      // trying in the background (the Engine may be restarting).
      if (this.#state === "stopped") this.#state = "stop_failed";
      this.#retryStop();
      throw error;
    }).finally(() => {
      this.#stopTask = undefined;
      this.#stopEnded.resolve();
    });
    return this.#stopTask;
  }

  /** When background retries of a failed compute removal give up (epoch ms), while they run. */
  #retryUntil: number | undefined;

  /**
   * Retry a failed compute removal in the background for `deadlines.cleanupMs` after the
   * first failure (after 250 ms, doubling to 5 s), so compute does not outlive an Engine
   * restart by more than that; `stop()` and `destroy()` retry too. After that, the state stays
   * `stop_failed` and the recovery record keeps what is left.
   */
  #retryStop(): void {
    if (this.#retryUntil !== undefined) return;
    this.#retryUntil = Date.now() + this.#policy.deadlines.cleanupMs;
    let waitMs = 250;
    const attempt = () => {
      if (this.#keeperRemoved || this.#state === "destroyed") return void (this.#retryUntil = undefined);
      const task = this.#stopTask ?? this.#stopFor(this.#stopCause!);
      task.then(() => (this.#retryUntil = undefined), () => {
        if (Date.now() >= this.#retryUntil!) return void (this.#retryUntil = undefined);
        waitMs = Math.min(waitMs * 2, 5_000);
        setTimeout(attempt, waitMs);
      });
    };
    setTimeout(attempt, waitMs);
  }

  async #removeKeeper(): Promise<void> {
    // The port relay lives in the keeper's network namespace: it goes first.
    await this.#ports?.stop(this.#stopCause!);
    try {
      await removeRecorded(this.#engine, this.#acquired.log, "keeper", { timeoutMs: this.#policy.deadlines.cleanupMs });
    } catch (error) {
      throw asSandboxError(error, "stop sandbox");
    }
    await this.#removeProxy();
    this.#keeperRemoved = true;
    this.#acquired.lease?.release();
    // No process of this sandbox runs as its uid any more: a userRange uid may be drawn again.
    this.#acquired.releaseUser?.();
    this.#computeRemoved.resolve();
  }

  /** Compute is gone, so egress goes too: the proxy container (networks stay until destroy). */
  async #removeProxy(): Promise<void> {
    const egress = this.#acquired.egress;
    if (egress === undefined) return;
    try {
      await removeRecorded(this.#engine, this.#acquired.log, "proxy", { timeoutMs: this.#policy.deadlines.cleanupMs });
    } catch (error) {
      throw asSandboxError(error, "stop sandbox");
    }
    egress.attach.close().catch(() => {});
  }

  async #destroy(): Promise<void> {
    await this.#stopFor(new SandboxStoppedError("Cannot continue: the sandbox was destroyed"));
    // An accessor create in flight finishes first; one whose outcome is unknown is resolved
    // by the resource table (exact name, this record's labels).
    await this.#accessorTask?.catch(() => {});
    // A snapshot in flight finishes its copy first: its copier holds the volume.
    await this.#pauseTask.catch(() => {});
    const report = await removeAllRecorded(this.#engine, this.#acquired.log, { timeoutMs: this.#policy.deadlines.cleanupMs });
    const failure = report.failures[0];
    if (failure) throw asSandboxError(failure.error, "destroy sandbox");
    if (report.uncertain.length > 0) {
      throw new SandboxEngineError(
        `Cannot destroy sandbox: whether the ${report.uncertain.join(" and ")} was created is still unknown (its name is absent); call destroy() again, or recover from the record later`,
      );
    }
    await runDestroySteps(this);
    this.#state = "destroyed";
  }
}
