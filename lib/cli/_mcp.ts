/**
 * `agentcell mcp --config FILE`: the MCP server of `@agentcell/docker/mcp` on stdio.
 *
 * @module
 */
import { serveMcpStdio } from "../mcp/stdio.ts";
import { parse, UsageError } from "./_options.ts";

/** Help of `mcp`. */
export const MCP_HELP = `agentcell mcp --config FILE

Serve sandboxes to an agent over the Model Context Protocol on stdin/stdout (its log on
stderr), with the authority the operator fixed in the JSON config FILE (endpoint, profile,
image, records directory, ceiling, network, export root, …; see docs/mcp.md). Ends when the
client closes stdin (exit 0) or on SIGINT/SIGTERM (130/143), destroying its sandboxes.

  --config FILE   the operator's JSON configuration (required)
  -h, --help      this help`;

/** Run `mcp`; resolves with the exit code. */
export async function mcp(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { config: { type: "string" } });
  if (values.config === undefined || positionals.length > 0) throw new UsageError("Cannot start the MCP server: pass --config FILE (the operator's JSON configuration)");
  const how = await serveMcpStdio(values.config);
  return how === "SIGINT" ? 130 : how === "SIGTERM" ? 143 : 0;
}
