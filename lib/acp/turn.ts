/**
 * {@linkcode AcpTurn}: one prompt turn — its updates as a stream and its stop reason.
 *
 * @module
 */
import type { SessionUpdate, StopReason } from "./protocol.ts";

/**
 * One prompt turn, returned by `AcpSession.prompt`.
 *
 * - `updates`: the `session/update` notifications of this turn, typed as ACP `SessionUpdate`s
 *   (`agent_message_chunk`, `tool_call`, `tool_call_update`, `plan`, …), in arrival order. It
 *   closes after the agent answered the prompt, so it holds every update the agent sent before
 *   its answer; updates the agent sent between turns lead the next turn's stream. Unread
 *   updates are bounded by `maxBufferedUpdateBytes`: past it the stream errors with a
 *   `SandboxOutputLimitError`, the turn is cancelled and `stopReason` rejects with the same
 *   error. Cancelling the stream drops the rest of this turn's updates.
 * - `leadingUpdates`: how many of the first `updates` arrived before this prompt was sent.
 * - `stopReason`: why the agent ended the turn (ACP v1 "Prompt Turn" § Stop Reasons:
 *   `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled`). It rejects with an
 *   `AcpAgentError` when the agent answered the prompt with an error or an unknown stop reason,
 *   an `AcpAgentExitedError` when the agent's process ended first, a `SandboxStoppedError`
 *   when the session was closed first, and a `SandboxAbortedError` when `onPermissionRequest`
 *   threw.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a running ACP session in a sandbox
 * const turn = session.prompt("Summarize task.md into out/summary.md");
 * for await (const update of turn.updates) {
 *   if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
 *     console.log(update.content.text);
 *   }
 * }
 * console.log(await turn.stopReason); // "end_turn"
 * ```
 */
export interface AcpTurn {
  /** This turn's updates, in arrival order; closes once the agent answered the prompt. */
  readonly updates: ReadableStream<SessionUpdate>;
  /** Why the agent ended the turn. */
  readonly stopReason: Promise<StopReason>;
  /**
   * How many updates at the head of `updates` the agent sent before this prompt was sent
   * (after the previous turn's answer). Non-zero after a cancelled turn whose agent kept
   * streaming: those updates belong to the earlier work, not to this prompt.
   */
  readonly leadingUpdates: number;
}
