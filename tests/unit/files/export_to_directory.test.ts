// exportToDirectory: all or nothing, through a temporary sibling renamed on success.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { SandboxConfigurationError, SandboxConflictError, SandboxDeadlineError } from "../../../lib/sandbox/errors.ts";
import type { SandboxExportEntry } from "../../../lib/sandbox/transfer.ts";
import { exportToDirectory } from "../../../lib/docker/files/export_to_directory.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "agentcell-export-directory-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function dir(path: string, mode = 0o755, mtime = 1_600_000_000): SandboxExportEntry {
  return { path, type: "directory", mode, mtime, size: 0, uid: 1, gid: 1, body: new Blob([]).stream() };
}

function file(path: string, text: string, mode = 0o644, mtime = 1_600_000_000): SandboxExportEntry {
  const bytes = new TextEncoder().encode(text);
  return { path, type: "file", mode, mtime, size: bytes.length, uid: 1, gid: 1, body: new Blob([bytes]).stream() };
}

async function* failingAfter(entries: SandboxExportEntry[], error: Error): AsyncGenerator<SandboxExportEntry> {
  yield* entries;
  throw error;
}

test("exportToDirectory writes files, modes and times, then renames into place", async () => {
  const target = join(root, "ok");
  const receipt = await exportToDirectory((async function* () {
    yield dir("work", 0o750);
    yield dir("work/ro", 0o555, 1_500_000_000);
    yield file("work/ro/data.bin", "abc", 0o4755, 1_400_000_000);
    yield file("work/deep/implicit.txt", "hi");
  })(), target);
  assert.deepEqual(receipt, { files: 4, bytes: 5 });
  assert.equal(await readFile(join(target, "work/ro/data.bin"), "utf8"), "abc");
  const data = await stat(join(target, "work/ro/data.bin"));
  assert.equal(data.mode & 0o7777, 0o755, "setuid is dropped");
  assert.equal(Math.floor(data.mtimeMs / 1000), 1_400_000_000);
  const ro = await stat(join(target, "work/ro"));
  assert.equal(ro.mode & 0o7777, 0o555);
  assert.equal(Math.floor(ro.mtimeMs / 1000), 1_500_000_000);
  assert.equal((await stat(join(target, "work"))).mode & 0o777, 0o750);
  assert.deepEqual((await readdir(root)).filter((name) => name.includes("partial")), []);
});

test("exportToDirectory with base writes relative to the selection", async () => {
  const target = join(root, "based");
  const entries = new ReadableStream<SandboxExportEntry>({
    start(controller) {
      controller.enqueue(dir("work/artifacts", 0o711));
      controller.enqueue(file("work/artifacts/report.json", "{}"));
      controller.close();
    },
  });
  await exportToDirectory(entries, target, { base: "work/artifacts" });
  assert.deepEqual(await readdir(target), ["report.json"]);
  assert.equal((await stat(target)).mode & 0o777, 0o711);
  await assert.rejects(
    exportToDirectory((async function* () {
      yield file("work/other.txt", "x");
    })(), join(root, "outside"), { base: "work/artifacts" }),
    (error) => error instanceof SandboxConfigurationError && /outside base/.test(error.message),
  );
  await assert.rejects(stat(join(root, "outside")));
});

test("exportToDirectory leaves nothing behind when the entries fail midway", async () => {
  const target = join(root, "failed");
  const failure = new SandboxDeadlineError("Cannot export files: its deadline passed");
  await assert.rejects(
    exportToDirectory(failingAfter([dir("a", 0o500), file("a/b.txt", "partial")], failure), target),
    (error) => error === failure,
  );
  await assert.rejects(stat(target));
  assert.deepEqual((await readdir(root)).filter((name) => name.startsWith(".failed")), []);
});

