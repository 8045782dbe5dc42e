/**
 * The sandbox's one agent process: a Docker exec as the non-root user without a TTY, with
 * stdin as a `WritableStream` (close = half-close), stdout and stderr demultiplexed into
 * two `ReadableStream`s, and an exit receipt read from `GET /exec/{id}/json`.
 *
 * @module
 */
import { type SandboxError, SandboxDeadlineError, SandboxStoppedError } from "../sandbox/errors.ts";
import type { SandboxStartOptions } from "../sandbox/start_options.ts";
import type {
  NormalizedSandboxProcessRequest,
  SandboxExitReceipt,
  SandboxProcess,
  SandboxProcessReservation,
} from "../sandbox/process.ts";
import { SandboxStateError } from "../sandbox/errors.ts";
import { inspectContainer } from "../engine/containers.ts";
import { createExec, inspectExec, startExec } from "../engine/exec.ts";
import type { EngineUpgrade } from "../engine/http/mod.ts";
import { demultiplex } from "../engine/frames/demultiplex.ts";
import type { SandboxHost } from "./sandbox.ts";
import { startGuestDeadline } from "./controller_lease.ts";
import { WORK_PATH } from "./workload.ts";
import { asOutputError, asSandboxError, isNotFound } from "./_engine_errors.ts";
import { setLongTimeout } from "./_long_timer.ts";

/**
 * The wrapper the process runs under: it raises its own `oom_score_adj` to 1000 (allowed
 * without privileges) before `exec`-ing the target, so under memory pressure the kernel
 * kills the agent's processes before the keeper. Measured on the build machines: without
 * it an OOM inside an exec can kill the keeper too.
 */
const OOM_WRAPPER = 'echo 1000 > /proc/self/oom_score_adj 2>/dev/null; exec "$0" "$@"';

/** Most bytes one stdin write is split into on its way to the socket. */
const STDIN_HIGH_WATER_MARK = 64 * 1024;

/** A reserved, not yet started process. */
export class DockerProcessReservation implements SandboxProcessReservation {
  /** The normalised request. */
  readonly request: NormalizedSandboxProcessRequest;
  readonly #host: SandboxHost;
  #started = false;

  /** @internal Made by `DockerSandbox.reserveProcess`. */
  constructor(request: NormalizedSandboxProcessRequest, host: SandboxHost) {
    this.request = request;
    this.#host = host;
  }

