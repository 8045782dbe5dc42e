/**
 * The ACP protocol types this API uses, as `@agentclientprotocol/sdk` defines them for the
 * stable ACP v1 schema (https://agentclientprotocol.com/protocol/v1/schema). They are
 * aliases, so values from the SDK and from this module are interchangeable.
 *
 * @module
 */
import type * as sdk from "@agentclientprotocol/sdk";

/** A content block of a prompt or an update: `text`, `image`, `audio`, `resource_link` or `resource` (ACP v1 "Content"). */
export type ContentBlock = sdk.ContentBlock;

/** One `session/update` of a turn, discriminated by `sessionUpdate`: `agent_message_chunk`, `agent_thought_chunk`, `user_message_chunk`, `tool_call`, `tool_call_update`, `plan`, `available_commands_update`, `current_mode_update`, … (ACP v1 "Prompt Turn" § Agent Reports Output). */
export type SessionUpdate = sdk.SessionUpdate;

/** Why the agent ended a turn: `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled` (ACP v1 "Prompt Turn" § Stop Reasons). */
export type StopReason = sdk.StopReason;

/** One option of a permission request: `optionId`, `name` and `kind` (`allow_once`, `allow_always`, `reject_once`, `reject_always`). */
export type PermissionOption = sdk.PermissionOption;

/** The answer to a permission request: `{ outcome: "selected", optionId }` or `{ outcome: "cancelled" }`. */
export type RequestPermissionOutcome = sdk.RequestPermissionOutcome;

/** The tool call a permission request is about: `toolCallId` and optional `title`, `kind`, `status`, `content`, `locations`, `rawInput` (ACP v1 "Tool Calls"). */
export type ToolCallUpdate = sdk.ToolCallUpdate;

/** The agent's answer to `initialize`: `protocolVersion`, `agentCapabilities`, `agentInfo`, `authMethods` (ACP v1 "Initialization"). */
export type InitializeResponse = sdk.InitializeResponse;

/** The agent's answer to `session/new`: `sessionId` and optional `modes` and `configOptions` (ACP v1 "Session Setup"). */
export type NewSessionResponse = sdk.NewSessionResponse;

/** An authentication method the agent offers in `initialize`: `id`, `name`, optional `description` (ACP v1 "Initialization" § Authentication). */
export type AuthMethod = sdk.AuthMethod;

/** The `id` of an {@linkcode AuthMethod}, as `authenticate` sends it (`methodId`). */
export type AuthMethodId = sdk.AuthMethodId;

/** A client or agent name: `name`, `version`, optional `title`. */
export type Implementation = sdk.Implementation;

/** An MCP server for `session/new`: stdio (`name`, `command`, `args`, `env`), or `type: "http"` / `"sse"` with `name`, `url`, `headers` (ACP v1 "Session Setup" § MCP Servers). */
export type McpServer = sdk.McpServer;

/** `fs/read_text_file` parameters: `sessionId`, absolute `path`, optional `line` and `limit`. */
export type ReadTextFileRequest = sdk.ReadTextFileRequest;

/** `fs/read_text_file` answer: `content`. */
export type ReadTextFileResponse = sdk.ReadTextFileResponse;

/** `fs/write_text_file` parameters: `sessionId`, absolute `path`, `content`. */
export type WriteTextFileRequest = sdk.WriteTextFileRequest;

/** `fs/write_text_file` answer (empty). */
export type WriteTextFileResponse = sdk.WriteTextFileResponse;

/** `terminal/create` parameters: `sessionId`, `command`, optional `args`, `env`, `cwd`, `outputByteLimit`. */
export type CreateTerminalRequest = sdk.CreateTerminalRequest;

/** `terminal/create` answer: `terminalId`. */
export type CreateTerminalResponse = sdk.CreateTerminalResponse;

/** `terminal/output` parameters: `sessionId`, `terminalId`. */
export type TerminalOutputRequest = sdk.TerminalOutputRequest;

/** `terminal/output` answer: `output`, `truncated`, optional `exitStatus`. */
export type TerminalOutputResponse = sdk.TerminalOutputResponse;

/** How a terminal's command ended: `exitCode` and `signal` (either may be `null`). */
export type TerminalExitStatus = sdk.TerminalExitStatus;

/** `terminal/wait_for_exit` parameters: `sessionId`, `terminalId`. */
export type WaitForTerminalExitRequest = sdk.WaitForTerminalExitRequest;

/** `terminal/wait_for_exit` answer: `exitCode` and `signal`. */
export type WaitForTerminalExitResponse = sdk.WaitForTerminalExitResponse;

/** `terminal/kill` parameters: `sessionId`, `terminalId`. */
export type KillTerminalRequest = sdk.KillTerminalRequest;

/** `terminal/kill` answer (empty). */
export type KillTerminalResponse = sdk.KillTerminalResponse;

/** `terminal/release` parameters: `sessionId`, `terminalId`. */
export type ReleaseTerminalRequest = sdk.ReleaseTerminalRequest;

/** `terminal/release` answer (empty). */
export type ReleaseTerminalResponse = sdk.ReleaseTerminalResponse;

/** `session/request_permission` parameters: `sessionId`, `toolCall`, `options`. */
export type RequestPermissionRequest = sdk.RequestPermissionRequest;
