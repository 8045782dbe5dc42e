// Helpers of the ACP bridge's engine tests: importing the fixture agent (see
// tests/fixtures/acp/agent_files.ts) with a task, a sandbox policy with room for Node, and
// small readers of updates and exported files.
import assert from "node:assert/strict";
import type { SandboxImportEntry } from "../../lib/sandbox/transfer.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { SessionUpdate } from "../../lib/acp/protocol.ts";
import type { AcpPermissionRequest } from "../../lib/acp/permission.ts";
import { agentFiles } from "../fixtures/acp/agent_files.ts";

export { agentRequest } from "../fixtures/acp/agent_files.ts";

/** Room for Node and the SDK (a Node guest's working set is well below this). */
export const acpPolicy: SandboxPolicyInput = {
  resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 },
};

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

/**
 * An `onPermissionRequest` that answers nothing and hands the first request to `asked`, for
 * tests that answer (or cancel) it later.
 */
export function heldPermission(): { onPermissionRequest: (request: AcpPermissionRequest) => void; asked: Promise<AcpPermissionRequest> } {
  let hand!: (request: AcpPermissionRequest) => void;
  const asked = new Promise<AcpPermissionRequest>((resolve) => (hand = resolve));
  return { onPermissionRequest: (request) => hand(request), asked };
}