  /**
   * Create and start the exec, attached to stdin, stdout and stderr.
   *
   * @throws {SandboxStateError} when called twice
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is stopped
   * @throws {SandboxAbortedError} when `options.signal` aborted before the exec started
   * @throws {SandboxEngineError} when the Engine fails
   */
  async start(options: SandboxStartOptions = {}): Promise<SandboxProcess> {
    if (this.#started) throw new SandboxStateError("Cannot start process: it was already started");
    this.#started = true;
    const host = this.#host;
    if (host.stopping.aborted) throw host.stopping.reason as SandboxError;
    const { request } = this;
    let attach: EngineUpgrade;
    let execId: string;
    try {
      execId = await createExec(host.engine, host.keeperId, {
        Cmd: ["/bin/sh", "-c", OOM_WRAPPER, request.executable, ...request.args],
        Env: Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
        User: `${host.user.uid}:${host.user.gid}`,
        WorkingDir: WORK_PATH,
      }, { timeoutMs: host.policy.deadlines.startupMs, signal: options.signal });
      attach = await startExec(host.engine, execId, { signal: options.signal });
    } catch (error) {
      if (host.stopping.aborted) throw host.stopping.reason as SandboxError;
      throw asSandboxError(error, "start process");
    }
    // A stop that raced the start: the Engine may already be writing its own error text
    // into the stream, which must never reach the caller as the process's output.
    if (host.stopping.aborted) {
      attach.abort(host.stopping.reason);
      throw host.stopping.reason as SandboxError;
    }
    const process = runProcess(host, execId, attach, request.maxBufferedOutputBytes);
    const execution = host.policy.execution;
    if (execution.kind === "deadline") {
      // The same deadline inside the guest (plus a grace), so it holds after the host died.
      // A guard that ends early (a guest process killed it) stops the sandbox.
      try {
        const guard = await startGuestDeadline({ ...host, user: host.keeperUser, timeoutMs: host.policy.deadlines.startupMs }, execution.timeoutMs);
        host.computeRemoved.then(() => guard.release());
        guard.lost.then(() =>
          host.stopFor(new SandboxStoppedError("Cannot continue process: the guest-side execution deadline ended early (a process killed it), so the sandbox was stopped"))
        ).catch(() => {});
      } catch (error) {
        host.stopFor(asSandboxError(error, "start the guest deadline")).catch(() => {});
      }
    }
    return process;
  }
}

function runProcess(host: SandboxHost, execId: string, attach: EngineUpgrade, maxBufferedOutputBytes: number): SandboxProcess {
  // The attach output ends with the sandbox's stop cause once compute removal begins. A
  // source failure seen while the sandbox is stopping is reported as the stop cause too:
  // removing compute may break the connection before this listener aborts it.
  const onStopping = () => attach.abort(host.stopping.reason);
  host.stopping.addEventListener("abort", onStopping, { once: true });
  const output = demultiplex(attach.readable, {
    maxBufferedOutputBytes,
    onFault: (error) => {
      const stopped = host.stopping.aborted && error.code === "source_failed";
      const failure = stopped ? host.stopping.reason as SandboxError : asOutputError(error);
      host.stopFor(failure).catch(() => {});
      return failure;
    },
  });
  const streamEnded = output.done.then(() => undefined, () => undefined);

  // The execution deadline bounds the process and everything it started: it runs until the
  // sandbox stops, not merely until the leader exits.
  const execution = host.policy.execution;
  if (execution.kind === "deadline") {
    const cancelDeadline = setLongTimeout(() => {
      host.stopFor(
        new SandboxDeadlineError(`Cannot continue process: its execution deadline of ${execution.timeoutMs} ms elapsed`),
      ).catch(() => {});
    }, execution.timeoutMs);
    host.stopping.addEventListener("abort", cancelDeadline, { once: true });
  }

  // The connection lives as long as the output. Descendants may write after the leader
  // exited, but the Engine ends the stream about 2 s after the leader's exit (as with
  // `docker exec`), so later output of descendants is not delivered.
  streamEnded.then(() => {
    host.stopping.removeEventListener("abort", onStopping);
    attach.close().catch(() => {});
  });
  const exit = observeExit(host, execId, streamEnded);
  exit.catch(() => {});

  return {
    stdin: stdinStream(attach, host.stopping),
    stdout: output.stdout,
    stderr: output.stderr,
    exit,
  };
}

function stdinStream(attach: EngineUpgrade, stopping: AbortSignal): WritableStream<Uint8Array> {
  const writer = attach.writable.getWriter();
  const stoppedError = () => (stopping.reason as SandboxError | undefined) ?? new SandboxStoppedError("Cannot write stdin: the sandbox stopped");
  let halfClosed = false;
  const halfClose = async () => {
    if (halfClosed) return;
    halfClosed = true;
    writer.releaseLock();
    await attach.closeWrite();
  };
  return new WritableStream<Uint8Array>({
    async write(chunk) {
      if (stopping.aborted) throw stoppedError();
      try {
        await writer.write(chunk);
      } catch (error) {
        throw stopping.aborted ? stoppedError() : asSandboxError(error, "write stdin");
      }
    },
    async close() {
      if (stopping.aborted) throw stoppedError();
      try {
        await halfClose();
      } catch (error) {
        throw stopping.aborted ? stoppedError() : asSandboxError(error, "close stdin");
      }
    },
    async abort() {
      // Aborting stdin ends the guest's input the same way closing does.
      await halfClose().catch(() => {});
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: STDIN_HIGH_WATER_MARK }));
}

/** Poll interval while the output is still open (descendants may hold it after the leader exits). */
export const OPEN_STREAM_POLL_MS = 2_000;
/** First poll interval once the output ended; it doubles with each poll. */
export const ENDED_STREAM_FIRST_POLL_MS = 10;
/**
 * Longest poll interval once the output ended: an exec whose inspect never reports a
 * numeric `ExitCode` costs at most one exec inspect and one keeper inspect per 5 s.
 */
export const ENDED_STREAM_MAX_POLL_MS = 5_000;

/**
 * The wait before the next inspection once the output ended: 10 ms doubling with each
 * poll, capped at {@linkcode ENDED_STREAM_MAX_POLL_MS} (10, 20, 40, … 2,560, then 5,000 ms
 * for as long as the exit code stays unreported).
 *
 * @param poll Inspections made since the output ended, minus one (0 for the first wait).
 * @returns The wait, in milliseconds.
 */
export function endedStreamPollMs(poll: number): number {
  return Math.min(ENDED_STREAM_FIRST_POLL_MS * 2 ** poll, ENDED_STREAM_MAX_POLL_MS);
}

/**
 * Waits `ms` milliseconds, or less when one of `wake` settles first; the exit observer's
 * only clock, replaceable so a test can observe the schedule as a sequence of waits.
 */
export type ExitPollWait = (ms: number, wake: readonly Promise<unknown>[]) => Promise<void>;

function sleep(ms: number, wake: readonly Promise<unknown>[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const promise of wake) promise.then(done, done);
  });
}

