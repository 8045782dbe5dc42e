// Property: valid trees survive writeTar → readTar exactly, however the bytes are split.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { writeTar } from "../../../lib/tar/write_tar.ts";
import { concat, readAll, streamOf } from "./_build.ts";
import { plannedTree, writerEntries } from "./_trees.ts";

async function archiveOf(entries: ReturnType<typeof writerEntries>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of writeTar(entries)) chunks.push(chunk);
  return concat(...chunks);
}

test("writeTar and readTar round-trip random valid trees", { timeout: 60_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(plannedTree, fc.oneof(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 64, max: 70_000 })), async (plan, chunk) => {
      const entries = await readAll(writeTar(writerEntries(plan, chunk)));
      assert.deepEqual(
        entries.map(({ path, type, mode, mtime, uid, gid, data }) => ({ path, type, mode, mtime, uid, gid, data })),
        plan,
      );
      for (const entry of entries) assert.equal(entry.size, entry.data.length);
    }),
    { numRuns: 60 },
  );
});

test("readTar reads random valid trees split at random byte boundaries", { timeout: 60_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(
      plannedTree,
      fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 40 }),
      fc.integer({ min: 1, max: 9 }),
      async (plan, cuts, tiny) => {
        const archive = await archiveOf(writerEntries(plan));
        const whole = await readAll(streamOf(archive, archive.length));
        const split = await readAll(streamOf(archive, cuts.map((cut) => Math.floor(cut * archive.length))));
        assert.deepEqual(split, whole);
        if (archive.length < 40_000) assert.deepEqual(await readAll(streamOf(archive, tiny)), whole);
        assert.deepEqual(whole.map((entry) => entry.path), plan.map((entry) => entry.path));
      },
    ),
    { numRuns: 40 },
  );
});
