/**
 * {@linkcode startAcpSession}: run an ACP agent as a sandbox process and open one
 * session with it.
 *
 * @module
 */
import type { Sandbox } from "../sandbox/backend.ts";
import type { SandboxProcessRequest } from "../sandbox/process.ts";
import { Bridge } from "./_bridge.ts";
import { assertGuestFiles } from "./_sandbox_files.ts";
import { type AcpSessionOptions, normalizeAcpSessionOptions } from "./options.ts";
import { AcpSession } from "./session.ts";

/**
 * Start `request` as a process of the sandbox, speak ACP (protocol version 1, newline-delimited
 * JSON-RPC over its stdin and stdout) with it through `@agentclientprotocol/sdk`, send
 * `initialize` and open one session (`session/new` with `cwd` `/workspace/work` and no MCP
 * servers unless given).
 *
 * The process starts before the session opens (eagerly). If opening fails — the agent answers
 * with an error, exits, does not answer within `openTimeoutMs`, or `signal` aborts — the bridge
 * releases the process itself before rejecting (the same bounded release as
 * `AcpSession.close()`: compute is stopped, files stay); the sandbox itself remains the
 * caller's to export and destroy.
 *
 * Authority: the agent gets nothing of the host unless granted. `clientCapabilities` advertise
 * no file system and no terminal; permission requests are denied. `fileSystem: "sandbox"` and
 * `terminal: "sandbox"` serve the agent's `fs/*` and `terminal/*` requests inside the sandbox
 * (workspace files, sandbox processes); handlers of the caller's own for `fileSystem` or
 * `terminal`, and `mcpServers`, grant the agent the caller's own host authority;
 * `onPermissionRequest` decides permission requests.
 *
 * stderr is read all the time into a bounded tail (`session.stderrTail`), because the
 * sandbox bounds unread stdout and stderr together (`maxBufferedOutputBytes`).
 *
 * The session owns the sandbox's compute: releasing it stops the sandbox, with every other
 * process that runs there (policy `processes: "one"` makes the agent the only one).
 *
 * @param sandbox A running sandbox (files imported first; policy `processes: "one"`: its
 *   process not reserved yet).
 * @param request The agent command (see `SandboxProcessRequest`): an absolute executable,
 *   literal arguments, environment.
 * @param options What the agent is granted, bounds and deadlines (see {@linkcode AcpSessionOptions}).
 * @returns The open session.
 * @throws {SandboxConfigurationError} `configuration`: invalid `request` or `options` (the
 *   message names the field)
 * @throws {SandboxStateError} `invalid_state`: an import is running, or (policy `processes:
 *   "one"`) the sandbox already reserved its process
 * @throws {SandboxQuotaError} `quota`: `policy.maxConcurrentProcesses` processes already run
 * @throws {SandboxStoppedError} `stopped`: the sandbox is not running
 * @throws {SandboxDeadlineError} `deadline`: `initialize` or `session/new` was not answered
 *   within `openTimeoutMs` (the message names which)
 * @throws {SandboxAbortedError} `aborted`: `options.signal` aborted before the session opened
 * @throws {AcpAgentError} `agent_error`: the agent answered with an error or another protocol
 *   version
 * @throws {AcpAgentExitedError} `agent_exited`: the agent exited while opening (with its exit
 *   receipt and stderr tail)
 * @throws {SandboxEngineError} `engine`: the Docker Engine failed to start the process
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine, a running sandbox and an ACP agent
 * import { startAcpSession } from "@agentcell/docker/acp";
 *
 * await using sandbox = await reservation.start();
 * await sandbox.importTree(importDirectory("/srv/my-agent"));
 * const session = await startAcpSession(sandbox, {
 *   executable: "/usr/local/bin/node",
 *   args: ["/workspace/work/agent.js"],
 * }, { onPermissionRequest: (request) => request.deny() });
 * const turn = session.prompt("Summarize README.md");
 * for await (const update of turn.updates) console.log(update.sessionUpdate);
 * console.log(await turn.stopReason);
 * await session.close();
 * for await (const entry of await sandbox.exportTree({ kind: "subtree", path: "work/out" })) {
 *   console.log(entry.path);
 *   await entry.body.cancel();
 * }
 * ```
 */
export async function startAcpSession(
  sandbox: Sandbox,
  request: SandboxProcessRequest,
  options: AcpSessionOptions = {},
): Promise<AcpSession> {
  const normalized = normalizeAcpSessionOptions(options);
  if (normalized.fileSystem === "sandbox") assertGuestFiles(sandbox);
  const process = await sandbox.reserveProcess(request).start({ signal: normalized.signal });
  const bridge = new Bridge(sandbox, process, normalized);
  return new AcpSession(bridge, await bridge.open());
}
