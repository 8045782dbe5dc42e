// importTreeInto against a scripted fake Engine: the archive it sends (parents first, owned
// by the sandbox user), quotas before an entry leaves, and the partial-import record.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxAbortedError, SandboxConfigurationError, SandboxEngineError, SandboxQuotaError } from "../../../lib/sandbox/errors.ts";
import { partialImportOf, type SandboxImportEntry } from "../../../lib/sandbox/transfer.ts";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { readTar } from "../../../lib/tar/read_tar.ts";
import { importTreeInto } from "../../../lib/docker/files/import_tree.ts";
import { type FakeConnection, startFakeEngine } from "../_fake_engine.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });

function reply(status: string, body: string): string {
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** A fake engine whose first connection answers /version and the others run `archive`. */
async function withEngine(
  archive: (connection: FakeConnection) => Promise<void>,
  run: (engine: DockerEngine) => Promise<void>,
): Promise<void> {
  let connections = 0;
  const fake = await startFakeEngine(async (connection) => {
    if (++connections > 1) return await archive(connection);
    await connection.readRequest();
    await connection.write(reply("200 OK", VERSION));
  });
  try {
    await run(new DockerEngine(`unix://${fake.socketPath}`));
  } finally {
    await fake.close();
  }
}

const host = (engine: DockerEngine) => ({
  engine,
  keeperId: "a".repeat(64),
  user: { uid: 1000, gid: 1001 },
  stopping: new AbortController().signal,
});

function fileEntry(path: string, text: string): SandboxImportEntry {
  const bytes = new TextEncoder().encode(text);
  return { path, type: "file", mode: 0o640, mtime: 1_700_000_000, size: bytes.length, body: new Blob([bytes]).stream() };
}

/** Decodes a chunked body read raw (complete or cut short). */
function dechunk(raw: Uint8Array): Uint8Array {
  const parts: number[] = [];
  let at = 0;
  const text = (from: number, to: number) => new TextDecoder("latin1").decode(raw.subarray(from, to));
  for (;;) {
    const end = raw.indexOf(13, at);
    if (end === -1) break;
    const size = parseInt(text(at, end), 16);
    if (!(size > 0)) break;
    parts.push(...raw.subarray(end + 2, Math.min(end + 2 + size, raw.length)));
    at = end + 2 + size + 2;
  }
  return Uint8Array.from(parts);
}

/** Runs an import that is expected to fail against an Engine that reads whatever comes. */
async function failedImport(
  source: Iterable<SandboxImportEntry> | AsyncIterable<SandboxImportEntry>,
  options: Parameters<typeof importTreeInto>[2] = {},
): Promise<unknown> {
  let error: unknown;
  await withEngine(async (connection) => {
    await connection.readHead();
    await connection.readToEnd();
  }, async (engine) => {
    error = await importTreeInto(host(engine), source, options).then(() => undefined, (failure) => failure);
  });
  return error;
}

test("importTreeInto sends parents first, owned by the sandbox user, and returns the receipt", async () => {
  let body: Uint8Array | undefined;
  let target = "";
  await withEngine(async (connection) => {
    const request = await connection.readRequest();
    target = request.head.split(" ")[1];
    body = request.body;
    await connection.write(reply("200 OK", ""));
  }, async (engine) => {
    const progress: string[] = [];
    const receipt = await importTreeInto(host(engine), [
      fileEntry("src/lib/a.js", "abc"),
      { path: "src/lib/sub", type: "directory", mode: 0o700, size: 0 },
      fileEntry("top.txt", "xy"),
    ], { onProgress: ({ files, bytes }) => void progress.push(`${files}/${bytes}`) });
    assert.deepEqual(receipt, { files: 5, bytes: 5 });
    assert.deepEqual(progress.at(-1), "5/5");
  });
  assert.match(target, /^\/v1\.51\/containers\/a{64}\/archive\?path=%2Fworkspace%2Fwork&noOverwriteDirNonDir=true$/);
  const seen: string[] = [];
  for await (const entry of readTar(new Blob([body! as Uint8Array<ArrayBuffer>]).stream())) {
    seen.push(`${entry.type} ${entry.path} ${entry.mode.toString(8)} ${entry.uid}:${entry.gid} ${await new Response(entry.body).text()}`);
  }
  assert.deepEqual(seen, [
    "directory src 755 1000:1001 ",
    "directory src/lib 755 1000:1001 ",
    "file src/lib/a.js 640 1000:1001 abc",
    "directory src/lib/sub 700 1000:1001 ",
    "file top.txt 640 1000:1001 xy",
  ]);
});

test("importTreeInto stops before the entry that would exceed a quota and reports what was sent", async () => {
  let raw: Uint8Array = new Uint8Array(0);
  await withEngine(async (connection) => {
    await connection.readHead();
    raw = await connection.readToEnd();
  }, async (engine) => {
    const error = await importTreeInto(host(engine), [
      fileEntry("one.txt", "1111"),
      fileEntry("two.txt", "2222"),
      fileEntry("three.txt", "3333"),
    ], { quota: { bytes: 9 } }).catch((error) => error);
    assert.ok(error instanceof SandboxQuotaError && error.code === "quota", String(error));
    assert.deepEqual(partialImportOf(error), { entriesSent: 2, bytesSent: 8, lastPathSent: "two.txt" });
    assert.match(error.message, /'three\.txt'/);
  });
  // What reached the socket before the connection was aborted varies by runtime; the
  // entry over quota never does.
  const sent = new TextDecoder("latin1").decode(dechunk(raw));
  assert.ok(!sent.includes("three.txt"), "the third header never left");
});

test("importTreeInto reports a failing source as aborted with its cause and the partial record", async () => {
  const cause = new Error("disk went away");
  async function* source(): AsyncGenerator<SandboxImportEntry> {
    yield fileEntry("ok.txt", "fine");
    throw cause;
  }
  const error = await failedImport(source());
  assert.ok(error instanceof SandboxAbortedError && error.code === "aborted", String(error));
  assert.equal(error.cause, cause);
  assert.deepEqual(partialImportOf(error), { entriesSent: 1, bytesSent: 4, lastPathSent: "ok.txt" });
});

test("importTreeInto reports an Engine refusal as an engine error with the partial record", async () => {
  await withEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(reply("500 Internal Server Error", JSON.stringify({ message: "cannot overwrite directory with non-directory" })));
  }, async (engine) => {
    const error = await importTreeInto(host(engine), [fileEntry("a", "x")], {}).catch((error) => error);
    assert.ok(error instanceof SandboxEngineError && error.code === "engine" && error.status === 500, String(error));
    assert.match(error.message, /cannot overwrite directory/);
    assert.deepEqual(partialImportOf(error), { entriesSent: 1, bytesSent: 1, lastPathSent: "a" });
  });
});

test("importTreeInto does not count the chunk that runs past a body's declared size as sent", async () => {
  const pieces = [new TextEncoder().encode("ab"), new TextEncoder().encode("cdef")];
  const body = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      const piece = pieces.shift();
      if (piece === undefined) controller.close();
      else controller.enqueue(piece);
    },
  }, { highWaterMark: 0 });
  const error = await failedImport([{ path: "long.txt", type: "file", mode: 0o644, size: 3, body }]);
  assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration", String(error));
  assert.match(error.message, /body longer than its size 3 .*'long\.txt'/);
  assert.deepEqual(partialImportOf(error), { entriesSent: 1, bytesSent: 2, lastPathSent: "long.txt" });
});

test("importTreeInto does not count a chunk whose progress report threw as sent", async () => {
  const error = await failedImport([fileEntry("a.txt", "abc"), fileEntry("b.txt", "defg")], {
    onProgress: ({ bytes }) => {
      if (bytes > 3) throw new Error("enough");
    },
  });
  assert.ok(error instanceof SandboxAbortedError && (error.cause as Error).message === "enough", String(error));
  assert.deepEqual(partialImportOf(error), { entriesSent: 2, bytesSent: 3, lastPathSent: "b.txt" });
});
