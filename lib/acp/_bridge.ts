/**
 * The ACP client connection over one agent process: opening (`initialize`, `session/new`),
 * turns with their update streams, cancellation, permission routing, the granted host
 * handlers, and the end of the connection — asked for (`close`) or not (the agent exited).
 *
 * Updates are read through the SDK's `ActiveSession`, which queues each `session/update` as
 * it arrives and the prompt's answer after them, so a turn's stream holds every update the
 * agent sent before it answered the prompt.
 *
 * @module
 */
import * as acp from "@agentclientprotocol/sdk";
import type { ActiveSession, ContentBlock, InitializeResponse, RequestPermissionResponse, StopReason } from "@agentclientprotocol/sdk";
import { z } from "zod";
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxDeadlineError,
  SandboxError,
  SandboxStateError,
  SandboxStoppedError,
} from "../sandbox/errors.ts";
import type { Sandbox } from "../sandbox/backend.ts";
import type { SandboxProcess } from "../sandbox/process.ts";
import { raceDeadline } from "../streams/deadline.ts";
import { type AcpReleaseReceipt, AgentProcess } from "./_agent_process.ts";
import { UpdateStream } from "./_update_stream.ts";
import { AcpAgentError, AcpAgentExitedError, markAcpInitialize } from "./errors.ts";
import type { NormalizedAcpSessionOptions } from "./options.ts";
import { AcpPermissionRequest } from "./permission.ts";
import { type GuestFileSandbox, sandboxFileSystem } from "./_sandbox_files.ts";
import { sandboxTerminals } from "./_sandbox_terminals.ts";
import type { AcpTurn } from "./turn.ts";

const stopReasons = z.enum(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]);
const initializeAnswer = z.looseObject({ protocolVersion: z.number() });
const newSessionAnswer = z.looseObject({ sessionId: z.string() });

/** What `session/new` and `initialize` answered. */
export interface Opened {
  readonly initialize: InitializeResponse;
  readonly active: ActiveSession;
}

/** One prompt turn in flight. */
class Turn implements AcpTurn {
  readonly updates: ReadableStream<acp.SessionUpdate>;
  readonly stopReason: Promise<StopReason>;
  readonly sink: UpdateStream;
  /** Updates already in `sink` when the prompt was sent. */
  readonly leadingUpdates: number;
  /** A failure that decides the outcome once the agent answered (overflow, a throwing callback). */
  failure: SandboxError | undefined;
  cancelRequested = false;
  #resolve!: (reason: StopReason) => void;
  #reject!: (error: unknown) => void;

  constructor(sink: UpdateStream) {
    this.sink = sink;
    this.leadingUpdates = sink.pushed;
    this.updates = sink.readable;
    this.stopReason = new Promise<StopReason>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A caller that only reads the updates must not get an unhandled rejection.
    this.stopReason.catch(() => {});
  }

  /** What the caller gets: the stream and the promise, nothing of the bookkeeping. */
  handle(): AcpTurn {
    return Object.freeze({ updates: this.updates, stopReason: this.stopReason, leadingUpdates: this.leadingUpdates });
  }

  /** The agent answered with `reason`. */
  stop(reason: StopReason): void {
    if (this.failure) return this.fail(this.failure);
    this.sink.close();
    this.#resolve(reason);
  }

  fail(error: unknown): void {
    this.sink.fail(error);
    this.#reject(error);
  }
}

/** The connection, its process and its one session. */
export class Bridge {
  readonly process: AgentProcess;
  readonly connection: acp.ClientConnection;
  readonly #options: NormalizedAcpSessionOptions;
  readonly #permissions = new Set<AcpPermissionRequest>();
  #active: ActiveSession | undefined;
  /** Where the next (or the running) turn's updates go. */
  #sink: UpdateStream;
  #turn: Turn | undefined;
  #closing = false;
  /** Drops the sandbox terminals of `terminal: "sandbox"` (their processes end with compute). */
  readonly #releaseTerminals: (() => void) | undefined;
  /** The close handshake (`session/close`, then the end of the connection), once `close()` began. */
  #handshake: Promise<void> | undefined;
  /** The agent's `initialize` answer, once the session opened. */
  #agent: InitializeResponse | undefined;
  /** The failure of a connection that ended without `close()`; compute is released by then. */
  #lost: Promise<SandboxError> | undefined;

