// Helpers of the real-engine file transfer tests: in-memory import trees, running the one
// guest process of a sandbox, and reading an export into comparable records.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { SandboxExportEntry, SandboxImportEntry } from "../../lib/sandbox/transfer.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { text } from "./_sandbox.ts";

/** A planned file or directory: its bytes kept for comparison. */
export interface Planned {
  readonly path: string;
  readonly type: "file" | "directory";
  readonly mode: number;
  readonly mtime: number;
  readonly data: Uint8Array;
}

/** What an exported entry is, with its bytes hashed. */
export interface Exported {
  readonly path: string;
  readonly type: "file" | "directory";
  readonly mode: number;
  readonly mtime: number;
  readonly size: number;
  readonly uid: number;
  readonly gid: number;
  readonly sha256: string;
}

/** Deterministic pseudo-random bytes. */
export function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state & 0xff;
  }
  return out;
}

/** SHA-256 of bytes, hex. */
export function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Import entries of a plan, each body a fresh stream in chunks of `chunk` bytes. */
export function importEntries(plan: readonly Planned[], chunk = 100_000): SandboxImportEntry[] {
  return plan.map((item) => ({
    path: item.path,
    type: item.type,
    mode: item.mode,
    mtime: item.mtime,
    size: item.type === "file" ? item.data.length : 0,
    body: item.type === "file" ? chunked(item.data, chunk) : undefined,
  }));
}

/** A stream of `data` in pieces of `chunk` bytes. */
export function chunked(data: Uint8Array, chunk: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= data.length) return controller.close();
      controller.enqueue(data.slice(offset, offset + chunk));
      offset += chunk;
    },
  });
}

/** Reads an export completely; every body is hashed. */
export async function readExport(entries: ReadableStream<SandboxExportEntry>): Promise<Exported[]> {
  const out: Exported[] = [];
  for await (const entry of entries) {
    const hash = createHash("sha256");
    let size = 0;
    for await (const chunk of entry.body) {
      hash.update(chunk);
      size += chunk.length;
    }
    assert.equal(size, entry.size, `body length of ${entry.path}`);
    const { path, type, mode, mtime, uid, gid } = entry;
    out.push({ path, type, mode, mtime, size, uid, gid, sha256: hash.digest("hex") });
  }
  return out;
}

/** Runs the sandbox's one process as `/bin/sh -c script`; asserts exit 0; returns stdout. */
export async function runGuest(sandbox: DockerSandbox, script: string): Promise<string> {
  const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
  await process.stdin.close();
  const [out, err, exit] = await Promise.all([text(process.stdout), text(process.stderr), process.exit]);
  assert.deepEqual(exit, { kind: "exited", code: 0 }, `guest script failed: ${err}`);
  return out;
}
