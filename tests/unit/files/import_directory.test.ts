// importDirectory: a host tree as import entries, never following links.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFile, chmod, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { SandboxConfigurationError, SandboxConflictError } from "../../../lib/sandbox/errors.ts";
import type { SandboxImportEntry } from "../../../lib/sandbox/transfer.ts";
import { importDirectory } from "../../../lib/docker/files/import_directory.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "agentcell-import-directory-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function fresh(name: string): Promise<string> {
  const directory = join(root, name);
  await mkdir(directory);
  return directory;
}

async function collect(source: AsyncIterable<SandboxImportEntry>): Promise<{ entry: SandboxImportEntry; text: string }[]> {
  const out = [];
  for await (const entry of source) out.push({ entry, text: entry.body ? await new Response(entry.body).text() : "" });
  return out;
}

test("importDirectory yields directories before their contents, sorted, with modes, times and bytes", async () => {
  const top = await fresh("tree");
  await mkdir(join(top, "src/lib"), { recursive: true });
  await writeFile(join(top, "src/lib/b.js"), "export {};\n");
  await writeFile(join(top, "src/a.js"), "a");
  await writeFile(join(top, "README"), "");
  await writeFile(join(top, "Zz ünïcode.txt"), "ü");
  await chmod(join(top, "src/a.js"), 0o750);
  await chmod(join(top, "src/lib"), 0o700);
  await utimes(join(top, "src/a.js"), 1_700_000_000, 1_700_000_000.9);
  const entries = await collect(importDirectory(top));
  assert.deepEqual(entries.map(({ entry }) => `${entry.type} ${entry.path}`), [
    "file README",
    "file Zz ünïcode.txt",
    "directory src",
    "file src/a.js",
    "directory src/lib",
    "file src/lib/b.js",
  ]);
  const byPath = new Map(entries.map((item) => [item.entry.path, item]));
  assert.equal(byPath.get("src/a.js")!.entry.mode, 0o750);
  assert.equal(byPath.get("src/a.js")!.entry.mtime, 1_700_000_000);
  assert.equal(byPath.get("src/a.js")!.text, "a");
  assert.equal(byPath.get("src/lib")!.entry.mode, 0o700);
  assert.equal(byPath.get("src/lib/b.js")!.entry.size, 11);
  assert.equal(byPath.get("Zz ünïcode.txt")!.text, "ü");
  assert.equal(byPath.get("README")!.entry.size, 0);
});

test("importDirectory rejects a symlink anywhere before yielding anything", async () => {
  const top = await fresh("with-link");
  await mkdir(join(top, "a/b"), { recursive: true });
  await writeFile(join(top, "a/first.txt"), "x");
  await symlink("/etc/passwd", join(top, "a/b/link"));
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const entry of importDirectory(top)) seen.push(entry.path);
    })(),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /a\/b\/link' is a symbolic link/.test(error.message),
  );
  assert.deepEqual(seen, []);
});

test("importDirectory rejects a symlinked root, a file root, a missing root, a FIFO and a relative path", async () => {
  const top = await fresh("roots");
  await mkdir(join(top, "real"));
  await symlink(join(top, "real"), join(top, "alias"));
  await writeFile(join(top, "file"), "x");
  const isConfiguration = (fragment: RegExp) => (error: unknown) =>
    error instanceof SandboxConfigurationError && error.code === "configuration" && fragment.test(error.message);
  await assert.rejects(collect(importDirectory(join(top, "alias"))), isConfiguration(/is a symbolic link/));
  await assert.rejects(collect(importDirectory(join(top, "file"))), isConfiguration(/is not a directory/));
  await assert.rejects(collect(importDirectory(join(top, "missing"))), isConfiguration(/cannot be read \(ENOENT\)/));
  assert.throws(() => importDirectory("relative/path"), isConfiguration(/hostPath must be an absolute path/));
  const withFifo = await fresh("fifo");
  execFileSync("mkfifo", [join(withFifo, "pipe")]);
  await assert.rejects(collect(importDirectory(withFifo)), isConfiguration(/is a special file/));
});

test("importDirectory fails a body whose file changed after it was listed", async () => {
  const top = await fresh("changing");
  await writeFile(join(top, "grows"), "1234");
  await utimes(join(top, "grows"), 1_000_000_000, 1_000_000_000);
  const iterator = importDirectory(top)[Symbol.asyncIterator]();
  const { value } = await iterator.next();
  await appendFile(join(top, "grows"), "5678");
  await assert.rejects(
    new Response(value!.body).arrayBuffer(),
    (error) => error instanceof SandboxConflictError && error.code === "conflict" && /written after it was listed/.test(error.message),
  );
  await iterator.return?.();
});

/** A file of `size` bytes listed with an old mtime; returns its body after one read. */
async function readingBody(name: string, size: number) {
  const top = await fresh(name);
  const file = join(top, "data.bin");
  await writeFile(file, new Uint8Array(size));
  await utimes(file, 1_000_000_000, 1_000_000_000); // a rewrite now moves the mtime for sure
  const iterator = importDirectory(top)[Symbol.asyncIterator]();
  const { value } = await iterator.next();
  const reader = value!.body!.getReader();
  assert.equal((await reader.read()).done, false);
  return { file, reader, done: () => iterator.return?.() };
}

async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  for (;;) if ((await reader.read()).done) return;
}

test("importDirectory fails a body whose file grows while it is read", async () => {
  const { file, reader, done } = await readingBody("grows-while-read", 3 * 1024 * 1024);
  await appendFile(file, "x");
  await assert.rejects(readRest(reader), (error) => error instanceof SandboxConflictError && /grew past 3145728 bytes/.test(error.message));
  await done();
});

test("importDirectory fails a body whose file is rewritten at the same size while it is read", async () => {
  const { file, reader, done } = await readingBody("rewritten", 3 * 1024 * 1024);
  await writeFile(file, new Uint8Array(3 * 1024 * 1024).fill(65));
  await assert.rejects(readRest(reader), (error) => error instanceof SandboxConflictError && error.code === "conflict" && /written while it was read/.test(error.message));
  await done();
});

test("importDirectory refuses, before yielding anything, names importTree would refuse", async () => {
  for (const [label, bad] of [["backslash", "z\\b"], ["newline", "z\nb"], ["escape", "z\u001b[31m"]]) {
    const top = await fresh(`bad-name-${label.replace(/\W/g, "")}`);
    await writeFile(join(top, "a.txt"), "first");
    await writeFile(join(top, bad), "bad");
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const entry of importDirectory(top)) seen.push(entry.path);
      })(),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /cannot be imported: its path must/.test(error.message),
      label,
    );
    assert.deepEqual(seen, [], `${label}: nothing yielded`);
  }
});
