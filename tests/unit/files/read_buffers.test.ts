// The import's read-buffer pool: a buffer comes back only when every byte handed out of it
// did, and only bodies nobody else reads are given one.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { adoptPool, READ_BUFFER_BYTES, ReadBufferPool } from "../../../lib/docker/files/_read_buffers.ts";
import { importDirectory } from "../../../lib/docker/files/import_directory.ts";
import type { SandboxImportEntry } from "../../../lib/sandbox/transfer.ts";

test("ReadBufferPool reuses a buffer only after views covering every lent byte came back", () => {
  const pool = new ReadBufferPool();
  const first = pool.take();
  assert.equal(first.byteLength, READ_BUFFER_BYTES);
  const lent = pool.lend(first.subarray(0, 100_000));
  pool.release(lent.subarray(0, 65_536));
  assert.notEqual(pool.take().buffer, first.buffer, "a partly returned buffer is not free");
  pool.release(new Uint8Array(100_000)); // not the pool's: ignored
  pool.release(lent.subarray(65_536));
  assert.equal(pool.take().buffer, first.buffer, "a fully returned buffer is reused");
});

test("ReadBufferPool keeps at most four free buffers", () => {
  const pool = new ReadBufferPool();
  const taken = Array.from({ length: 6 }, () => pool.take());
  for (const buffer of taken) pool.release(pool.lend(buffer.subarray(0, 10)));
  const reused = Array.from({ length: 6 }, () => pool.take()).filter((buffer) => taken.some((old) => old.buffer === buffer.buffer));
  assert.equal(reused.length, 4);
});

async function firstFile(directory: string): Promise<SandboxImportEntry> {
  for await (const entry of importDirectory(directory)) if (entry.type === "file") return entry;
  throw new Error("no file");
}

test("an importDirectory body reads through an adopted pool: 8 MiB in one buffer when chunks come back", async () => {
  const directory = await mkdtemp(join(tmpdir(), "agentcell-read-buffers-"));
  try {
    const bytes = new Uint8Array(8 * READ_BUFFER_BYTES + 3).map((_, index) => index % 253);
    await writeFile(join(directory, "big.bin"), bytes);
    const pool = new ReadBufferPool();
    const entry = await firstFile(directory);
    assert.equal(adoptPool(entry.body!, pool), true);
    const buffers = new Set<ArrayBufferLike>();
    let offset = 0;
    for await (const chunk of entry.body!) {
      buffers.add(chunk.buffer);
      assert.deepEqual(chunk, bytes.subarray(offset, offset + chunk.byteLength), `bytes at ${offset}`);
      offset += chunk.byteLength;
      pool.release(chunk);
    }
    assert.equal(offset, bytes.byteLength);
    assert.equal(buffers.size, 1);

    // Without the pool every read gets fresh memory.
    const plain = await firstFile(directory);
    const fresh = new Set<ArrayBufferLike>();
    for await (const chunk of plain.body!) fresh.add(chunk.buffer);
    assert.equal(fresh.size, 9);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});

test("adoptPool refuses a body that is locked (a tee, a reader) and a body it did not create", async () => {
  const directory = await mkdtemp(join(tmpdir(), "agentcell-read-buffers-"));
  try {
    await writeFile(join(directory, "a.txt"), "abc");
    const pool = new ReadBufferPool();
    const teed = await firstFile(directory);
    const [left, right] = teed.body!.tee();
    assert.equal(adoptPool(teed.body!, pool), false);
    assert.equal(adoptPool(left, pool), false);
    await Promise.all([new Response(left).text(), new Response(right).text()]);
    assert.equal(adoptPool(new Blob(["abc"]).stream(), pool), false);
    const once = await firstFile(directory);
    assert.equal(adoptPool(once.body!, pool), true);
    assert.equal(adoptPool(once.body!, pool), false, "a body is adopted once");
    await once.body!.cancel();
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});
