// Helpers of the ACP bridge's engine tests: the fixture agent's files (the agent and the
// JavaScript of its two dependencies, imported into the workspace because the guest has no
// registry), its process request, a sandbox policy with room for Node, and small readers.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import type { SandboxImportEntry } from "../../lib/sandbox/transfer.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import type { SandboxProcessRequest } from "../../lib/sandbox/process.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { importDirectory } from "../../lib/docker/files/import_directory.ts";
import type { SessionUpdate } from "../../lib/acp/protocol.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** Room for Node and the SDK (a Node guest's working set is well below this). */
export const acpPolicy: SandboxPolicyInput = {
  resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 },
};

/** Where the agent's files land, relative to `/workspace/work`. */
export const AGENT_DIR = "agent";

/** The request that runs the fixture agent (`flags`: `--hang-initialize`, `--ignore-eof`). */
export function agentRequest(...flags: string[]): SandboxProcessRequest {
  return { executable: "/usr/local/bin/node", args: [`${AGENT_DIR}/agent.ts`, ...flags] };
}

/**
 * The files of one npm package that Node needs to load it as ESM: its `package.json` files
 * and the `.js` files outside `src/` (no types, maps, CommonJS or sources).
 */
async function* packageFiles(name: string): AsyncGenerator<SandboxImportEntry> {
  for await (const entry of importDirectory(join(root, "node_modules", name))) {
    if (entry.type !== "file" || entry.path.startsWith("src/")) continue;
    if (!entry.path.endsWith(".js") && !entry.path.endsWith("package.json")) continue;
    yield { ...entry, path: `${AGENT_DIR}/node_modules/${name}/${entry.path}` };
  }
}

/** The fixture agent and its dependencies (`@agentclientprotocol/sdk`, `zod`) as import entries. */
export async function* agentFiles(): AsyncGenerator<SandboxImportEntry> {
  for await (const entry of importDirectory(join(root, "tests/fixtures/acp"))) {
    if (entry.type === "file") yield { ...entry, path: `${AGENT_DIR}/${entry.path}` };
  }
  yield* packageFiles("@agentclientprotocol/sdk");
  yield* packageFiles("zod");
}

/** Import the fixture agent (and optional extra files) into a fresh sandbox. */
export async function importAgent(sandbox: DockerSandbox, extra: Record<string, string> = {}): Promise<void> {
  const encoder = new TextEncoder();
  async function* entries(): AsyncGenerator<SandboxImportEntry> {
    yield* agentFiles();
    for (const [path, content] of Object.entries(extra)) {
      const bytes = encoder.encode(content);
      yield { path, type: "file", mode: 0o644, size: bytes.length, body: new Blob([bytes]).stream() };
    }
  }
  await sandbox.importTree(entries(), { deadlineAt: Date.now() + 60_000 });
}

/** The text of the `agent_message_chunk` updates in `updates`, joined. */
export function messageText(updates: readonly SessionUpdate[]): string {
  return updates.map((update) =>
    update.sessionUpdate === "agent_message_chunk" && update.content.type === "text" ? update.content.text : ""
  ).join("");
}

/** Read a whole update stream. */
export async function collect(stream: ReadableStream<SessionUpdate>): Promise<SessionUpdate[]> {
  const updates: SessionUpdate[] = [];
  for await (const update of stream) updates.push(update);
  return updates;
}

/** Read all bytes of a workspace file after compute stopped. */
export async function exportedFile(sandbox: DockerSandbox, path: string): Promise<Uint8Array> {
  const entries: Uint8Array[] = [];
  for await (const entry of await sandbox.exportTree({ kind: "file", path })) {
    assert.equal(entry.type, "file");
    entries.push(new Uint8Array(await new Response(entry.body).arrayBuffer()));
  }
  assert.equal(entries.length, 1);
  return entries[0];
}
