/**
 * A sandbox process: a Docker exec as the non-root user, with stdin as a `WritableStream`
 * (close = half-close), stdout and stderr demultiplexed into two `ReadableStream`s (with a
 * terminal: the terminal's one stream as stdout, see {@linkcode TERMINAL_DETACH_KEYS}), its
 * own deadline and kill, and an exit receipt read from `GET /exec/{id}/json`.
 *
 * Every process starts as a fixed `/bin/sh` wrapper that marks it for the kill (see
 * `_guest_kill.ts`), raises its `oom_score_adj` to 1000 and routes stderr as the request
 * says. Without `killDescendantsOnExit` the wrapper then `exec`s the command (no fork: the
 * command is the exec's leader and the receipt its exit status); with it, the wrapper stays
 * the leader, runs the command in a child, kills the descendants left in its process group
 * when the command exits, and exits with the command's status.
 *
 * @module
 */
import {
  SandboxAbandonedOutputError,
  SandboxDeadlineError,
  SandboxEngineError,
  type SandboxError,
  SandboxStateError,
  SandboxStoppedError,
} from "../../sandbox/errors.ts";
import type { SandboxStartOptions } from "../../sandbox/start_options.ts";
import type {
  NormalizedSandboxProcessRequest,
  SandboxExitReceipt,
  SandboxKillReason,
  SandboxProcess,
  SandboxProcessReservation,
  SandboxStderrMode,
} from "../../sandbox/process.ts";
import { createExec, inspectExec, resizeExec, startExec } from "../../engine/exec.ts";
import { terminalOutput } from "../../engine/frames/terminal_output.ts";
import { type NormalizedSandboxTerminal, normalizeTerminalSize, type SandboxTerminalSize } from "../../sandbox/terminal.ts";
import { DockerEngineTransportError } from "../../engine/errors.ts";
import type { EngineUpgrade } from "../../engine/http/mod.ts";
import { demultiplex } from "../../engine/frames/demultiplex.ts";
import { checkKeeper, type ExitObserverHost, observeExit } from "./exit_observer.ts";
import { oomKilledSince } from "./oom.ts";
import { type GuestKillOutcome, killProcessGroup } from "./_guest_kill.ts";
import { withKillHeadroom } from "./_pids_headroom.ts";
import type { ProcessKind } from "./registry.ts";
import { confineWorkingDirectory } from "../guest_paths.ts";
import { asOutputError, asSandboxError, rephrased } from "../_engine_errors.ts";
import { setLongTimeout } from "../../internal/long_timer.ts";

/**
 * The wrapper that stays the exec's leader while the command runs in a child: `sh -c
 * FORKING_WRAPPER sh <mark> <stderr> <argv…>`. It renames itself to `<mark>`
 * (`/proc/self/comm`, the 15 digits fit), moves its own stderr aside (so the shell's "Killed"
 * notice of a child ended by a signal never reaches the process's stderr), runs the command
 * in a subshell that raises its own `oom_score_adj` to 1000 and `exec`s the command with
 * stderr as `<stderr>` says; the caller appends what follows the command's exit.
 */
const FORKING_WRAPPER = 'printf %s "$1" > /proc/self/comm 2>/dev/null; f=$2; shift 2; exec 4>&2 2>/dev/null; ' +
  "case $f in " +
  'e) ( echo 1000 > /proc/self/oom_score_adj; exec "$@" 2>/dev/null 4>&- );; ' +
  'o) ( echo 1000 > /proc/self/oom_score_adj; exec "$@" 2>&1 4>&- );; ' +
  '*) ( echo 1000 > /proc/self/oom_score_adj; exec "$@" 2>&4 4>&- );; ' +
  "esac; ";

/**
 * {@linkcode FORKING_WRAPPER} for `killDescendantsOnExit`: once the command exited, `SIGKILL`
 * every other live member of the wrapper's process group (shell builtins only, repeated until
 * a scan finds none, at most 100 rounds), then exit with the command's status.
 */
