/**
 * `@agentcell/docker/mcp`: a Model Context Protocol server that gives an agent (Claude
 * Desktop and Code, Cursor, Codex, Gemini CLI, Zed, …) hardened sandboxes as tools, on the
 * official SDK (`@modelcontextprotocol/sdk`) over stdio.
 *
 * The host's operator fixes the authority in a JSON config file (endpoint, profile, image,
 * namespace, spill and records directories, the resource ceiling, the network, how many
 * sandboxes at once, the export root); the model only chooses within it. Tools:
 * `sandbox_create`, `sandbox_run`, `sandbox_read_file`, `sandbox_write_file`,
 * `sandbox_list_directory`, `sandbox_export`, `sandbox_destroy`, `sandbox_list`. Every
 * sandbox is recorded in the records directory before its resources exist, so a crashed
 * server's sandboxes are reclaimed at its next start. Run it with
 * `agentcell mcp --config FILE`, or `node lib/mcp/main.ts --config FILE` from a checkout
 * (see docs/mcp.md).
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a config file
 * import { serveMcpStdio } from "@agentcell/docker/mcp";
 *
 * await serveMcpStdio("/etc/agentcell/mcp.json"); // until the client closes stdin
 * ```
 *
 * @module
 */
export {
  DEFAULT_MCP_EXPORT_BYTES,
  DEFAULT_MCP_FILE_BYTES,
  DEFAULT_MCP_MAX_SANDBOXES,
  DEFAULT_MCP_NAMESPACE,
  DEFAULT_MCP_OUTPUT_BYTES,
  DEFAULT_MCP_TOOL_TIMEOUT_MS,
  loadMcpServerConfig,
  MAX_MCP_FILE_BYTES,
  MAX_MCP_LIST_ENTRIES,
  MAX_MCP_LOG_LINE,
  MAX_MCP_OUTPUT_BYTES,
  MAX_MCP_SANDBOXES,
  MAX_MCP_TOOL_TIMEOUT_MS,
  type McpServerConfig,
  type McpServerSettings,
  parseMcpServerConfig,
} from "./config.ts";
export { MCP_SERVER_NAME, MCP_SERVER_VERSION, type McpSandboxServer, startMcpServer, type StartMcpServerOptions } from "./server.ts";
export { serveMcpStdio } from "./stdio.ts";
export type { McpTransport } from "./protocol.ts";
