/**
 * `terminal: "sandbox"`: the agent's `terminal/*` requests served by sandbox processes (ACP v1
 * "Terminals"), never with host authority. Each terminal is one process of the sandbox, run
 * by `/bin/sh` in the guest with stderr into stdout, its stdin at end of file, its output read
 * all the time into a bounded tail (so the sandbox's own output bound never stops it).
 *
 * @module
 */
import * as acp from "@agentclientprotocol/sdk";
import { SandboxConfigurationError, SandboxError } from "../sandbox/errors.ts";
import type { Sandbox } from "../sandbox/backend.ts";
import type { SandboxExitReceipt, SandboxProcess } from "../sandbox/process.ts";
import { StderrTail } from "./_stderr_tail.ts";
import { ACP_MAX_TERMINALS, ACP_TERMINAL_OUTPUT_MAX_BYTES, type AcpTerminalHandlers } from "./options.ts";
import type { TerminalExitStatus } from "./protocol.ts";

/**
 * The shell line that runs a command with literal arguments, looked up in `PATH` as ACP's
 * `command` may be a bare name: `exec "$0" "$@"`.
 */
const EXEC_WITH_ARGS = 'exec "$0" "$@"';

interface Held {
  readonly process: SandboxProcess;
  readonly output: StderrTail;
  receipt: SandboxExitReceipt | undefined;
}

/** The ACP exit status of a receipt: a code, or the signal that ended it. */
function exitStatus(receipt: SandboxExitReceipt): TerminalExitStatus {
  if (receipt.kind === "exited") return { exitCode: receipt.code, signal: null };
  if (receipt.kind === "killed") return { exitCode: null, signal: "SIGKILL" };
  return { exitCode: null, signal: null };
}

/** The JSON-RPC error of a failed start: the request's fault `-32602`, the sandbox's `-32603`. */
function startError(error: unknown): acp.RequestError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SandboxConfigurationError) return acp.RequestError.invalidParams(undefined, message);
  return acp.RequestError.internalError(error instanceof SandboxError ? { code: error.code } : undefined, message);
}

/**
 * Terminal handlers over `sandbox`'s processes, and `releaseAll` for the session's end.
 *
 * @param sandbox The running sandbox.
 * @param sessionCwd The directory a terminal starts in when `terminal/create` names none.
 */
export function sandboxTerminals(sandbox: Sandbox, sessionCwd: string): AcpTerminalHandlers & { releaseAll(): void } {
  const held = new Map<string, Held>();
  const find = (terminalId: string): Held => {
    const terminal = held.get(terminalId);
    if (terminal === undefined) throw acp.RequestError.resourceNotFound(`terminal ${terminalId}`);
    return terminal;
  };
  return {
    create: async ({ command, args, env, cwd, outputByteLimit }, signal) => {
      if (held.size >= ACP_MAX_TERMINALS) {
        throw acp.RequestError.internalError(
          undefined,
          `Cannot create terminal: ${ACP_MAX_TERMINALS} terminals are held (the most the bridge keeps); send terminal/release for one first`,
        );
      }
      const limit = Math.min(ACP_TERMINAL_OUTPUT_MAX_BYTES, Math.max(1, outputByteLimit ?? ACP_TERMINAL_OUTPUT_MAX_BYTES));
      let process: SandboxProcess;
      try {
        process = await sandbox.reserveProcess({
          executable: "/bin/sh",
          // No arguments: `command` is a shell line (what the Claude ACP adapters send).
          args: args === undefined || args === null || args.length === 0 ? ["-c", command] : ["-c", EXEC_WITH_ARGS, command, ...args],
          env: Object.fromEntries((env ?? []).map(({ name, value }) => [name, value])),
          cwd: cwd ?? sessionCwd,
          stderr: "stdout",
        }).start({ signal });
      } catch (error) {
        throw startError(error);
      }
      process.stdin.close().catch(() => {
        // it exited already
      });
      process.stderr.pipeTo(new WritableStream()).catch(() => {}); // empty: stderr goes into stdout
      const terminal: Held = { process, output: new StderrTail(process.stdout, limit), receipt: undefined };
      process.exit.then((receipt) => (terminal.receipt = receipt));
      const terminalId = `term-${crypto.randomUUID()}`;
      held.set(terminalId, terminal);
      return { terminalId };
    },
    output: ({ terminalId }) => {
      const { output, receipt } = find(terminalId);
      const kept = output.bytes();
      const truncated = output.totalBytes > kept.length;
      // Cut at a character boundary (ACP): drop the continuation bytes of a character whose start fell off.
      let start = 0;
      while (truncated && start < kept.length && (kept[start] & 0xc0) === 0x80) start += 1;
      return {
        output: new TextDecoder().decode(kept.subarray(start)),
        truncated,
        ...(receipt === undefined ? {} : { exitStatus: exitStatus(receipt) }),
      };
    },
    waitForExit: async ({ terminalId }) => {
      const terminal = find(terminalId);
      const receipt = await terminal.process.exit;
      await terminal.output.done;
      return exitStatus(receipt);
    },
    kill: async ({ terminalId }) => {
      await find(terminalId).process.kill().catch(() => {
        // the sandbox stopped: nothing is left to kill
      });
    },
    release: async ({ terminalId }) => {
      const terminal = find(terminalId);
      held.delete(terminalId);
      if (terminal.receipt === undefined) await terminal.process.kill().catch(() => {});
    },
    releaseAll: () => held.clear(),
  };
}
