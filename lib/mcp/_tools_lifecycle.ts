/**
 * The lifecycle tools of the MCP server: `sandbox_create` (within the operator's ceiling
 * and sandbox count), `sandbox_destroy` and `sandbox_list`.
 *
 * @module
 */
import { z } from "zod";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { MIN_CPUS, MIN_MEMORY_BYTES, MIN_PIDS } from "../sandbox/policy.ts";
import type { McpServerSettings } from "./config.ts";
import type { McpSandboxes } from "./_sandboxes.ts";
import { type McpLog, toolCall } from "./_tool_call.ts";

/** The network as one phrase. */
function networkOf(settings: McpServerSettings): string {
  const network = settings.network;
  return typeof network === "string" ? network : `allowlist (${network.hosts.join(", ")})`;
}

/** Register `sandbox_create`, `sandbox_destroy` and `sandbox_list`. */
export function registerLifecycleTools(server: McpServer, settings: McpServerSettings, sandboxes: McpSandboxes, log: McpLog): void {
  const { ceiling, toolTimeoutMs } = settings;
  const most = (field: string, value: number, unit: string) =>
    `must be at most ${value}${unit}, the operator's ceiling (ceiling.${field} in the server's configuration): ask for less`;
  const least = (field: string, value: number, unit: string) =>
    `must be at least ${value}${unit}, the least a sandbox runs with: ask for more, or leave ${field} out to get the ceiling`;
  const whole = (field: string, unit: string) => `must be a whole number of ${unit}: ask for an integer, or leave ${field} out to get the ceiling`;
  server.registerTool("sandbox_create", {
    title: "Create a sandbox",
    description: `Start a new, empty Linux sandbox (an isolated container with /workspace; network ${networkOf(settings)}). ` +
      `At most ${settings.maxSandboxes} at once; resources left out get the ceiling (${ceiling.cpus} CPUs, ${ceiling.memoryBytes} bytes of memory, ${ceiling.pids} PIDs). ` +
      "Answers the sandbox's ID for the other tools. Destroy it with sandbox_destroy when done.",
    inputSchema: z.strictObject({
      cpus: z.number().min(MIN_CPUS, { error: least("cpus", MIN_CPUS, " CPUs") }).max(ceiling.cpus, { error: most("cpus", ceiling.cpus, " CPUs") }).optional()
        .describe(`CPUs, at most ${ceiling.cpus}`),
      memoryBytes: z.number().int({ error: whole("memoryBytes", "bytes") }).min(MIN_MEMORY_BYTES, { error: least("memoryBytes", MIN_MEMORY_BYTES, " bytes") })
        .max(ceiling.memoryBytes, { error: most("memoryBytes", ceiling.memoryBytes, " bytes") }).optional()
        .describe(`Memory in bytes, at most ${ceiling.memoryBytes}`),
      pids: z.number().int({ error: whole("pids", "PIDs") }).min(MIN_PIDS, { error: least("pids", MIN_PIDS, " PIDs") })
        .max(ceiling.pids, { error: most("pids", ceiling.pids, " PIDs") }).optional().describe(
          `Processes and threads, at most ${ceiling.pids}`,
        ),
    }),
    annotations: { destructiveHint: false, openWorldHint: false },
  }, toolCall("sandbox_create", toolTimeoutMs, log, async (args, call) => {
    const resources = { cpus: args.cpus ?? ceiling.cpus, memoryBytes: args.memoryBytes ?? ceiling.memoryBytes, pids: args.pids ?? ceiling.pids };
    const { sandbox } = await sandboxes.create(resources, call.signal);
    return `sandbox ${sandbox.id} is running (${resources.cpus} CPUs, ${resources.memoryBytes} bytes of memory, ${resources.pids} PIDs, network ${
      networkOf(settings)
    }). Commands run in /workspace/work as an unprivileged user; file paths are relative to /workspace.`;
  }));

  server.registerTool("sandbox_destroy", {
    title: "Destroy a sandbox",
    description: "Destroy a sandbox: its processes, its files and everything it holds on the host are removed.",
    inputSchema: z.strictObject({ sandboxId: z.string().max(64).describe("The sandbox's ID") }),
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, toolCall("sandbox_destroy", toolTimeoutMs, log, async (args) => {
    await sandboxes.destroy(args.sandboxId);
    return `sandbox ${args.sandboxId} is destroyed`;
  }));

  server.registerTool("sandbox_list", {
    title: "List sandboxes",
    description: "List this server's sandboxes: ID, state, resources and when each started.",
    inputSchema: z.strictObject({}),
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, toolCall("sandbox_list", toolTimeoutMs, log, () => {
    const entries = sandboxes.list();
    const lines = entries.map(({ sandbox, resources, startedAt }) =>
      `${sandbox.id} ${sandbox.state} ${resources.cpus} CPUs ${resources.memoryBytes} bytes ${resources.pids} PIDs started ${new Date(startedAt).toISOString()}`
    );
    return Promise.resolve(`${entries.length} of at most ${settings.maxSandboxes} sandboxes${lines.length ? `\n${lines.join("\n")}` : ""}`);
  }));
}