const KILLING_WRAPPER = `${FORKING_WRAPPER}s=$?; m() { [ "$1" != Z ] && [ "$3" = "$$" ]; }; r=0; n=1; ` +
  'while [ $n -gt 0 ] && [ $r -lt 100 ]; do r=$((r + 1)); n=0; for d in /proc/[0-9]*; do ' +
  '[ "${d#/proc/}" = "$$" ] && continue; read -r l 2>/dev/null < "$d/stat" || continue; ' +
  'm ${l##*) } && { kill -9 "${d#/proc/}" 2>/dev/null; n=$((n + 1)); }; done; done; exit $s';

/**
 * The wrapper of a process without `killDescendantsOnExit`: `sh -c PLAIN_WRAPPER sh <mark>
 * <stderr> <argv…>`. It sets its soft `RLIMIT_LOCKS` to `<mark>` (`ulimit -x`: busybox,
 * bash; `ulimit -w`: dash), a limit Linux has not enforced since 2.4.25, so the mark changes
 * nothing else (the command and its descendants inherit it); raises its `oom_score_adj` to
 * 1000 (allowed without privileges; measured on the build machines: without it an OOM inside
 * an exec can kill the keeper too); and `exec`s the command with stderr as `<stderr>` says
 * (`e` discard, `o` into stdout, `p` as it is). No fork: the command itself is the exec's
 * leader and the receipt is its exit status. A shell that takes neither option runs
 * {@linkcode FORKING_WRAPPER} instead.
 */
const PLAIN_WRAPPER = 'if { ulimit -S -x "$1" || ulimit -S -w "$1"; } 2>/dev/null; then f=$2; shift 2; ' +
  "echo 1000 > /proc/self/oom_score_adj 2>/dev/null; " +
  'case $f in e) exec "$@" 2>/dev/null;; o) exec "$@" 2>&1;; *) exec "$@";; esac; fi; ' +
  `${FORKING_WRAPPER}exit $?`;

/**
 * The exec's `Cmd` for a command: `/bin/sh -c <wrapper> sh <mark> <stderr> <argv…>`, the
 * wrapper being {@linkcode KILLING_WRAPPER} with `killDescendantsOnExit`, else
 * {@linkcode PLAIN_WRAPPER}. Exported for the benchmark, which runs the same `Cmd` through
 * dockerode to compare like with like.
 *
 * @param argv the command and its arguments
 * @param mark the process's mark ({@linkcode processMark})
 * @param stderr `e` discard, `o` into stdout, `p` as it is
 * @param killDescendantsOnExit whether the wrapper kills the command's group when it exits
 * @returns the argv of the exec
 */
export function wrappedCommand(argv: readonly string[], mark: string, stderr: "e" | "o" | "p", killDescendantsOnExit = false): string[] {
  return ["/bin/sh", "-c", killDescendantsOnExit ? KILLING_WRAPPER : PLAIN_WRAPPER, "sh", mark, stderr, ...argv];
}

/**
 * The Engine's detach sequence for an exec with a terminal: Ctrl-] then Ctrl-@, Ctrl-^,
 * Ctrl-_, twice over (bytes `1d 00 1e 1f 1d 00 1e 1f`). The Engine always watches a TTY
 * exec's stdin for one (an empty value means its default Ctrl-P Ctrl-Q, which would swallow
 * an editor's Ctrl-P; measured on Engine 28.5), holds back a byte that could begin it until
 * the next byte shows it does not, and ends the attach on the whole sequence. Ctrl-] is the
 * byte terminal clients keep for their own escape (telnet, `virsh console`), so this costs a
 * lone Ctrl-] waiting for the next keystroke, and the eight bytes in a row are never typed.
 */
export const TERMINAL_DETACH_KEYS = "ctrl-],ctrl-@,ctrl-^,ctrl-_,ctrl-],ctrl-@,ctrl-^,ctrl-_";

