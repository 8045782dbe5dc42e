/**
 * {@linkcode serveMcpStdio}: the MCP server of a config file on this process's stdin and
 * stdout, its log on stderr, until the client closes stdin or a signal ends it.
 *
 * @module
 */
import process from "node:process";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { loadMcpServerConfig } from "./config.ts";
import { startMcpServer } from "./server.ts";

/**
 * Serve the MCP server of the config file `file` over stdio (stdin and stdout carry the
 * protocol; the log goes to stderr). Resolves when the server ended: the client closed
 * stdin, or SIGINT/SIGTERM arrived; every sandbox of this server is destroyed first (one
 * that cannot be stays in the records for the next start to reclaim).
 *
 * @param file path of the JSON config file (see `McpServerConfig`)
 * @returns how it ended: `"closed"` (stdin ended) or the signal's name
 * @throws {SandboxConfigurationError} for an unreadable or invalid config file
 * @throws {SandboxError} when its Engine cannot serve a sandbox (see `startMcpServer`):
 *   checked before stdin is read
 */
export async function serveMcpStdio(file: string): Promise<"closed" | "SIGINT" | "SIGTERM"> {
  const config = await loadMcpServerConfig(file);
  const transport = new StdioServerTransport();
  const ended = Promise.withResolvers<"closed" | "SIGINT" | "SIGTERM">();
  const onEnd = () => ended.resolve("closed");
  const onSignal = (signal: "SIGINT" | "SIGTERM") => () => ended.resolve(signal);
  const handlers = { SIGINT: onSignal("SIGINT"), SIGTERM: onSignal("SIGTERM") };
  process.stdin.once("end", onEnd);
  process.stdin.once("close", onEnd);
  transport.onclose = onEnd;
  for (const [signal, handler] of Object.entries(handlers)) process.once(signal, handler);
  try {
    const running = await startMcpServer(config, { transport, write: (text) => void process.stderr.write(text) });
    const how = await ended.promise;
    await running.close();
    return how;
  } finally {
    for (const [signal, handler] of Object.entries(handlers)) process.off(signal, handler);
    process.stdin.off("end", onEnd);
    process.stdin.off("close", onEnd);
  }
}
