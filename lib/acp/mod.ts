/**
 * `@agentcell/docker/acp`: run an Agent Client Protocol agent as a sandbox process and
 * drive it from the host with `@agentclientprotocol/sdk` (ACP protocol version 1).
 *
 * One sandbox process carries one initialized ACP connection and one session, which runs many
 * turns. The host owns the sequence: `startAcpSession()` → turns → `session.close()` (stops
 * compute, keeps files) → `sandbox.exportTree()` → `sandbox.destroy()`. The agent gets no host
 * file system, terminal or MCP server unless the caller grants them, and every permission
 * request is denied unless `onPermissionRequest` decides it.
 *
 * This entry point is separate from `@agentcell/docker` so that the main module does not load
 * the SDK.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine, a node guest image and an ACP agent
 * import { createDockerSandboxBackend } from "@agentcell/docker";
 * import { startAcpSession } from "@agentcell/docker/acp";
 *
 * await using sandbox = await backend.reserve({ policy }, recovery).start();
 * await sandbox.importTree(agentFiles);
 * const session = await startAcpSession(sandbox, { executable: "/usr/local/bin/node", args: ["agent/agent.js"] }, {
 *   onPermissionRequest: (request) => request.select(request.options[0].optionId),
 * });
 * const turn = session.prompt("Write out/report.md");
 * for await (const update of turn.updates) {
 *   if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") console.log(update.content.text);
 * }
 * console.log(await turn.stopReason);
 * await session.close();
 * const files = await sandbox.exportTree({ kind: "subtree", path: "work/out" });
 * ```
 *
 * @module
 */
export { startAcpSession } from "./start.ts";
export { AcpSession, type AcpPromptOptions } from "./session.ts";
export type { AcpTurn } from "./turn.ts";
export { ACP_CLOSED_SESSION_EXIT_GRACE_MS, type AcpReleaseReceipt } from "./_agent_process.ts";
export { AcpPermissionRequest, denyOutcome } from "./permission.ts";
export {
  ACP_MAX_TERMINALS,
  ACP_TERMINAL_OUTPUT_MAX_BYTES,
  type AcpFileSystemHandlers,
  type AcpSessionOptions,
  type AcpTerminalHandlers,
  DEFAULT_ACP_CLIENT_INFO,
  DEFAULT_ACP_CWD,
  DEFAULT_ACP_EXIT_TIMEOUT_MS,
  DEFAULT_ACP_MAX_BUFFERED_UPDATE_BYTES,
  DEFAULT_ACP_MAX_MESSAGE_BYTES,
  DEFAULT_ACP_OPEN_TIMEOUT_MS,
  DEFAULT_ACP_STDERR_TAIL_BYTES,
  MAX_ACP_BOUND_BYTES,
  MAX_ACP_TIMEOUT_MS,
  type MaybePromise,
  type NormalizedAcpSessionOptions,
  normalizeAcpSessionOptions,
} from "./options.ts";
export {
  AcpAgentError,
  type AcpAgentErrorOptions,
  AcpAgentExitedError,
  type AcpAgentExitedErrorOptions,
  type AcpErrorCode,
  acpInitializeOf,
} from "./errors.ts";
export type * from "./protocol.ts";