/** Most kills of one end (see `DockerProcess.#kill`). */
const KILL_ATTEMPTS = 8;

/**
 * How long a kill that found a leader waits for this exec's own exit before it asks the
 * Engine (ms): the Engine reports an exec's exit up to 2 s after its leader's when a
 * descendant still holds the output (dockerd's stream wait), plus a margin.
 */
const KILLED_EXIT_WAIT_MS = 5_000;

/** The outcome a kill counts as when the leader it found was not this exec's. */
const ABSENT_LEADER: GuestKillOutcome = Object.freeze({ kind: "absent" });

/** Whether `promise` settles within `ms` milliseconds (a rejection counts as settled). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    promise.then(done, done);
  });
}

/** Most bytes one stdin write is split into on its way to the socket. */
const STDIN_HIGH_WATER_MARK = 64 * 1024;

/** The pieces a process needs from its sandbox (kept narrow on purpose). */
export interface ProcessHost extends ExitObserverHost {
  /** The sandbox user every process runs as. */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The keeper's identity: guard execs run as it. */
  readonly keeperUser: { readonly uid: number; readonly gid: number };
  /**
   * Count a starting exec against the sandbox's bounds; returns its release (idempotent).
   *
   * @throws {SandboxStateError} when an import runs (a process start only)
   * @throws {SandboxQuotaError} when `maxConcurrentProcesses` execs already run
   */
  admit(kind: ProcessKind, action: string): () => void;
  /** A caller's process started: the sandbox's execution deadline begins with the first one (resolves once its guest guard runs). */
  processStarted(): Promise<void>;
}

/** What one exec runs and how what ends it early is handled. */
export interface GuestCommand {
  /** The command: absolute executable, then literal arguments. */
  readonly argv: readonly string[];
  /** The complete environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Guest working directory. */
  readonly workingDir: string;
  /** Bound on unread stdout and stderr, bytes. */
  readonly maxBufferedOutputBytes: number;
  /** Its own deadline, milliseconds, or `undefined`. */
  readonly timeoutMs: number | undefined;
  /** Kill the descendants left in its process group when it exits. */
  readonly killDescendantsOnExit: boolean;
  /** Where stderr goes. */
  readonly stderr: SandboxStderrMode;
  /** Attach stdin (else the guest reads `/dev/null` and `stdin` refuses writes). */
  readonly attachStdin: boolean;
  /** `"process"` (the caller's) or `"file"` (a file reader or writer of the backend). */
  readonly kind: ProcessKind;
  /** Whether what ends it early stops the whole sandbox (the process of policy `processes: "one"`). */
  readonly endsSandbox: boolean;
  /** The terminal to run it on, or `undefined` for pipes. */
  readonly tty?: NormalizedSandboxTerminal;
}

/** A reserved, not yet started process. */
export class DockerProcessReservation implements SandboxProcessReservation {
  /** The normalised request. */
  readonly request: NormalizedSandboxProcessRequest;
  readonly #host: ProcessHost;
  readonly #endsSandbox: boolean;
  readonly #attachStdin: boolean;
  #started = false;

  /**
   * @internal Made by `DockerSandbox.reserveProcess` (and `run()`, which attaches stdin only
   * when it has input to send).
   */
  constructor(request: NormalizedSandboxProcessRequest, host: ProcessHost, endsSandbox: boolean, attachStdin = true) {
    this.request = request;
    this.#host = host;
    this.#endsSandbox = endsSandbox;
    this.#attachStdin = attachStdin;
  }

