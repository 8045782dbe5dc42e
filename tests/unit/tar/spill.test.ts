// Path checks past the in-memory bound: sorted runs spilled to disk, merged at the end.
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { PathSet } from "../../../lib/tar/_path_set.ts";
import { TarError } from "../../../lib/tar/error.ts";
import { readTar } from "../../../lib/tar/read_tar.ts";
import { concat, dir, end, file, header, pax, readAll, rejectsWith, streamOf } from "./_build.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "agentcell-tar-spill-test-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh, empty spill directory. */
async function spillDirectory(): Promise<string> {
  return await mkdtemp(join(root, "run-"));
}

async function assertEmpty(directory: string): Promise<void> {
  assert.deepEqual(await readdir(directory), []);
}

function files(count: number, name = (i: number) => `f${i}`): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => file(name(i), "x"));
}

describe("PathSet", () => {
  test("PathSet finds duplicates and conflicts across spilled runs", async () => {
    const cases: [string, [string, "file" | "directory"][], string | undefined][] = [
      ["unique paths", [["a", "directory"], ["a/b", "file"], ["c", "file"], ["a/d", "file"], ["e/f/g", "file"]], undefined],
      ["a duplicate file", [["a", "file"], ["x1", "file"], ["x2", "file"], ["a", "file"]], "duplicate_path"],
      ["a duplicate directory", [["d", "directory"], ["x1", "file"], ["x2", "file"], ["d", "directory"]], "duplicate_path"],
      ["a file then a file below it", [["a", "file"], ["a!", "file"], ["a-b", "file"], ["a.c", "file"], ["a/b", "file"]], "path_conflict"],
      ["a deep file then a file at its ancestor", [["a/b/c", "file"], ["a!", "file"], ["x", "file"], ["a", "file"]], "path_conflict"],
      ["a directory then a file at its path", [["a", "directory"], ["x1", "file"], ["x2", "file"], ["a", "file"]], "path_conflict"],
      ["a file then a directory at its path", [["a", "file"], ["x1", "file"], ["x2", "file"], ["a", "directory"]], "path_conflict"],
    ];
    for (const [name, adds, code] of cases) {
      const directory = await spillDirectory();
      const set = new PathSet({ spillDirectory: directory, maxInMemoryPaths: 1, maxInMemoryPathBytes: 1 << 20, fanIn: 2 });
      for (const [offset, [path, type]] of adds.entries()) await set.add(path, type, offset * 512);
      assert.ok((await readdir(directory)).length >= 2, `${name}: spilled more than one run`);
      if (code === undefined) await set.finish();
      else {
        const error = await rejectsWith(set.finish(), code as never);
        assert.equal(error.offset, (adds.length - 1) * 512, name);
      }
      await assertEmpty(directory);
    }
  });

  test("PathSet without a spill directory fails past the bound with path_limit", async () => {
    const set = new PathSet({ maxInMemoryPaths: 3, maxInMemoryPathBytes: 1000 });
    await set.add("a", "file", 0);
    await set.add("b", "file", 512);
    await set.add("c", "file", 1024);
    await rejectsWith(set.add("d", "file", 1536), "path_limit");
    const bytes = new PathSet({ maxInMemoryPaths: 100, maxInMemoryPathBytes: 5 });
    await rejectsWith(bytes.add("abcdef", "file", 0), "path_limit");
  });

  test("PathSet reports a missing spill directory with spill_io", async () => {
    const set = new PathSet({ spillDirectory: join(root, "missing"), maxInMemoryPaths: 1, maxInMemoryPathBytes: 100 });
    await set.add("a", "file", 0);
    await rejectsWith(set.add("b", "file", 512), "spill_io");
    await set.dispose();
  });

  test("PathSet agrees with a direct model on random path sequences", { timeout: 60_000 }, async () => {
    const segment = fc.constantFrom("a", "b", "a!", "a-", "é", "a.b", "a\nb", "\u0001");
    const item = fc.record({
      path: fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/")),
      type: fc.constantFrom("file" as const, "directory" as const),
    });
    const directory = await spillDirectory();
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 14 }), fc.integer({ min: 1, max: 4 }), async (items, bound) => {
        const expected = model(items);
        const set = new PathSet({ spillDirectory: directory, maxInMemoryPaths: bound, maxInMemoryPathBytes: 1 << 20, fanIn: 3 });
        let outcome = "ok";
        try {
          for (const [i, { path, type }] of items.entries()) await set.add(path, type, i);
          await set.finish();
        } catch (error) {
          assert.ok(error instanceof TarError);
          outcome = error.code === "duplicate_path" || error.code === "path_conflict" ? "bad" : error.code;
        } finally {
          await set.dispose();
        }
        assert.equal(outcome, expected);
        await assertEmpty(directory);
      }),
      { numRuns: 150 },
    );
  });
});

