/**
 * What every tool call of the MCP server goes through: its deadline (`toolTimeoutMs`, and
 * the client's cancellation), one bounded log line on stderr, and its answer: the tool's
 * text, or for a failure `isError` with the library's typed message (`[code] Cannot …`).
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { SandboxAbortedError, SandboxDeadlineError, SandboxError } from "../sandbox/errors.ts";
import { raceDeadline } from "../streams/deadline.ts";
import { MAX_MCP_LOG_LINE } from "./config.ts";

/** Where the server writes one line per event (stderr, bounded). */
export type McpLog = (line: string) => void;

/** A log that writes each line, cut to {@linkcode MAX_MCP_LOG_LINE} characters, with `write`. */
export function boundedLog(write: (text: string) => void): McpLog {
  return (line) => {
    const whole = `agentcell-mcp ${new Date().toISOString()} ${line.replaceAll(/[\r\n]+/gu, " ")}`;
    // The whole line, its prefix and the note of the cut included, stays within the bound.
    const keep = MAX_MCP_LOG_LINE - 48;
    write(`${whole.length > MAX_MCP_LOG_LINE ? `${whole.slice(0, keep)}… (${whole.length - keep} more characters cut)` : whole}\n`);
  };
}

/** What a tool's work receives: the signal that ends it and the epoch ms of its deadline. */
export interface ToolCall {
  /** Aborts at the deadline or when the client cancels the request. */
  readonly signal: AbortSignal;
  /** The deadline, epoch milliseconds. */
  readonly deadlineAt: number;
  /** The tool's deadline in milliseconds (for messages). */
  readonly timeoutMs: number;
}

/**
 * A library fix the model cannot apply (the policy is the operator's), as what it can do: the
 * process count is the server's, so only waiting helps.
 */
function modelTerms(message: string): string {
  return message.replace(/, or raise policy\.maxConcurrentProcesses \(up to \d+\)/u, "")
    .replace(/\(policy\.maxConcurrentProcesses \d+\)/u, "(the most this server's sandboxes run at once)");
}

/** The text of an error as the model reads it: `[code] message` for a typed one. */
export function errorText(error: unknown): string {
  if (error instanceof SandboxError) {
    // A stopped sandbox runs nothing more: say what the model can still do.
    const next = error.code === "stopped" && !error.message.includes("sandbox_destroy")
      ? " (its commands and file tools are over: destroy it with sandbox_destroy, and make a new one with sandbox_create)"
      : "";
    return `[${error.code}] ${modelTerms(error.message)}${next}`;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * Wrap a tool's work: it runs with a {@linkcode ToolCall}, is raced against the deadline
 * (work that ignores the signal still answers at the deadline), and every call is logged
 * once with its arguments, outcome and duration.
 *
 * @param name the tool's name (for the log and messages)
 * @param timeoutMs the deadline of each call
 * @param log where the line goes
 * @param work the tool: resolves with the answer's text
 */
export function toolCall<A>(
  name: string,
  timeoutMs: number,
  log: McpLog,
  work: (args: A, call: ToolCall) => Promise<string>,
): (args: A, extra: { signal: AbortSignal }) => Promise<CallToolResult> {
  return async (args, extra) => {
    const started = Date.now();
    const deadline = new AbortController();
    const deadlineError = new SandboxDeadlineError(
      `Cannot finish ${name}: the tool's deadline of ${timeoutMs} ms passed (toolTimeoutMs in the server's configuration); its work was aborted (a command killed with every process it started, those it moved out of its group with setsid included)`,
    );
    const timer = setTimeout(() => deadline.abort(deadlineError), timeoutMs);
    const signal = AbortSignal.any([deadline.signal, extra.signal]);
    const call: ToolCall = { signal, deadlineAt: started + timeoutMs, timeoutMs };
    // The arguments as the log shows them (a file's content can be megabytes: only its start).
    const given = JSON.stringify(args ?? {});
    const shown = given.length > 512 ? `${given.slice(0, 512)}… (${given.length} characters)` : given;
    try {
      const text = await raceDeadline(work(args, call), {
        signal,
        onAbort: (reason) =>
          deadline.signal.aborted ? deadlineError : new SandboxAbortedError(`Cannot finish ${name}: the client cancelled the request`, { cause: reason }),
      });
      log(`${name} ${shown} -> ok in ${Date.now() - started} ms (${text.length} characters)`);
      return { content: [{ type: "text", text }] };
    } catch (error) {
      const text = errorText(deadline.signal.aborted ? deadlineError : error);
      log(`${name} ${shown} -> error in ${Date.now() - started} ms: ${text}`);
      return { isError: true, content: [{ type: "text", text }] };
    } finally {
      clearTimeout(timer);
    }
  };
}