  /**
   * Create and start the exec, attached to stdin, stdout and stderr. With policy
   * `execution: { kind: "deadline" }`, the sandbox's first process also starts the sandbox's
   * guest-side deadline before this resolves.
   *
   * @throws {SandboxStateError} when called twice, or while an import runs
   * @throws {SandboxQuotaError} when `maxConcurrentProcesses` processes already run
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox is stopped
   * @throws {SandboxAbortedError} when `options.signal` aborted before the exec started
   * @throws {SandboxEngineError} when the Engine fails
   */
  start(options: SandboxStartOptions = {}): Promise<DockerProcess> {
    if (this.#started) return Promise.reject(new SandboxStateError("Cannot start process: it was already started"));
    this.#started = true;
    const { request } = this;
    return startGuestProcess(this.#host, {
      argv: [request.executable, ...request.args],
      env: request.env,
      workingDir: confineWorkingDirectory(request.cwd, "start process", "request.cwd"),
      maxBufferedOutputBytes: request.maxBufferedOutputBytes,
      timeoutMs: request.timeoutMs,
      killDescendantsOnExit: request.killDescendantsOnExit,
      stderr: request.stderr,
      attachStdin: this.#attachStdin,
      kind: "process",
      endsSandbox: this.#endsSandbox,
      tty: request.tty,
    }, "start process", options);
  }
}

/**
 * A random process mark: a decimal number of 15 digits (from 48 random bits), which fits
 * `comm` (15 bytes) for the forking wrapper and a soft `RLIMIT_LOCKS` for the plain one.
 *
 * @returns the mark, e.g. `"348120954011276"`
 */
export function processMark(): string {
  const [high, low] = crypto.getRandomValues(new Uint32Array(2));
  return String(10 ** 14 + ((high & 0xffff) * 2 ** 32 + low) % (9 * 10 ** 14));
}

/**
 * Start `command` in the sandbox: admission, exec create and start, then the running
 * process.
 *
 * @throws what {@linkcode DockerProcessReservation.start} throws
 */
export async function startGuestProcess(
  host: ProcessHost,
  command: GuestCommand,
  action: string,
  options: SandboxStartOptions = {},
): Promise<DockerProcess> {
  if (host.stopping.aborted) throw host.stopping.reason as SandboxError;
  const release = host.admit(command.kind, action);
  const mark = processMark();
  const stderr = command.stderr === "discard" ? "e" : command.stderr === "stdout" ? "o" : "p";
  let attach: EngineUpgrade;
  let execId: string | undefined;
  // When the exec was started (epoch ms): the start of the range its OOM check reads.
  let startedAt = 0;
  try {
    execId = await createExec(host.engine, host.keeperId, {
      Cmd: wrappedCommand(command.argv, mark, stderr, command.killDescendantsOnExit),
      Env: Object.entries(command.env).map(([variable, value]) => `${variable}=${value}`),
      User: `${host.user.uid}:${host.user.gid}`,
      WorkingDir: command.workingDir,
      AttachStdin: command.attachStdin,
      ...(command.tty === undefined
        ? {}
        : { Tty: true, ConsoleSize: [command.tty.rows, command.tty.columns] as const, DetachKeys: TERMINAL_DETACH_KEYS }),
    }, { timeoutMs: host.policy.deadlines.startupMs, signal: options.signal });
    // Its answer is bounded by the start deadline too (a lost reply fails in that time).
    startedAt = Date.now();
    attach = await startExec(host.engine, execId, {
      headerTimeoutMs: host.policy.deadlines.startupMs,
      signal: options.signal,
      tty: command.tty !== undefined,
    });
  } catch (error) {
    if (host.stopping.aborted) {
      release();
      throw host.stopping.reason as SandboxError;
    }
    const failure = asSandboxError(error, action);
    // A start whose reply was lost (a transport failure, not an Engine refusal) may have
    // started the command: it is found by its mark and ended in the background, and only then
    // is its slot given back; the caller learns it at once (an abort stays prompt).
    if (execId === undefined || !(error instanceof DockerEngineTransportError)) {
      release();
      throw failure;
    }
    endUnattached(host, execId, mark).finally(release);
    throw rephrased(
      failure,
      `${failure.message}; the command may have started (exec ${execId}): it is found by its mark and ended, and its maxConcurrentProcesses slot is held until then`,
      error,
    );
  }
  // A stop that raced the start: the Engine may already be writing its own error text
  // into the stream, which must never reach the caller as the process's output.
  if (host.stopping.aborted) {
    release();
    attach.abort(host.stopping.reason);
    throw host.stopping.reason as SandboxError;
  }
  const process = new DockerProcess(host, command, mark, execId, attach, release, startedAt);
  if (command.kind === "process") await host.processStarted();
  return process;
}

