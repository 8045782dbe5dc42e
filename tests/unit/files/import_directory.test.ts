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

/** A tree like an npm install's: `.bin` links into packages, a link to a directory, a link to a link. */
async function linkedTree(name: string): Promise<string> {
  const top = await fresh(name);
  await mkdir(join(top, "node_modules/.bin"), { recursive: true });
  await mkdir(join(top, "node_modules/pkg/bin"), { recursive: true });
  await writeFile(join(top, "node_modules/pkg/bin/cli.js"), "#!/usr/bin/env node\n");
  await symlink("../pkg/bin/cli.js", join(top, "node_modules/.bin/cli"));
  await symlink("pkg", join(top, "node_modules/alias"));
  await symlink("alias/bin/cli.js", join(top, "node_modules/chain"));
  return top;
}

async function rejectsWalk(source: AsyncIterable<SandboxImportEntry>, pattern: RegExp): Promise<string[]> {
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const entry of source) seen.push(entry.path);
    })(),
    (error) => {
      assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration", String(error));
      assert.match(error.message, pattern);
      return true;
    },
  );
  return seen;
}

test("importDirectory links \"inside\" keeps links that stay inside the tree as symlinks with their target", async () => {
  const top = await linkedTree("links-inside");
  const entries = await collect(importDirectory(top, { links: "inside" }));
  assert.deepEqual(entries.map(({ entry }) => `${entry.type} ${entry.path}${entry.target === undefined ? "" : ` -> ${entry.target}`}`), [
    "directory node_modules",
    "directory node_modules/.bin",
    "symlink node_modules/.bin/cli -> ../pkg/bin/cli.js",
    "symlink node_modules/alias -> pkg",
    "symlink node_modules/chain -> alias/bin/cli.js",
    "directory node_modules/pkg",
    "directory node_modules/pkg/bin",
    "file node_modules/pkg/bin/cli.js",
  ]);
  const link = entries[2].entry;
  assert.equal(link.size, 0);
  assert.equal(link.body, undefined);
});

test("importDirectory links \"skip\" leaves every link out, inside or outside, dangling or absolute", async () => {
  const top = await linkedTree("links-skip");
  await symlink("/etc/passwd", join(top, "absolute"));
  await symlink("../../outside", join(top, "node_modules/.bin/up"));
  await symlink("missing", join(top, "dangling"));
  const entries = await collect(importDirectory(top, { links: "skip" }));
  assert.deepEqual(entries.map(({ entry }) => `${entry.type} ${entry.path}`), [
    "directory node_modules",
    "directory node_modules/.bin",
    "directory node_modules/pkg",
    "directory node_modules/pkg/bin",
    "file node_modules/pkg/bin/cli.js",
  ]);
});

test("importDirectory links \"inside\" refuses an absolute, a leaving, a dangling and a through-a-link-leaving link, naming it, before yielding", async () => {
  const outside = await fresh("links-outside-target");
  await writeFile(join(outside, "secret"), "s");
  const cases: [string, (top: string) => Promise<void>, RegExp][] = [
    ["absolute", (top) => symlink(join(top, "node_modules/pkg/bin/cli.js"), join(top, "abs")), /'[^']*\/abs' is a symbolic link to "\/[^"]*" that is refused: its target must be relative, not the absolute path/],
    ["leaving", (top) => symlink("../../../links-outside-target/secret", join(top, "node_modules/.bin/up")), /'[^']*node_modules\/\.bin\/up' is a symbolic link to "\.\.\/\.\.\/\.\.\/links-outside-target\/secret" that is refused: its target must not leave the imported tree/],
    ["dotdot-inside", (top) => symlink("pkg/../../x", join(top, "node_modules/odd")), /node_modules\/odd' is a symbolic link to "pkg\/\.\.\/\.\.\/x" that is refused: its target must not contain a '\.\.' segment/],
    ["dangling", (top) => symlink("missing.js", join(top, "node_modules/.bin/gone")), /node_modules\/\.bin\/gone' is a symbolic link to "missing\.js" that does not resolve on the host \(ENOENT\): a dangling link is not imported/],
    ["through", async (top) => {
      await symlink(outside, join(top, "escape-dir"));
      await symlink("escape-dir/secret", join(top, "via"));
    }, /'[^']*\/escape-dir' is a symbolic link to "\/[^"]*links-outside-target" that is refused/],
    ["through-relative", async (top) => {
      await symlink("..", join(top, "node_modules/up"));
      await symlink("up/links-outside-target/secret", join(top, "node_modules/via"));
    }, /node_modules\/up' is a symbolic link to "\.\." that is refused: its target must name an entry below its leading '\.\.' segments/],
  ];
  for (const [name, make, pattern] of cases) {
    const top = await linkedTree(`links-refused-${name}`);
    await make(top);
    assert.deepEqual(await rejectsWalk(importDirectory(top, { links: "inside" }), pattern), [], name);
  }
  assert.throws(() => importDirectory(outside, { links: "follow" as never }), /^SandboxConfigurationError: Cannot import directory: options\.links must be "refuse", "skip" or "inside"$/);
});

test("importDirectory links \"inside\" catches a chain through a link only realpath sees leaving the tree", async () => {
  const outside = await fresh("links-chain-outside");
  const top = await linkedTree("links-chain");
  // Lexically inside ("sub/x" from the root), but sub is a link outside: realpath shows it.
  await symlink(outside, join(top, "sub"));
  await writeFile(join(outside, "x"), "x");
  await symlink("sub/x", join(top, "chained"));
  // The first link met in sorted order is "chained" (before "node_modules" and "sub").
  await rejectsWalk(importDirectory(top, { links: "inside" }), /chained' is a symbolic link to "sub\/x" that leads out of the tree through another link/);
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
