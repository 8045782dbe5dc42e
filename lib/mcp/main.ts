/**
 * Run the MCP server: `node lib/mcp/main.ts --config FILE` (or `deno run -A`, `bun`), the
 * same as `agentcell mcp --config FILE`. A failure prints one line on stderr and exits 1.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { errorText } from "./_tool_call.ts";
import { serveMcpStdio } from "./stdio.ts";

try {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { config: { type: "string" } }, strict: true });
  if (values.config === undefined) throw new Error("Cannot start the MCP server: pass --config FILE (the operator's JSON configuration)");
  const how = await serveMcpStdio(values.config);
  process.exit(how === "SIGINT" ? 130 : how === "SIGTERM" ? 143 : 0);
} catch (error) {
  process.stderr.write(`agentcell-mcp: ${errorText(error)}\n`);
  process.exit(1);
}