/**
 * End the command of exec `execId` that may have started though its start's reply was lost:
 * up to {@linkcode KILL_ATTEMPTS} times, the exec is inspected and, while it runs, its
 * process group killed by `mark` (waits of 10 ms doubling between attempts, as for a kill).
 * Ends once it was killed or had exited, or after the last attempt; never rejects.
 */
async function endUnattached(host: ProcessHost, execId: string, mark: string): Promise<void> {
  for (let attempt = 0; attempt < KILL_ATTEMPTS && !host.stopping.aborted; attempt++) {
    try {
      const state = await inspectExec(host.engine, execId, { timeoutMs: host.policy.deadlines.cleanupMs });
      if (!state.Running && state.ExitCode !== null) return;
      if (state.Running && (await killProcessGroup(host, mark)).kind === "killed") return;
    } catch {
      // Not answered, or the kill could not run: tried again after the wait.
    }
    await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt));
  }
}

/** The kill reason of a fault of the output stream. */
function faultReason(error: SandboxError): SandboxKillReason {
  switch (error.code) {
    case "output_limit":
      return "output_limit";
    case "abandoned_output":
      return "abandoned_output";
    case "framing":
      return "framing";
    default:
      return "connection";
  }
}

/**
 * A running process (see `SandboxProcess`). Made by `reservation.start()`, `run()` and the
 * file reader and writer.
 */
export class DockerProcess implements SandboxProcess {
  /** The process's standard input (close = half-close). */
  readonly stdin: WritableStream<Uint8Array>;
  /** The process's standard output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** The process's standard error (empty with `stderr: "discard"` or `"stdout"`, or a terminal). */
  readonly stderr: ReadableStream<Uint8Array>;
  /** The exit receipt. */
  readonly exit: Promise<SandboxExitReceipt>;
  readonly #host: ProcessHost;
  readonly #command: GuestCommand;
  readonly #mark: string;
  readonly #execId: string;
  #endReason: SandboxKillReason | undefined;
  #settled = false;
  #killing: Promise<void> | undefined;

