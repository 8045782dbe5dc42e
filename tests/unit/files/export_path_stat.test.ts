// openExport against a scripted fake Engine whose path stats carry a Unix st_mode instead of
// a Go os.FileMode (a hardened proxy or another Engine implementation might): the stat is
// malformed and the export fails with a typed Engine error before any archive is requested.
// A genuine Go os.FileMode directory still exports.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { SandboxEngineError } from "../../../lib/sandbox/errors.ts";
import type { SandboxExportSelection } from "../../../lib/sandbox/transfer.ts";
import { normalizeTransferOptions } from "../../../lib/sandbox/transfer_input.ts";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { asSandboxError } from "../../../lib/docker/_engine_errors.ts";
import { openExport } from "../../../lib/docker/files/export_tree.ts";
import { TransferGuard } from "../../../lib/docker/files/_transfer_guard.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { concat, dir, end, file } from "../tar/_build.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });
/** Go os.ModeDir | 0o755, as Engine 28.5 reports a directory. */
const GO_DIRECTORY = 0x80000000 + 0o755;
/** A Unix st_mode of a directory: S_IFDIR | 0o755. */
const UNIX_DIRECTORY = 0o40755;

function stat(name: string, mode: number): string {
  return btoa(JSON.stringify({ name, size: 4096, mode, mtime: "2026-11-30T11:54:39Z", linkTarget: "" }));
}

/**
 * Exports `selection` from a fake Engine that stats every path with `modes[guest path]`
 * and answers `GET …/archive` with `archive`; returns the request lines and the result.
 */
async function exportFrom(
  selection: SandboxExportSelection,
  modes: Readonly<Record<string, number>>,
  archive: Uint8Array = new Uint8Array(0),
): Promise<{ requests: string[]; paths?: string[]; error?: unknown }> {
  const fake = await startFakeEngine(async (connection) => {
    const { head } = await connection.readRequest();
    const [method, target] = head.split(" ");
    if (target === "/version") {
      await connection.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${VERSION.length}\r\n\r\n${VERSION}`);
      return;
    }
    const path = new URL(target, "http://docker").searchParams.get("path") ?? "";
    if (method === "HEAD") {
      const name = path.slice(path.lastIndexOf("/") + 1);
      await connection.write(`HTTP/1.1 200 OK\r\nX-Docker-Container-Path-Stat: ${stat(name, modes[path])}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    await connection.write(`HTTP/1.1 200 OK\r\nContent-Type: application/x-tar\r\nContent-Length: ${archive.byteLength}\r\n\r\n`);
    await connection.write(archive);
  });
  const spillDirectory = await mkdtemp(join(tmpdir(), "agentcell-stat-"));
  const options = normalizeTransferOptions({}, "export files", true);
  const guard = new TransferGuard("export files", options, []);
  let released = 0;
  try {
    const host = {
      engine: new DockerEngine(`unix://${fake.socketPath}`),
      accessorId: "a".repeat(64),
      spillDirectory,
      timeoutMs: 30_000,
      release: () => void released++,
    };
    let result: { paths?: string[]; error?: unknown };
    try {
      const entries = await openExport(host, selection, options, guard);
      const paths: string[] = [];
      for await (const entry of entries) {
        paths.push(entry.path);
        await entry.body.cancel();
      }
      assert.equal(released, 1, "the export slot is freed once the stream ended");
      result = { paths };
    } catch (error) {
      result = { error };
    }
    assert.deepEqual(fake.scriptErrors, []);
    const requests = fake.requests.map((request) => {
      const [method, target] = request.head.split(" ");
      return `${method} ${decodeURIComponent(target.replace(/^\/v1\.51/, ""))}`;
    });
    return { requests, ...result };
  } finally {
    guard.dispose();
    await fake.close();
    await rm(spillDirectory, { recursive: true, force: true });
  }
}

function malformedStat(path: string, mode: number, stray: number): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof DockerEngineError, `not a DockerEngineError: ${error}`);
    assert.equal(error.code, "invalid_body");
    assert.equal(
      error.message,
      `Cannot read path stat of '${path}': the X-Docker-Container-Path-Stat header's mode 0o${mode.toString(8)} sets bits 0o${
        stray.toString(8)
      } that a Go os.FileMode never has (a Unix st_mode's file type or set-id bits), so the kind of the path is unknown; the Engine, or a proxy in front of it, must send the Go os.FileMode (a directory is 0o20000000755, not 0o40755)`,
    );
    // DockerSandbox.exportTree presents it as the typed Engine error of the export.
    const presented = asSandboxError(error, "export files");
    assert.ok(presented instanceof SandboxEngineError);
    assert.equal(presented.code, "engine");
    // One chain, one "Cannot": the inner step keeps its words without its own "Cannot".
    assert.equal(presented.message, `Cannot export files: ${error.message.replace(/^Cannot /u, "")}`);
    return true;
  };
}

test("openExport rejects a Unix st_mode directory stat of the selected file as malformed and requests no archive", async () => {
  const result = await exportFrom({ kind: "file", path: "work" }, { "/workspace/work": UNIX_DIRECTORY });
  malformedStat("/workspace/work", UNIX_DIRECTORY, 0o40000)(result.error);
  assert.deepEqual(result.requests, ["GET /version", "HEAD /containers/" + "a".repeat(64) + "/archive?path=/workspace/work"]);
});

test("openExport rejects a Unix st_mode stat of an ancestor as malformed, not as the caller's mistake", async () => {
  const result = await exportFrom({ kind: "file", path: "work/notes.txt" }, {
    "/workspace/work": UNIX_DIRECTORY,
    "/workspace/work/notes.txt": 0o100644,
  });
  malformedStat("/workspace/work", UNIX_DIRECTORY, 0o40000)(result.error);
  assert.equal(result.requests.length, 2, `no further request: ${result.requests}`);
});

test("openExport rejects a Unix regular-file st_mode and a Unix setuid bit as malformed", async () => {
  const regular = await exportFrom({ kind: "file", path: "work/a" }, { "/workspace/work": GO_DIRECTORY, "/workspace/work/a": 0o100644 });
  malformedStat("/workspace/work/a", 0o100644, 0o100000)(regular.error);
  const setuid = await exportFrom({ kind: "file", path: "work/a" }, { "/workspace/work": GO_DIRECTORY, "/workspace/work/a": 0o4755 });
  malformedStat("/workspace/work/a", 0o4755, 0o4000)(setuid.error);
  assert.ok(regular.requests.every((line) => !line.startsWith("GET /containers/")));
});

test("openExport still exports a directory whose stat carries the Go os.FileMode directory bit", async () => {
  const archive = concat(dir("work/"), file("work/notes.txt", "hello"), end());
  const result = await exportFrom({ kind: "subtree", path: "work" }, { "/workspace/work": GO_DIRECTORY }, archive);
  assert.equal(result.error, undefined, String(result.error));
  assert.deepEqual(result.paths, ["work", "work/notes.txt"]);
  assert.deepEqual(result.requests, [
    "GET /version",
    `HEAD /containers/${"a".repeat(64)}/archive?path=/workspace/work`,
    `GET /containers/${"a".repeat(64)}/archive?path=/workspace/work`,
  ]);
});
