// Helpers of the MCP server tests: a world (config file, records directory, export root,
// a namespace of its own) and the server started with this lane's runtime, driven by the
// SDK's own Client over stdio.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { McpServerConfig } from "../../lib/mcp/config.ts";
import { busyboxImage, endpoint, runtimeCommand } from "./_engine.ts";

const MAIN = fileURLToPath(new URL("../../lib/mcp/main.ts", import.meta.url));

/** A config file and its directories in a fresh temporary directory. */
export interface McpWorld {
  readonly config: McpServerConfig;
  readonly file: string;
  readonly records: string;
  readonly exportRoot: string;
  readonly namespace: string;
}

/** A started server and the SDK client talking to it. */
export interface McpConnection {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** Call a tool; the answer's text and whether it is an error. */
  call(name: string, args?: Record<string, unknown>): Promise<{ text: string; isError: boolean }>;
}

/** Run `fn` in a fresh world with `overrides` of the config; its directory is removed after. */
export async function withMcpWorld(overrides: Partial<McpServerConfig>, fn: (world: McpWorld) => Promise<void>): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-mcp-")));
  try {
    const records = join(root, "records");
    const exportRoot = join(root, "exports");
    await mkdir(exportRoot);
    // A spill directory of the world's own: a SIGKILLed server cannot remove a private one.
    const spillDirectory = join(root, "spill");
    await mkdir(spillDirectory);
    const namespace = `mcp-${crypto.randomUUID().slice(0, 8)}`;
    const config: McpServerConfig = {
      endpoint: endpoint!,
      profile: "linux-x64-cgroupfs",
      imageDigest: busyboxImage,
      namespace,
      recordsDirectory: records,
      spillDirectory,
      exportRoot,
      ceiling: { cpus: 1, memoryBytes: 128 * 1024 * 1024, pids: 64 },
      maxSandboxes: 1,
      ...overrides,
    };
    const file = join(root, "mcp.json");
    await writeFile(file, JSON.stringify(config));
    await fn({ config, file, records, exportRoot, namespace });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Start the server of `world` with this lane's runtime and connect the SDK client. */
export async function connect(world: McpWorld): Promise<McpConnection> {
  const [command, args] = runtimeCommand(MAIN);
  const transport = new StdioClientTransport({ command, args: [...args, "--config", world.file], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => (stderr += new TextDecoder().decode(chunk)));
  const client = new Client({ name: "agentcell-test", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`${(error as Error).message}\nserver stderr:\n${stderr}`);
  }
  return {
    client,
    transport,
    stderr: () => stderr,
    call: async (name, toolArgs = {}) => {
      const result = await client.callTool({ name, arguments: toolArgs }, undefined, { timeout: 120_000 });
      const content = result.content as { type: string; text?: string }[];
      return { text: content.map((part) => part.text ?? "").join(""), isError: result.isError === true };
    },
  };
}

/** The sandbox ID in a `sandbox_create` answer. */
export function sandboxIdOf(text: string): string {
  const id = /^sandbox ([0-9a-f]{32}) is running/u.exec(text)?.[1];
  assert.ok(id, `no sandbox ID in: ${text}`);
  return id;
}
