/**
 * {@linkcode startMcpServer}: the MCP server over the sandboxes of one operator's
 * configuration, built on the official SDK (`McpServer`).
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { McpTransport } from "./protocol.ts";
import type { ReclaimReport } from "../docker/recovery/reclaim.ts";
import { type McpServerConfig, parseMcpServerConfig } from "./config.ts";
import { McpSandboxes } from "./_sandboxes.ts";
import { boundedLog, type McpLog } from "./_tool_call.ts";
import { registerLifecycleTools } from "./_tools_lifecycle.ts";
import { registerRunTool } from "./_tool_run.ts";
import { registerFileTools } from "./_tools_files.ts";

/** Name the server gives itself in the MCP `initialize` answer. */
export const MCP_SERVER_NAME = "agentcell-docker";
/** Version the server gives itself (the package's). */
export const MCP_SERVER_VERSION = "0.2.0";

/** Options of {@linkcode startMcpServer}. */
export interface StartMcpServerOptions {
  /** The MCP transport to serve on (an SDK `Transport`, e.g. `new StdioServerTransport()`). */
  readonly transport: McpTransport;
  /**
   * Where the server's log lines go (each line ends in `\n`; at most 2,048 characters of the
   * event each): one at start with the reclaim, one per tool call with its arguments, outcome
   * and duration.
   *
   * @default {undefined} nothing is logged
   */
  readonly write?: (text: string) => void;
}

/** A running MCP server. */
export interface McpSandboxServer {
  /** What the start reclaimed from the records directory (a previous server's sandboxes). */
  readonly reclaimed: ReclaimReport;
  /** Destroy every sandbox of this server, then close the transport. Idempotent. */
  close(): Promise<void>;
}

/**
 * Start the MCP server of `config`: validate it, check its Engine (the endpoint answers, the
 * profile admits the daemon, the image is there and admissible: the backend's admission,
 * nothing created), reclaim what the records directory names
 * (the sandboxes of a previous server of this configuration that crashed; records of a
 * server that still runs are locked and stay), register the tools and connect `transport`.
 *
 * Tools (each input validated with zod, each answer bounded, each call ended at
 * `toolTimeoutMs` and logged): `sandbox_create`, `sandbox_run`, `sandbox_read_file`,
 * `sandbox_write_file`, `sandbox_list_directory`, `sandbox_export`, `sandbox_destroy`,
 * `sandbox_list`. A failure answers `isError` with the library's typed message
 * (`[code] Cannot …`).
 *
 * @param config the operator's configuration (see {@linkcode McpServerConfig})
 * @param options the transport and the log
 * @returns the running server
 * @throws {SandboxConfigurationError} naming the first invalid field of `config`, or an
 *   unusable records directory, or an `exportRoot` that is not a directory
 * @throws {SandboxEngineError} "Cannot start the MCP server: mcp.endpoint … does not answer …"
 *   when the Engine cannot be reached (before `transport` is connected)
 * @throws {SandboxUnsupportedError} naming `mcp.profile` or `mcp.imageDigest` (or
 *   `mcp.network`, `mcp.proxyImageDigest`) when the daemon or the image is refused, and the fix
 * @throws {Error} what `store.list()` throws for an unreadable records directory
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a local image ID
 * import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
 * import { startMcpServer } from "@agentcell/docker/mcp";
 *
 * const running = await startMcpServer({
 *   endpoint: "unix:///var/run/docker.sock",
 *   imageDigest: "sha256:<64 lowercase hex digits>",
 *   recordsDirectory: "/var/lib/agentcell-mcp/records",
 * }, { transport: new StdioServerTransport(), write: (line) => process.stderr.write(line) });
 * ```
 */
export async function startMcpServer(config: McpServerConfig, options: StartMcpServerOptions): Promise<McpSandboxServer> {
  const settings = parseMcpServerConfig(config);
  // An export root that is not there would refuse every export: refuse the configuration.
  if (settings.exportRoot !== undefined && !(await stat(settings.exportRoot).then((stats) => stats.isDirectory(), () => false))) {
    throw new SandboxConfigurationError(`Cannot start the MCP server: mcp.exportRoot ${settings.exportRoot} is not a directory: make it, or leave exportRoot out of the configuration to offer no export`);
  }
  const log: McpLog = options.write === undefined ? () => {} : boundedLog(options.write);
  const sandboxes = new McpSandboxes(settings);
  // The Engine is checked before the transport is connected (before stdin is read): a server
  // whose daemon, profile or image cannot serve a sandbox never answers `initialize`.
  await sandboxes.admit();
  const reclaimed = await sandboxes.reclaim();
  const { reclaimed: done, pending, refused } = reclaimed.counts;
  log(`start: ${settings.recordsDirectory}: ${done} reclaimed, ${pending} pending, ${refused} refused`);
  for (const outcome of reclaimed.outcomes) {
    if (outcome.kind !== "reclaimed") log(`start: kept record ${outcome.reservationId} (${outcome.kind}): ${outcome.reason}`);
  }
  const server = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION });
  registerLifecycleTools(server, settings, sandboxes, log);
  registerRunTool(server, settings, sandboxes, log);
  registerFileTools(server, settings, sandboxes, log);
  await server.connect(options.transport);
  let closing: Promise<void> | undefined;
  return {
    reclaimed,
    close: () =>
      closing ??= (async () => {
        const count = sandboxes.list().length;
        await sandboxes.destroyAll();
        log(`stop: ${count} sandbox${count === 1 ? "" : "es"} destroyed, ${sandboxes.list().length} left in the records`);
        await server.close();
      })(),
  };
}