  /** @internal Made by {@linkcode startGuestProcess}. */
  constructor(host: ProcessHost, command: GuestCommand, mark: string, execId: string, attach: EngineUpgrade, release: () => void, startedAt: number) {
    this.#host = host;
    this.#command = command;
    this.#mark = mark;
    this.#execId = execId;
    // The attach output ends with the sandbox's stop cause once compute removal begins.
    const onStopping = () => attach.abort(host.stopping.reason);
    host.stopping.addEventListener("abort", onStopping, { once: true });
    // A source failure seen while the sandbox is stopping is the stop cause: removing compute
    // may break the connection before the abort above reaches it. A terminal's stream has no
    // frames: it must never reach the demultiplexer.
    const output = (command.tty === undefined ? demultiplex : terminalOutput)(attach.readable, {
      maxBufferedOutputBytes: command.maxBufferedOutputBytes,
      onFault: (error) => {
        const stopped = host.stopping.aborted && error.code === "source_failed";
        const failure = stopped ? host.stopping.reason as SandboxError : asOutputError(error);
        void this.end(faultReason(failure), failure).catch(() => {});
        return failure;
      },
      // The attach stream also ends cleanly when the Engine dies: the output is complete only
      // once the exec's exit was observed; without it, stdout and stderr fail instead.
      confirmEnd: () =>
        this.exit.then((receipt) => {
          if (receipt.kind !== "unavailable") return;
          throw host.stopping.aborted
            ? host.stopping.reason as SandboxError
            : new SandboxEngineError("Cannot read process output: its stream ended but the process's exit could not be observed, so the output may be cut");
        }),
    });
    this.stdout = output.stdout;
    this.stderr = output.stderr;
    const ended = new AbortController();
    // The Engine ends a terminal's whole attach (its output too) when its input ends, so a
    // terminal's close ends only the writing side here; the guest reads end of input from a
    // typed Ctrl-D.
    this.stdin = command.attachStdin ? stdinStream(attach, host.stopping, ended.signal, command.tty === undefined) : detachedStdin();
    const streamEnded = output.done.then(() => undefined, () => undefined);
    const cancelTimeout = command.timeoutMs === undefined
      ? () => {}
      : setLongTimeout(() => void this.end("timeout").catch(() => {}), command.timeoutMs);
    this.exit = observeExit(host, execId, streamEnded).finally(() => {
      this.#settled = true;
      cancelTimeout();
      release();
    }).then(async (observed): Promise<SandboxExitReceipt> => {
      const reason = this.#endReason;
      if (observed.kind === "exited" && reason !== undefined) return Object.freeze({ kind: "killed", reason, code: observed.code });
      if (observed.kind === "exited" && observed.code === 128 + 9) {
        // A SIGKILL nobody of ours sent: the kernel's OOM killer, when the keeper's events say
        // it acted while this process ran (processes raise their oom_score_adj, so it picks
        // one of them before the keeper).
        if (await oomKilledSince(host, startedAt)) return Object.freeze({ kind: "exited", code: observed.code, oomKilled: true });
        // Or the keeper's removal (from outside, or a stop under way) killed it: its exit code
        // can be read in the moment before the Engine forgets the exec. That is the sandbox
        // stopping first, as for an exec the Engine no longer knows.
        // (checkKeeper stops the sandbox when its keeper is gone.)
        if (!host.stopping.aborted) await checkKeeper(host);
        if (host.stopping.aborted) {
          await host.stopEnded;
          return Object.freeze({ kind: "unavailable", reason: "sandbox_stopped" });
        }
      }
      return Object.freeze(observed);
    });
    this.exit.catch(() => {});
    // The connection lives as long as the output. Descendants may write after the leader
    // exited, but the Engine ends the stream about 2 s after the leader's exit (as with
    // `docker exec`), so later output of descendants is not delivered. Its close is
    // registered after the exit observer, so the exit inspect goes out before the teardown.
    streamEnded.then(() => {
      host.stopping.removeEventListener("abort", onStopping);
      attach.close().catch(() => {});
    });
    // Once the output ended and the leader's exit was observed, nothing more can flow: the
    // connection is dropped, so a stdin write the guest will never read fails at once
    // instead of waiting for the socket to drain.
    if (command.attachStdin) {
      Promise.all([streamEnded, this.exit]).then(() => {
        ended.abort(new SandboxStateError("Cannot write stdin: the process has exited"));
        attach.abort(ended.signal.reason);
      }, () => {});
    }
  }