/** "ok" when the sequence is a valid tree, else "bad" (direct quadratic check). */
function model(items: { path: string; type: "file" | "directory" }[]): string {
  for (let i = 0; i < items.length; i++) {
    for (let j = 0; j < i; j++) {
      const [a, b] = [items[i], items[j]];
      if (a.path === b.path) return "bad";
      if (b.type === "file" && a.path.startsWith(`${b.path}/`)) return "bad";
      if (a.type === "file" && b.path.startsWith(`${a.path}/`)) return "bad";
    }
  }
  return "ok";
}

describe("readTar spill", () => {
  const options = (spill: string) => ({ spillDirectory: spill, maxInMemoryPaths: 8 });

  test("readTar with a spill directory reads many paths past the bound and leaves it empty", async () => {
    const directory = await spillDirectory();
    const archive = concat(dir("d/"), ...files(200, (i) => `d/f${i}`), end());
    let spilled = 0;
    const paths: string[] = [];
    for await (const entry of readTar(streamOf(archive), options(directory))) {
      paths.push(entry.path);
      await entry.body.cancel();
      spilled = Math.max(spilled, (await readdir(directory)).length);
    }
    assert.equal(paths.length, 201);
    assert.ok(spilled > 5, `runs on disk while reading: ${spilled}`);
    await assertEmpty(directory);
  });

  test("readTar with a spill directory finds a duplicate across runs and leaves it empty", async () => {
    const directory = await spillDirectory();
    const archive = concat(file("dup"), ...files(100), file("dup"), ...files(5, (i) => `g${i}`), end());
    const error = await rejectsWith(readAll(archive, options(directory)), "duplicate_path");
    assert.equal(error.path, "dup");
    assert.equal(error.offset, 512 + 100 * 1024);
    await assertEmpty(directory);
  });

  test("readTar with a spill directory finds file/directory conflicts across runs", async () => {
    for (const archive of [
      concat(file("a"), ...files(100), file("a/b"), end()),
      concat(file("a/b/c"), ...files(100), file("a"), end()),
      concat(dir("a/"), ...files(100), file("a"), end()),
    ]) {
      const directory = await spillDirectory();
      await rejectsWith(readAll(archive, options(directory)), "path_conflict");
      await assertEmpty(directory);
    }
  });

  test("readTar removes spill files when the archive is invalid", async () => {
    const directory = await spillDirectory();
    const archive = concat(...files(100), header({ name: "bad", checksumDelta: 3 }), end());
    await rejectsWith(readAll(archive, options(directory)), "checksum");
    await assertEmpty(directory);
  });

  test("readTar removes spill files when cancelled", async () => {
    const directory = await spillDirectory();
    const reader = readTar(streamOf(concat(...files(100), end())), options(directory)).getReader();
    for (let i = 0; i < 60; i++) await (await reader.read()).value!.body.cancel();
    assert.ok((await readdir(directory)).length > 0);
    await reader.cancel();
    await assertEmpty(directory);
  });

  test("readTar spills deep, distinct directory chains and leaves the directory empty", async () => {
    const directory = await spillDirectory();
    const parts = Array.from({ length: 40 }, (_, i) => concat(pax({ path: `b${i}/${"a/".repeat(2000)}x` }), file("f")));
    const entries = await readAll(concat(...parts, end()), { spillDirectory: directory });
    assert.equal(entries.length, 40);
    await assertEmpty(directory);
    await rejectsWith(readAll(concat(...parts, end())), "path_limit");
  });

  test("readTar without a spill directory fails past the bound with path_limit", async () => {
    const error = await rejectsWith(readAll(concat(...files(10), end()), { maxInMemoryPaths: 8 }), "path_limit");
    assert.equal(error.path, "f8");
  });
});
