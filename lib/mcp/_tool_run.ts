/**
 * The `sandbox_run` tool: one command in a sandbox, its exit and its output as text, each
 * stream cut at `maxOutputBytes` with the cut said plainly; a command that outlives the
 * tool's deadline is killed just before it and answers what it wrote.
 *
 * @module
 */
import { z } from "zod";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { runOutputOf } from "../sandbox/run.ts";
import { isUtf8 } from "../streams/utf8.ts";
import type { SandboxExitReceipt } from "../sandbox/process.ts";
import type { McpServerSettings } from "./config.ts";
import type { McpSandboxes } from "./_sandboxes.ts";
import { type McpLog, toolCall } from "./_tool_call.ts";

/** Most arguments of one command (the executable included). */
const MAX_ARGUMENTS = 1024;
/** Most characters of one argument. */
const MAX_ARGUMENT_CHARACTERS = 65_536;

/**
 * Milliseconds a command's own timeout ends before the tool's deadline, so its answer arrives
 * in time: the kill, and the Engine's end of the output, which comes about 2 s after the
 * leader's exit when a descendant still holds it (docs/processes.md). Half the tool's
 * deadline when that is shorter.
 */
const ANSWER_MARGIN_MS = 3000;

/** `bytes` as text, cut after `limit` bytes, and a header that says what was cut. */
function section(name: string, bytes: Uint8Array, limit: number): string {
  if (bytes.byteLength === 0) return `--- ${name}: empty\n`;
  const shown = bytes.byteLength > limit ? bytes.subarray(0, limit) : bytes;
  const head = bytes.byteLength > limit
    ? `--- ${name}: ${bytes.byteLength} bytes, TRUNCATED: the first ${limit} shown (maxOutputBytes of the server's configuration)`
    : `--- ${name}: ${bytes.byteLength} bytes`;
  // Binary output would be garbled silently: say so, and how to get the bytes.
  const utf8 = isUtf8(shown);
  const text = new TextDecoder().decode(shown);
  const note = utf8 ? "" : ", NOT UTF-8 text: invalid bytes shown as U+FFFD (redirect it to a file and read that with sandbox_read_file, encoding base64)";
  return `${head}${note}\n${text}${text.endsWith("\n") ? "" : "\n"}`;
}

function exitLine(exit: SandboxExitReceipt | undefined, timeoutMs: number, capturedBytes: number, memoryBytes: number): string {
  if (exit === undefined) return "exit: unknown (the command's end was not observed)";
  if (exit.kind === "exited") {
    return exit.oomKilled ? `exit code ${exit.code}: killed by the kernel's out-of-memory killer (the sandbox's memory is ${memoryBytes} bytes)` : `exit code ${exit.code}`;
  }
  if (exit.kind === "unavailable") return "exit: unavailable (the sandbox stopped before the command ended)";
  // The output bound may end a command that already exited on its own (its output still
  // flowing): that is a stop at the bound, not a kill of the command.
  if (exit.reason === "output_limit") {
    return `stopped at the output limit (exit code ${exit.code}): its output passed the ${capturedBytes - 1} bytes the server keeps (twice maxOutputBytes); the rest was dropped and what still ran was killed`;
  }
  const why = exit.reason === "timeout" ? `it ran until its timeout of ${timeoutMs} ms (the tool's deadline, or the timeoutMs asked for)` : exit.reason;
  return `killed (${exit.reason}, exit code ${exit.code}): ${why}`;
}

/** Register `sandbox_run`. */
export function registerRunTool(server: McpServer, settings: McpServerSettings, sandboxes: McpSandboxes, log: McpLog): void {
  const limit = settings.maxOutputBytes;
  // Captured together: both streams at their full answer size, and one byte to see the cut.
  const captured = 2 * limit + 1;
  server.registerTool("sandbox_run", {
    title: "Run a command in a sandbox",
    description: `Run one command in a sandbox and wait for it: its exit code and its stdout and stderr as text (each cut after ${limit} bytes, and the answer says so). ` +
      `The command is an argument vector, no shell unless you run one: ["/bin/sh", "-c", "ls -l | head"]. It runs as an unprivileged user in /workspace/work. ` +
      `It is killed when it passes its timeout (at most the tool's deadline of ${settings.toolTimeoutMs} ms).`,
    inputSchema: z.strictObject({
      sandboxId: z.string().max(64).describe("The sandbox's ID (from sandbox_create or sandbox_list)"),
      command: z.array(z.string().max(MAX_ARGUMENT_CHARACTERS, { error: `each argument must be at most ${MAX_ARGUMENT_CHARACTERS} characters: pass long text as stdin, or write it to a file with sandbox_write_file` }))
        .min(1, { error: 'must name the executable: an argument vector such as ["/bin/sh", "-c", "ls -l"]' })
        .max(MAX_ARGUMENTS, { error: `must have at most ${MAX_ARGUMENTS} arguments: pass long lists as stdin, or in a file written with sandbox_write_file` }).describe(
        "The executable (an absolute path in the sandbox, e.g. /bin/sh) and its arguments",
      ),
      stdin: z.string().max(settings.maxFileBytes, {
        error: `must be at most ${settings.maxFileBytes} characters, what this server moves in one call (maxFileBytes in its configuration): send less`,
      }).optional().describe("Text written to the command's stdin, which is then closed"),
      timeoutMs: z.number().int({ error: "must be a whole number of milliseconds: ask for an integer, or leave it out to get the whole deadline" })
        .min(1, { error: "must be at least 1 ms: ask for more, or leave it out to get the whole deadline" }).max(settings.toolTimeoutMs, {
        error: `must be at most ${settings.toolTimeoutMs} ms, the tool's deadline (toolTimeoutMs in the server's configuration): ask for less, or leave it out to get the whole deadline`,
      }).optional().describe(
        `Kill the command after this many milliseconds (default and at most ${settings.toolTimeoutMs}, the tool's deadline)`,
      ),
    }),
    annotations: { destructiveHint: true, openWorldHint: false },
  }, toolCall("sandbox_run", settings.toolTimeoutMs, log, async (args, call) => {
    const { sandbox, resources: { memoryBytes } } = sandboxes.entry(args.sandboxId);
    const left = call.deadlineAt - Date.now() - Math.min(ANSWER_MARGIN_MS, Math.floor(call.timeoutMs / 2));
    const timeoutMs = Math.max(1, Math.min(args.timeoutMs ?? left, left));
    const [executable, ...rest] = args.command;
    let stdout: Uint8Array, stderr: Uint8Array, exit: SandboxExitReceipt | undefined;
    try {
      ({ stdout, stderr, exit } = await sandbox.run(executable, rest, {
        ...(args.stdin === undefined ? {} : { stdin: args.stdin }),
        timeoutMs,
        maxOutputBytes: captured,
        signal: call.signal,
      }));
    } catch (error) {
      const output = runOutputOf(error);
      // A command that never started, or a sandbox that failed: the typed error answers.
      if (output === undefined || output.exit === undefined) throw error;
      ({ stdout, stderr, exit } = output);
    }
    return `${exitLine(exit, timeoutMs, captured, memoryBytes)}\n${section("stdout", stdout, limit)}${section("stderr", stderr, limit)}`;
  }));
}