  constructor(sandbox: Sandbox, process: SandboxProcess, options: NormalizedAcpSessionOptions) {
    this.#options = options;
    this.process = new AgentProcess(sandbox, process, options);
    this.#sink = new UpdateStream(options.maxBufferedUpdateBytes);
    const app = acp.client({ name: options.clientInfo.name })
      .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => this.#permission(params, signal));
    const fs = options.fileSystem === "sandbox" ? sandboxFileSystem(sandbox as GuestFileSandbox, options.maxMessageBytes) : options.fileSystem;
    const terminals = options.terminal === "sandbox" ? sandboxTerminals(sandbox, options.cwd) : undefined;
    this.#releaseTerminals = terminals?.releaseAll;
    const terminal = terminals ?? (options.terminal === "sandbox" ? undefined : options.terminal);
    if (fs?.readTextFile) app.onRequest(acp.methods.client.fs.readTextFile, ({ params, signal }) => fs.readTextFile!(params, signal));
    if (fs?.writeTextFile) {
      app.onRequest(acp.methods.client.fs.writeTextFile, async ({ params, signal }) => (await fs.writeTextFile!(params, signal)) ?? {});
    }
    if (terminal) {
      app.onRequest(acp.methods.client.terminal.create, ({ params, signal }) => terminal.create(params, signal))
        .onRequest(acp.methods.client.terminal.output, ({ params, signal }) => terminal.output(params, signal))
        .onRequest(acp.methods.client.terminal.waitForExit, ({ params, signal }) => terminal.waitForExit(params, signal))
        .onRequest(acp.methods.client.terminal.kill, async ({ params, signal }) => (await terminal.kill(params, signal)) ?? {})
        .onRequest(acp.methods.client.terminal.release, async ({ params, signal }) => (await terminal.release(params, signal)) ?? {});
    }
    this.connection = app.connect(
      acp.ndJsonStream(this.process.output, this.process.input, { maxMessageBytes: options.maxMessageBytes }),
    );
    this.connection.signal.addEventListener("abort", () => this.#ended(this.connection.signal.reason), { once: true });
  }

  /** `"open"`, `"lost"` (the connection ended without `close()`) or `"closed"`. */
  get state(): "open" | "lost" | "closed" {
    return this.#closing ? "closed" : this.#lost ? "lost" : "open";
  }

  /**
   * Send `initialize`, then `session/new`, within `openTimeoutMs` and until `signal` aborts.
   * On any failure the process is released before the error is thrown.
   */
  async open(): Promise<Opened> {
    const options = this.#options;
    let step = "initialize";
    let answered: InitializeResponse | undefined;
    const handshake = (async (): Promise<Opened> => {
      const initialize = await this.connection.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: options.fileSystem === "sandbox"
            ? { readTextFile: true, writeTextFile: true }
            : { readTextFile: Boolean(options.fileSystem?.readTextFile), writeTextFile: Boolean(options.fileSystem?.writeTextFile) },
          terminal: options.terminal !== undefined,
          // Terminal-based authentication would run a login command on the client's host.
          auth: { terminal: false },
        },
        clientInfo: options.clientInfo,
      });
      const version = initializeAnswer.safeParse(initialize);
      if (!version.success) throw new AcpAgentError("Cannot open ACP session: the agent's initialize answer has no protocolVersion", { cause: version.error });
      if (version.data.protocolVersion !== acp.PROTOCOL_VERSION) {
        throw new AcpAgentError(
          `Cannot open ACP session: the agent answered protocolVersion ${version.data.protocolVersion}; this bridge speaks ACP protocol version ${acp.PROTOCOL_VERSION}`,
        );
      }
      answered = initialize;
      if (options.authenticate) {
        step = "authenticate";
        const methodId = await chooseAuthMethod(options.authenticate, initialize);
        if (methodId !== undefined) await this.connection.agent.request(acp.methods.agent.authenticate, { methodId });
      }
      step = "session/new";
      const active = await this.connection.agent.buildSession({ cwd: options.cwd, mcpServers: [...options.mcpServers] }).start();
      const session = newSessionAnswer.safeParse(active.newSessionResponse);
      if (!session.success) throw new AcpAgentError("Cannot open ACP session: the agent's session/new answer has no sessionId", { cause: session.error });
      return { initialize, active };
    })();
    try {
      const opened = await raceDeadline(handshake, {
        timeoutMs: options.openTimeoutMs,
        signal: options.signal,
        onTimeout: () =>
          new SandboxDeadlineError(
            `Cannot open ACP session: the agent did not answer ${step} within ${options.openTimeoutMs} ms (openTimeoutMs); ` +
              "check the agent command, or raise options.openTimeoutMs",
          ),
        onAbort: (reason) => new SandboxAbortedError("Cannot open ACP session: options.signal aborted", { cause: reason }),
      });
      this.#active = opened.active;
      this.#agent = opened.initialize;
      void this.#pump(opened.active);
      return opened;
    } catch (error) {
      const failure = await this.#failureOf(error, `open ACP session: the agent answered ${step}`);
      if (answered !== undefined) markAcpInitialize(failure, answered);
      await this.close(failure).catch(() => {
        // compute could not be stopped; the caller's sandbox.destroy() stops it as well
      });
      throw failure;
    }
  }

  /** Start a turn (see `AcpSession.prompt`). */
  prompt(content: readonly ContentBlock[], signal: AbortSignal | undefined): AcpTurn {
    if (this.#closing) throw new SandboxStateError("Cannot prompt: the ACP session is closed");
    if (this.#lost) {
      // The agent is gone: the turn fails as the last one did, with the exit receipt.
      const turn = new Turn(new UpdateStream(this.#options.maxBufferedUpdateBytes));
      this.#lost.then((error) => turn.fail(error));
      return turn.handle();
    }
    if (this.#turn) throw new SandboxStateError("Cannot prompt: a turn is still running; wait for turn.stopReason or call cancel() first");
    const sink = this.#sink;
    this.#sink = new UpdateStream(this.#options.maxBufferedUpdateBytes);
    const turn = new Turn(sink);
    if (sink.failure) {
      turn.fail(sink.failure);
      return turn.handle();
    }
    this.#turn = turn;
    this.#active!.prompt([...content]).catch(() => {
      // the outcome arrives in order through the update queue (see #pump)
    });
    if (signal) {
      const onAbort = () => {
        if (this.#turn === turn) void this.cancel();
      };
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        turn.stopReason.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
      }
    }
    return turn.handle();
  }

  /** Send `session/cancel` for the running turn and answer its open permission requests `cancelled`. */
  async cancel(): Promise<void> {
    const turn = this.#turn;
    if (!turn || turn.cancelRequested || this.connection.signal.aborted) return;
    turn.cancelRequested = true;
    for (const request of this.#permissions) request.cancel("the turn was cancelled");
    await this.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.#active!.sessionId }).catch(() => {
      // the connection is ending: the turn ends with the connection's failure
    });
  }

  /**
   * End the connection (pending requests reject with `reason`) and release the process.
   * Idempotent; retries a failed stop.
   */
  close(reason: SandboxError = new SandboxStoppedError("Cannot continue ACP session: it was closed")): Promise<AcpReleaseReceipt> {
    if (!this.#lost && !this.#closing) {
      this.#closing = true;
      for (const request of this.#permissions) request.cancel("the session is closing");
      // The running turn ends with the close, whatever the agent answers to it later.
      const turn = this.#turn;
      this.#turn = undefined;
      turn?.fail(reason);
      this.#handshake = this.#closeSession().then(() => this.connection.close(reason));
    }
    return (this.#handshake ?? Promise.resolve()).then(() => this.process.release()).finally(() => this.#releaseTerminals?.());
  }

  /**
   * `session/close` (ACP v1 "Session Setup" § Closing) when the agent advertises
   * `sessionCapabilities.close` and a session is open, answered within `exitTimeoutMs`; an
   * answer lets the release end the agent sooner (see `AgentProcess.sessionClosed`). A
   * refusal, a lost connection or no answer in time change nothing else.
   */
  async #closeSession(): Promise<void> {
    const active = this.#active;
    const offered = this.#agent?.agentCapabilities?.sessionCapabilities?.close;
    if (active === undefined || offered === undefined || offered === null || this.connection.signal.aborted) return;
    try {
      await raceDeadline(this.connection.agent.request(acp.methods.agent.session.close, { sessionId: active.sessionId }), {
        timeoutMs: this.#options.exitTimeoutMs,
        onTimeout: () => new SandboxDeadlineError("Cannot close ACP session: no answer to session/close within exitTimeoutMs"),
        onAbort: (cause) => new SandboxAbortedError("Cannot close ACP session: aborted", { cause }),
      });
      this.process.sessionClosed();
    } catch {
      // the agent refused or did not answer: the release waits exitTimeoutMs as without it
    }
  }

  /** The connection ended: by `close()`, or on its own (the agent exited, broke the protocol, or the sandbox stopped). */
  #ended(reason: unknown): void {
    for (const request of this.#permissions) request.cancel("the session ended");
    if (this.#closing) return;
    const action = this.#active ? "continue ACP session" : "open ACP session";
    this.#lost = this.process.release().then(
      (receipt) => lostError(action, reason, receipt, this.#options.maxMessageBytes),
      (error: SandboxError) => error,
    );
  }

  /** Route the session's updates and prompt answers, in arrival order, to the turns. */
  async #pump(active: ActiveSession): Promise<void> {
    for (;;) {
      let message: acp.ActiveSessionMessage;
      try {
        message = await active.nextUpdate();
      } catch (error) {
        if (error instanceof acp.RequestError) {
          this.#finishTurn((turn) => turn.fail(agentError(error, "finish turn: the agent answered session/prompt")));
          continue;
        }
        // The connection ended; the running turn fails with the reason.
        const turn = this.#turn;
        this.#turn = undefined;
        if (turn) turn.fail(await this.#failureOf(error, "finish turn"));
        return;
      }
      if (message.kind === "session_update") {
        const turn = this.#turn;
        const sink = turn?.sink ?? this.#sink;
        if (sink.push(message.update) === "overflow" && turn) {
          turn.failure ??= sink.failure;
          void this.cancel();
        }
        continue;
      }
      const reason = stopReasons.safeParse(message.stopReason);
      this.#finishTurn((turn) => {
        if (reason.success) turn.stop(reason.data);
        else {
          turn.fail(
            new AcpAgentError(
              `Cannot finish turn: the agent answered stopReason ${JSON.stringify(message.stopReason)}, which ACP v1 does not define`,
              { cause: reason.error },
            ),
          );
        }
      });
    }
  }

  #finishTurn(settle: (turn: Turn) => void): void {
    const turn = this.#turn;
    if (!turn) return;
    // The next turn's stream starts collecting now: updates after the answer belong to it.
    this.#turn = undefined;
    settle(turn);
  }

  /** Answer one permission request: the caller's callback, else deny; `cancelled` once the turn or session ends. */
  #permission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse> {
    return new Promise((resolve) => {
      const request = new AcpPermissionRequest(params, (outcome) => {
        this.#permissions.delete(request);
        resolve({ outcome });
      });
      this.#permissions.add(request);
      signal.addEventListener("abort", () => request.cancel("the agent withdrew the request"), { once: true });
      if (this.#closing || this.#lost) return request.cancel("the session is closing");
      const turn = this.#turn;
      if (turn?.cancelRequested) return request.cancel("the turn was cancelled");
      const callback = this.#options.onPermissionRequest;
      if (callback === undefined) return request.deny();
      Promise.resolve().then(() => callback(request)).catch((error) => {
        if (request.outcome === undefined) request.deny();
        if (turn && this.#turn === turn) {
          turn.failure ??= new SandboxAbortedError(
            "Cannot answer permission request: onPermissionRequest threw; the request was denied and the turn cancelled",
            { cause: error },
          );
          void this.cancel();
        }
      });
    });
  }

  /** The error a rejected request becomes: the agent's error, the lost connection's failure, or the close reason. */
  async #failureOf(error: unknown, action: string): Promise<SandboxError> {
    if (error instanceof acp.RequestError) return agentError(error, action);
    if (this.#lost) return await this.#lost;
    if (error instanceof SandboxError) return error;
    return new AcpAgentError(`Cannot ${action}: ${String(error)}`, { cause: error });
  }
}