test("exportToDirectory refuses an existing target and non-canonical entry paths", async () => {
  const existing = join(root, "existing");
  await mkdir(existing);
  await assert.rejects(
    exportToDirectory((async function* () {})(), existing),
    (error) => error instanceof SandboxConflictError && error.code === "conflict",
  );
  const target = join(root, "traversal");
  await assert.rejects(
    exportToDirectory((async function* () {
      yield file("../escape.txt", "x");
    })(), target),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration",
  );
  await assert.rejects(stat(target));
  await assert.rejects(stat(join(root, "escape.txt")));
  await assert.rejects(exportToDirectory((async function* () {})(), "relative"), SandboxConfigurationError);
});

test("exportToDirectory cancels the entries when its checks fail before reading (existing target, missing parent, bad path)", async () => {
  const existing = join(root, "taken");
  await mkdir(existing);
  const aFile = join(root, "a-file");
  await writeFile(aFile, "x");
  const parentError = (error: unknown) =>
    error instanceof SandboxConfigurationError && error.code === "configuration" && /parent of .* is missing or not a directory/.test(error.message);
  const cases: [string, (error: unknown) => boolean][] = [
    [existing, (error) => error instanceof SandboxConflictError && error.code === "conflict"],
    [join(root, "missing-parent/target"), parentError],
    [join(aFile, "target"), parentError],
    ["relative", (error) => error instanceof SandboxConfigurationError && error.code === "configuration"],
  ];
  for (const [hostPath, check] of cases) {
    let cancelled: unknown = "not cancelled";
    const stream = new ReadableStream<SandboxExportEntry>({
      pull(controller) {
        controller.enqueue(dir("work"));
      },
      cancel(reason) {
        cancelled = reason;
      },
    }, { highWaterMark: 0 });
    await assert.rejects(exportToDirectory(stream, hostPath), check);
    assert.ok(check(cancelled), `the stream is cancelled with the error for ${hostPath}`);
    let returned = false;
    const iterable: AsyncIterable<SandboxExportEntry> = {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.resolve({ done: false, value: dir("work") }),
        return: () => {
          returned = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      }),
    };
    await assert.rejects(exportToDirectory(iterable, hostPath), check);
    assert.ok(returned, `the iterator is returned for ${hostPath}`);
  }
  assert.deepEqual((await readdir(root)).filter((name) => name.includes("partial")), []);
});

test("exportToDirectory creates nothing group- or world-writable by default (1777 directory → 0755, 0666 file → 0644); modeMask 0o777 opts out", async () => {
  const entries = () => (async function* () {
    yield dir("work", 0o775);
    yield dir("work/shared", 0o1777);
    yield file("work/shared/open.txt", "x", 0o666);
    yield file("work/shared/group.txt", "y", 0o2775);
  })();
  const masked = join(root, "masked");
  await exportToDirectory(entries(), masked);
  const modes = (target: string) =>
    Promise.all(["", "work", "work/shared", "work/shared/open.txt", "work/shared/group.txt"].map(async (path) => (await stat(join(target, path))).mode & 0o7777));
  assert.deepEqual(await modes(masked), [0o700, 0o755, 0o755, 0o644, 0o755]);
  const kept = join(root, "kept");
  await exportToDirectory(entries(), kept, { modeMask: 0o777 });
  assert.deepEqual(await modes(kept), [0o700, 0o775, 0o777, 0o666, 0o775], "only setuid, setgid and sticky are dropped");
});

test("exportToDirectory rejects a modeMask that is not permission bits, naming the option, and cancels the entries", async () => {
  for (const modeMask of [-1, 0o1000, 0o4777, 1.5, "755"]) {
    let cancelled = false;
    const entries = new ReadableStream<SandboxExportEntry>({ cancel: () => void (cancelled = true) });
    await assert.rejects(exportToDirectory(entries, join(root, "never"), { modeMask: modeMask as number }), (error) =>
      error instanceof SandboxConfigurationError && error.code === "configuration" &&
      error.message === "Cannot export to directory: options.modeMask must be an integer from 0 to 0o777 (permission bits; 0o755 is the default, 0o777 keeps the guest's write bits)");
    assert.ok(cancelled, `entries cancelled for ${modeMask}`);
  }
});