  /**
   * Kill the process (see `SandboxProcess.kill`).
   *
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox stopped first
   */
  async kill(): Promise<void> {
    if (this.#host.stopping.aborted) throw this.#host.stopping.reason as SandboxError;
    await this.end("requested");
  }

  /**
   * Resize the process's terminal (see `SandboxProcess.resize`): `POST /exec/{id}/resize`
   * within `policy.deadlines.cleanupMs`.
   *
   * @throws {SandboxConfigurationError} when `size` is not `{ columns, rows }` from 1 to 65535
   * @throws {SandboxStateError} when it runs without a terminal, or its exit was observed
   * @throws {SandboxStoppedError} (or the stop cause) when the sandbox stopped first
   * @throws {SandboxEngineError} when the Engine fails
   */
  async resize(size: SandboxTerminalSize): Promise<void> {
    const { columns, rows } = normalizeTerminalSize(size);
    const host = this.#host;
    if (host.stopping.aborted) throw host.stopping.reason as SandboxError;
    if (this.#command.tty === undefined) {
      throw new SandboxStateError("Cannot resize process: it was started without a terminal; reserve it with tty: { columns, rows }");
    }
    const finished = () => new SandboxStateError("Cannot resize process: it has exited; resize a process only while it runs");
    if (this.#settled) throw finished();
    try {
      await resizeExec(host.engine, this.#execId, { rows, columns }, { timeoutMs: host.policy.deadlines.cleanupMs });
    } catch (error) {
      if (host.stopping.aborted) throw host.stopping.reason as SandboxError;
      // An exec that exited before its receipt was observed is refused by the Engine too.
      const state = this.#settled ? undefined : await inspectExec(host.engine, this.#execId, { timeoutMs: host.policy.deadlines.cleanupMs }).catch(() => undefined);
      if (this.#settled || state?.Running === false) throw finished();
      throw asSandboxError(error, "resize process");
    }
  }

  /**
   * @internal End the process for `reason`: kill its process group inside the guest (the
   * receipt, unless already observed, becomes `killed` with `reason`), or, for the process
   * of policy `processes: "one"`, stop the sandbox with `cause`. When the kill cannot run,
   * the sandbox stops instead, so a bound is never left unenforced. Nothing happens once the
   * sandbox is stopping (its stop ends every process).
   */
  end(reason: SandboxKillReason, cause?: SandboxError): Promise<void> {
    const host = this.#host;
    if (host.stopping.aborted) return Promise.resolve();
    if (this.#command.endsSandbox) return host.stopFor(cause ?? this.#stopCause(reason));
    if (!this.#settled) this.#endReason ??= reason;
    this.#killing ??= this.#kill(reason).finally(() => {
      this.#killing = undefined;
    });
    return this.#killing;
  }

  /**
   * Run the kill inside the guest until it found the leader or the leader is gone. The
   * Engine answers an exec start before its process exists, so a kill right after the start
   * can come before the wrapper set its mark; and while a fork bomb holds every PID, the
   * runtime may fail to start the kill exec (measured 2026-12-01: about 1 start in 20;
   * 2026-12-05, runc 1.1.5 on Linux 6.18: every start), so an attempt after one the runtime
   * could not start runs with the PID limit raised for it ({@linkcode withKillHeadroom}). While
   * the exec still runs (`GET /exec/{id}/json` has no exit code) and the kill found no
   * leader or could not start, it is repeated after 10, 20, 40, … 640 ms, 8 kills at most. A
   * kill that found a leader counts once this exec ended (awaited up to
   * {@linkcode KILLED_EXIT_WAIT_MS} the first time): the leader it found may have been
   * another exec's that took this one's mark. When the kill exec cannot be created or does not end in time, when the last attempt
   * could not start, or when the leader still runs unfound after the last one (it changed
   * its mark), the sandbox stops instead, so the bound is never left unenforced.
   */
  async #kill(reason: SandboxKillReason): Promise<void> {
    const host = this.#host;
    const stop = (why: string, cause?: unknown) =>
      host.stopFor(new SandboxEngineError(`Cannot end process: ${why}, so the sandbox was stopped to end it (${reason})`, { cause }));
    try {
      let outcome: GuestKillOutcome = { kind: "absent" };
      let waited = false;
      for (let attempt = 0; attempt < KILL_ATTEMPTS; attempt++) {
        // A kill the runtime could not start (a full PID table) is tried again with room for it.
        outcome = outcome.kind === "unstarted"
          ? await withKillHeadroom(host, () => killProcessGroup(host, this.#mark))
          : await killProcessGroup(host, this.#mark);
        if (this.#settled || host.stopping.aborted) return;
        // "killed" says an exec leader carried the mark, not that it was this exec's: another
        // exec's leader may have taken the mark this one dropped (limits are readable and
        // settable by any process of the same user). Only this exec's own end counts, so it
        // is awaited (the Engine reports an exec's exit up to 2 s after its leader's when a
        // descendant holds the output) and asked for; while it runs, the kill goes on.
        if (outcome.kind === "killed" && await settlesWithin(this.exit, waited ? 0 : KILLED_EXIT_WAIT_MS)) return;
        waited ||= outcome.kind === "killed";
        const state = await inspectExec(host.engine, this.#execId, { timeoutMs: host.policy.deadlines.cleanupMs });
        if (!state.Running && state.ExitCode !== null) return;
        if (outcome.kind === "killed") outcome = ABSENT_LEADER;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10 * 2 ** attempt);
          this.exit.then(() => {
            clearTimeout(timer);
            resolve();
          }, resolve);
        });
        if (this.#settled || host.stopping.aborted) return;
      }
      await stop(
        outcome.kind === "unstarted"
          ? `the kill inside the guest did not run (the Engine reported its exec with code ${outcome.code} ${KILL_ATTEMPTS} times)`
          : `its leader still runs but no exec leader in the guest carries its mark ${this.#mark} (did it change its RLIMIT_LOCKS or rename itself?)`,
      );
    } catch (error) {
      if (host.stopping.aborted) return;
      await stop(`the kill inside the guest did not run (${error instanceof Error ? error.message : String(error)})`, error);
    }
  }

  /** Why the sandbox of policy `processes: "one"` stops when its process ends for `reason`. */
  #stopCause(reason: SandboxKillReason): SandboxError {
    if (reason === "timeout") {
      return new SandboxDeadlineError(`Cannot continue process: its timeoutMs of ${this.#command.timeoutMs} ms elapsed`);
    }
    if (reason === "abandoned_output") return new SandboxAbandonedOutputError("Cannot continue process: its output was abandoned");
    return new SandboxStoppedError(`Cannot continue: the sandbox's one process was ended (${reason}), so the sandbox was stopped`);
  }
}

/** The `stdin` of a process started without stdin: closing is a no-op, a write is refused. */
function detachedStdin(): WritableStream<Uint8Array> {
  return new WritableStream<Uint8Array>({
    write() {
      throw new SandboxStateError("Cannot write stdin: the process was started without stdin");
    },
  });
}

/**
 * The `stdin` of an attached process: writes go to the connection with backpressure; with
 * `halfClose`, `close()` and `abort()` half-close it (the guest reads end of file), without
 * (a terminal) they only end the stream.
 */
function stdinStream(attach: EngineUpgrade, stopping: AbortSignal, ended: AbortSignal, halfClose: boolean): WritableStream<Uint8Array> {
  const writer = attach.writable.getWriter();
  const stoppedError = () =>
    stopping.aborted
      ? (stopping.reason as SandboxError | undefined) ?? new SandboxStoppedError("Cannot write stdin: the sandbox stopped")
      : ended.reason as SandboxError;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    writer.releaseLock();
    if (halfClose) await attach.closeWrite();
  };
  return new WritableStream<Uint8Array>({
    async write(chunk) {
      if (stopping.aborted || ended.aborted) throw stoppedError();
      try {
        await writer.write(chunk);
      } catch (error) {
        throw stopping.aborted || ended.aborted ? stoppedError() : asSandboxError(error, "write stdin");
      }
    },
    async close() {
      if (stopping.aborted || ended.aborted) throw stoppedError();
      try {
        await close();
      } catch (error) {
        throw stopping.aborted || ended.aborted ? stoppedError() : asSandboxError(error, "close stdin");
      }
    },
    async abort() {
      // Aborting stdin ends the guest's input the same way closing does.
      await close().catch(() => {});
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: STDIN_HIGH_WATER_MARK }));
}