/**
 * The method `authenticate` picks from the agent's `initialize` answer, checked to be one it
 * offered for `authenticate` (not a terminal method).
 *
 * @throws {SandboxAbortedError} when the callback throws
 * @throws {SandboxConfigurationError} when it returns anything but an offered id or `undefined`
 */
async function chooseAuthMethod(
  authenticate: NonNullable<NormalizedAcpSessionOptions["authenticate"]>,
  initialize: InitializeResponse,
): Promise<string | undefined> {
  let chosen: unknown;
  try {
    chosen = await authenticate(initialize);
  } catch (error) {
    throw new SandboxAbortedError("Cannot open ACP session: options.authenticate threw; no authenticate was sent", { cause: error });
  }
  if (chosen === undefined) return undefined;
  const offered = (initialize.authMethods ?? []).filter((method) => (method as { type?: unknown }).type !== "terminal").map((method) => method.id);
  if (typeof chosen !== "string" || !offered.includes(chosen)) {
    throw new SandboxConfigurationError(
      `Cannot open ACP session: options.authenticate chose ${JSON.stringify(chosen)}, which the agent does not offer for authenticate ` +
        `(its initialize answer offers ${offered.length === 0 ? "none" : offered.map((id) => JSON.stringify(id)).join(", ")}); ` +
        "return one of initialize.authMethods[].id, or undefined to send no authenticate",
    );
  }
  return chosen;
}

function agentError(error: acp.RequestError, action: string): AcpAgentError {
  return new AcpAgentError(`Cannot ${action} with JSON-RPC error ${error.code}: ${error.message}`, { rpcCode: error.code, cause: error });
}

/** The failure of a connection that ended on its own, from its close reason and the release. */
function lostError(action: string, reason: unknown, receipt: AcpReleaseReceipt, maxMessageBytes: number): SandboxError {
  if (reason instanceof acp.MessageTooLargeError) {
    return new AcpAgentError(
      `Cannot read agent message: the agent sent a message longer than ${maxMessageBytes} bytes (maxMessageBytes); ` +
        "compute was stopped; raise options.maxMessageBytes",
      { cause: reason },
    );
  }
  const { exit, stderrTail } = receipt;
  const how = exit.kind === "exited"
    ? `the agent exited with code ${exit.code}`
    : exit.kind === "killed"
    ? `the agent's process was ended (${exit.reason})`
    : reason instanceof SandboxError
    ? `the sandbox stopped (${reason.message})`
    : "the agent's output ended and compute was stopped before its exit status was seen";
  return new AcpAgentExitedError(`Cannot ${action}: ${how}; see error.stderrTail`, { exit, stderrTail, cause: reason });
}