/**
 * Settle the exit receipt from `GET /exec/{id}/json`, never from the stream ending:
 * `exited` only for a non-running exec with a numeric `ExitCode` (`null` is still pending).
 * The exec is inspected every 2 s while its output is open (a descendant may keep the
 * output open after the leader exited) and, once the output ended, after waits of 10 ms
 * doubling up to 5 s ({@linkcode endedStreamPollMs}): quick for the usual exit, one
 * inspection per 5 s at most for an exec that keeps running or whose exit code never
 * appears. Once the sandbox is stopping, a status not yet observed is no longer trusted
 * (the stop itself kills the process): the receipt waits for compute removal and is
 * `unavailable`. From the fourth inspection after the output ended, the keeper is inspected
 * with each one too: a dead keeper stops the sandbox.
 *
 * @param host The sandbox's engine, keeper, deadlines and stop state.
 * @param execId The exec to observe.
 * @param streamEnded Settles when the exec's output ended.
 * @param wait The clock between inspections (tests pass their own to record the schedule).
 * @returns The receipt.
 */
export async function observeExit(
  host: SandboxHost,
  execId: string,
  streamEnded: Promise<void>,
  wait: ExitPollWait = sleep,
): Promise<SandboxExitReceipt> {
  const unavailable: SandboxExitReceipt = Object.freeze({ kind: "unavailable", reason: "sandbox_stopped" });
  const timeoutMs = host.policy.deadlines.cleanupMs;
  const stopping = new Promise<void>((resolve) => {
    if (host.stopping.aborted) resolve();
    host.stopping.addEventListener("abort", () => resolve(), { once: true });
  });
  let ended = false;
  streamEnded.then(() => (ended = true));
  await wait(OPEN_STREAM_POLL_MS, [streamEnded, stopping]);
  for (let poll = 0;; poll++) {
    if (host.stopping.aborted) {
      await host.computeRemoved;
      return unavailable;
    }
    const endedBefore = ended;
    try {
      const state = await inspectExec(host.engine, execId, { timeoutMs });
      if (host.stopping.aborted) continue;
      if (!state.Running && state.ExitCode !== null) return Object.freeze({ kind: "exited", code: state.ExitCode });
    } catch (error) {
      if (isNotFound(error)) return unavailable;
      // a transient Engine failure: try again below
    }
    if (endedBefore && poll >= 3 && !host.stopping.aborted) {
      try {
        const keeper = await inspectContainer(host.engine, host.keeperId, { timeoutMs });
        if (!keeper.State.Running) {
          host.stopFor(new SandboxStoppedError("Cannot continue: the keeper container exited")).catch(() => {});
        }
      } catch (error) {
        if (isNotFound(error)) return unavailable;
      }
    }
    if (endedBefore) await wait(endedStreamPollMs(poll), [stopping]);
    else {
      poll = -1;
      await wait(OPEN_STREAM_POLL_MS, [stopping, streamEnded]);
    }
  }
}
