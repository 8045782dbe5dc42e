/**
 * {@linkcode AcpSession}: one initialized ACP connection to an agent in a sandbox, with one
 * session that runs many turns, and its release.
 *
 * @module
 */
import type { ContentBlock, InitializeResponse, NewSessionResponse } from "./protocol.ts";
import { z } from "zod";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import type { AcpReleaseReceipt } from "./_agent_process.ts";
import type { Bridge, Opened } from "./_bridge.ts";
import type { AcpTurn } from "./turn.ts";

/**
 * Options of {@linkcode AcpSession.prompt}.
 *
 * @example
 * ```ts
 * import type { AcpPromptOptions } from "./session.ts";
 *
 * const options: AcpPromptOptions = { signal: AbortSignal.timeout(120_000) };
 * ```
 */
export interface AcpPromptOptions {
  /**
   * Cancels the turn: an abort sends `session/cancel` (as `cancel()` does); the turn still
   * ends with the agent's answer, normally `stopReason` `"cancelled"`.
   *
   * @default {undefined}
   */
  readonly signal?: AbortSignal;
}

const block = z.looseObject({ type: z.string() });
const contentSchema = z.union([z.string(), block, z.array(block).min(1)]);

/**
 * An open ACP session over one sandbox process (the agent), made by `startAcpSession`.
 *
 * Ownership: the caller owns both this session and the sandbox. Release the session with
 * {@linkcode close} (or `await using`): it half-closes the agent's stdin, waits up to
 * `exitTimeoutMs` for the agent to exit, stops the sandbox's compute (`sandbox.stop()`: the
 * agent, every other process of the sandbox, their descendants and the keeper are removed) and joins the agent's streams. Files
 * stay: export them with `sandbox.exportTree()`, then `sandbox.destroy()`.
 *
 * When the agent exits on its own, or the sandbox stops, the bridge releases compute itself:
 * the running turn (and any later one) fails with an `AcpAgentExitedError` carrying the exit
 * receipt and the stderr tail; `close()` then returns the same receipt.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a running ACP session in a sandbox
 * await using session = await startAcpSession(sandbox, { executable: "/usr/local/bin/my-agent", args: ["--acp"] });
 * const turn = session.prompt("Write the report");
 * for await (const update of turn.updates) console.log(update.sessionUpdate);
 * console.log(await turn.stopReason);
 * const receipt = await session.close(); // compute is gone; files remain
 * ```
 */
export class AcpSession implements AsyncDisposable {
  /** The session ID the agent gave in `session/new`. */
  readonly sessionId: string;
  /** The agent's `initialize` answer: `protocolVersion`, `agentCapabilities`, `agentInfo`, `authMethods`. */
  readonly agent: InitializeResponse;
  /** The agent's full `session/new` answer (`sessionId`, optional `modes`, `configOptions`). */
  readonly newSession: NewSessionResponse;
  readonly #bridge: Bridge;

  /**
   * @internal Made by `startAcpSession`; not for callers.
   *
   * @param bridge The connection.
   * @param opened What opening answered.
   */
  constructor(bridge: Bridge, opened: Opened) {
    this.#bridge = bridge;
    this.agent = opened.initialize;
    this.newSession = opened.active.newSessionResponse;
    this.sessionId = this.newSession.sessionId;
  }

  /**
   * `"open"`; `"lost"` once the connection ended without `close()` (the agent exited or broke
   * the protocol, or the sandbox stopped; compute is released); `"closed"` once `close()` was
   * called.
   */
  get state(): "open" | "lost" | "closed" {
    return this.#bridge.state;
  }

  /** The end of the agent's stderr so far (at most `stderrTailBytes` bytes), decoded as UTF-8. */
  get stderrTail(): string {
    return this.#bridge.process.stderr.text();
  }

  /** All bytes the agent wrote to stderr so far, kept or not. */
  get stderrBytes(): number {
    return this.#bridge.process.stderr.totalBytes;
  }

  /**
   * Send a prompt (`session/prompt`) and return the turn: its updates as a stream and its stop
   * reason (see {@linkcode AcpTurn}). One turn at a time.
   *
   * @param content A string (one text block), one ACP `ContentBlock`, or a non-empty array of
   *   them. Blocks other than `text` and `resource_link` need the matching
   *   `agent.agentCapabilities.promptCapabilities`.
   * @param options Optional `signal` that cancels the turn.
   * @returns The turn.
   * @throws {SandboxConfigurationError} `configuration`: `content` or `options` is malformed
   * @throws {SandboxStateError} `invalid_state`: a turn is still running, or the session is closed
   */
  prompt(content: string | ContentBlock | readonly ContentBlock[], options: AcpPromptOptions = {}): AcpTurn {
    if (!contentSchema.safeParse(content).success) {
      throw new SandboxConfigurationError(
        "Cannot prompt: content must be a string, an ACP ContentBlock ({ type, … }) or a non-empty array of them",
      );
    }
    const signal = (options as { signal?: unknown } | null)?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new SandboxConfigurationError("Cannot prompt: options.signal must be an AbortSignal");
    }
    const blocks: readonly ContentBlock[] = typeof content === "string"
      ? [{ type: "text", text: content }]
      : Array.isArray(content)
      ? content
      : [content as ContentBlock];
    return this.#bridge.prompt(blocks, signal);
  }

  /**
   * Cancel the running turn (`session/cancel`, ACP v1 "Prompt Turn" § Cancellation): open
   * permission requests are answered `cancelled` at once, and the agent is expected to end the
   * turn with `stopReason` `"cancelled"`. No-op without a running turn.
   *
   * @returns Resolves once the notification was written.
   */
  cancel(): Promise<void> {
    return this.#bridge.cancel();
  }

  /**
   * Release the agent: a running turn rejects with a `SandboxStoppedError` and open
   * permission requests are answered `cancelled`; `session/close` is sent when the agent
   * advertises it; the connection ends, its stdin is half-closed, and it gets up to
   * `exitTimeoutMs` to exit (500 ms once it answered `session/close`), after which its
   * process group is ended (receipt `killed`, `requested`); then the sandbox's compute stops
   * and its stdout and stderr are joined. Files stay for `sandbox.exportTree()`; `sandbox.destroy()` remains the
   * caller's. Idempotent; after a failed stop, call again to retry it.
   *
   * @returns The exit receipt and the stderr tail.
   * @throws {SandboxEngineError} / {SandboxDeadlineError} when stopping compute failed
   *   (`sandbox.stop()`); call again to retry
   */
  close(): Promise<AcpReleaseReceipt> {
    return this.#bridge.close();
  }

  /** `await using` support: {@linkcode close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
