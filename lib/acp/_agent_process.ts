/**
 * The agent's sandbox process as the ACP connection needs it: stdin and stdout shaped for the
 * SDK's `ndJsonStream`, stderr drained into a bounded tail, and the release sequence — close
 * stdin, wait a bounded time for the exit, end the process group of an agent still running,
 * stop the sandbox's compute, join every stream.
 *
 * @module
 */
import type { Sandbox } from "../sandbox/backend.ts";
import type { SandboxExitReceipt, SandboxProcess } from "../sandbox/process.ts";
import { StderrTail } from "./_stderr_tail.ts";

/**
 * What releasing the agent's process observed.
 *
 * @example
 * ```ts
 * import type { AcpReleaseReceipt } from "./_agent_process.ts";
 *
 * const receipt: AcpReleaseReceipt = { exit: { kind: "exited", code: 0 }, stderrTail: "", stderrBytes: 0 };
 * ```
 */
export interface AcpReleaseReceipt {
  /**
   * The agent process's exit receipt: `{ kind: "exited", code }` when it exited (after its
   * stdin closed, or earlier); `{ kind: "killed", reason: "requested", code: 137 }` when it
   * did not exit after its stdin closed and the release ended its process group; `killed`
   * with another reason when a fault of its own ended it (say its output limit);
   * `unavailable` when compute was removed before its status was seen (the sandbox stopped
   * first; policy `processes: "one"`, where ending the process stops the sandbox).
   */
  readonly exit: SandboxExitReceipt;
  /** The end of the agent's stderr (at most `stderrTailBytes` bytes), decoded as UTF-8. */
  readonly stderrTail: string;
  /** All bytes the agent wrote to stderr, kept or not. */
  readonly stderrBytes: number;
}

/**
 * Longest wait for the agent's exit after its stdin closed once it answered `session/close`,
 * in milliseconds: 500 (it has nothing left to finish; a well-behaved agent exits within
 * milliseconds of end of file).
 */
export const ACP_CLOSED_SESSION_EXIT_GRACE_MS = 500;

/** How long the release waits for the receipt of the kill of an agent that did not exit. */
const KILL_RECEIPT_WAIT_MS = 5_000;

/** The agent process with its streams adapted for the SDK, and its release. */
export class AgentProcess {
  /** The agent's stdout for `ndJsonStream` (a cancel does not abandon the sandbox's stdout). */
  readonly input: ReadableStream<Uint8Array>;
  /** The agent's stdin for `ndJsonStream`. */
  readonly output: WritableStream<Uint8Array>;
  /** The agent's stderr, drained. */
  readonly stderr: StderrTail;
  /** The process's exit receipt. */
  readonly exit: Promise<SandboxExitReceipt>;
  readonly #sandbox: Sandbox;
  readonly #process: SandboxProcess;
  #exitTimeoutMs: number;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stdoutEnded: Promise<void>;
  #quiet: Promise<void> | undefined;
  #release: Promise<AcpReleaseReceipt> | undefined;

  /**
   * @param sandbox The sandbox that runs the process (stopped by the release).
   * @param process The started process.
   * @param options `exitTimeoutMs` and `stderrTailBytes`.
   */
  constructor(sandbox: Sandbox, process: SandboxProcess, options: { readonly exitTimeoutMs: number; readonly stderrTailBytes: number }) {
    this.#sandbox = sandbox;
    this.#process = process;
    this.#exitTimeoutMs = options.exitTimeoutMs;
    this.exit = process.exit;
    this.stderr = new StderrTail(process.stderr, options.stderrTailBytes);
    const stdin = process.stdin.getWriter();
    this.#stdin = stdin;
    // The SDK takes a writer for each message and never closes the stream: the release
    // half-closes the process's stdin itself through the writer held here.
    this.output = new WritableStream<Uint8Array>({ write: (chunk) => stdin.write(chunk) });
    const { readable, ended } = detachable(process.stdout);
    this.input = readable;
    this.#stdoutEnded = ended;
  }

  /**
   * The agent answered `session/close`: it has nothing left to finish, so the release waits
   * at most {@linkcode ACP_CLOSED_SESSION_EXIT_GRACE_MS} (or `exitTimeoutMs` when shorter) for
   * it to exit after its stdin closed.
   */
  sessionClosed(): void {
    this.#exitTimeoutMs = Math.min(this.#exitTimeoutMs, ACP_CLOSED_SESSION_EXIT_GRACE_MS);
  }

  /**
   * Close stdin, wait up to `exitTimeoutMs` for the exit, end the process group of an agent
   * that still runs (`kill()`: `SIGKILL` inside the guest), stop the sandbox's compute, and
   * wait for stdout and stderr to end. Idempotent; after a failed stop, calling again retries it.
   *
   * @returns What the release observed.
   * @throws what `sandbox.stop()` throws (`SandboxEngineError`, `SandboxDeadlineError`)
   */
  release(): Promise<AcpReleaseReceipt> {
    this.#release ??= this.#released().catch((error) => {
      this.#release = undefined;
      throw error;
    });
    return this.#release;
  }

  async #released(): Promise<AcpReleaseReceipt> {
    this.#quiet ??= this.#quiesce();
    await this.#quiet;
    await this.#sandbox.stop();
    await Promise.all([this.#stdoutEnded, this.stderr.done]);
    const exit = await this.exit;
    return Object.freeze({ exit, stderrTail: this.stderr.text(), stderrBytes: this.stderr.totalBytes });
  }

  /** Half-close stdin and give the process `exitTimeoutMs` to exit (an agent that does not read can block the close). */
  async #quiesce(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#exitTimeoutMs)));
    this.#stdin.close().catch(() => {
      // stdin is already gone (the process exited, or the sandbox stopped): nothing to close
    });
    let exited = false;
    try {
      await Promise.race([this.exit.then(() => void (exited = true)), elapsed]);
    } finally {
      clearTimeout(timer);
    }
    if (exited) return;
    // An agent whose own child still runs may keep running on stdin EOF (measured for the
    // Claude ACP adapters): end its process group, so the receipt says so rather than
    // `unavailable`. Its receipt is observed within moments; the stop settles it otherwise.
    await this.#process.kill().catch(() => {
      // the sandbox stopped meanwhile: nothing is left to end
    });
    await Promise.race([this.exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, KILL_RECEIPT_WAIT_MS)))]);
    clearTimeout(timer);
  }
}

/**
 * Pass `stdout` through; when the reader cancels (the SDK closed its connection), keep
 * reading the rest into the void instead of cancelling `stdout`, which would stop the sandbox
 * as abandoned output before the release decides to. `ended` settles once `stdout` ended or
 * errored.
 */
function detachable(stdout: ReadableStream<Uint8Array>): { readable: ReadableStream<Uint8Array>; ended: Promise<void> } {
  const reader = stdout.getReader();
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const drain = async () => {
    try {
      while (!(await reader.read()).done) { /* the connection is closed: nobody reads ACP any more */ }
    } catch {
      // the sandbox stopped
    } finally {
      end();
    }
  };
  let cancelled = false;
  const readable = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (cancelled) return; // the drain sees the same error and settles `ended`
        end();
        controller.error(error);
        return;
      }
      if (cancelled) return;
      if (chunk.done) {
        end();
        controller.close();
      } else {
        controller.enqueue(chunk.value);
      }
    },
    cancel() {
      cancelled = true;
      void drain();
    },
  }, { highWaterMark: 0 });
  return { readable, ended };
}
