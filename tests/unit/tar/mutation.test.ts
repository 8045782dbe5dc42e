// Property: any mutation of a valid archive either reads or fails with a TarError, and
// never hangs.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { TarError } from "../../../lib/tar/error.ts";
import { writeTar } from "../../../lib/tar/write_tar.ts";
import { concat, readAll, streamOf } from "./_build.ts";
import { plannedTree, writerEntries } from "./_trees.ts";

/** Where a mutation lands: a fraction of the length, optionally snapped into a header block. */
interface Position {
  fraction: number;
  header: boolean;
  within: number;
}

type Mutation =
  | { kind: "flip"; position: Position; bit: number }
  | { kind: "overwrite"; position: Position; bytes: Uint8Array }
  | { kind: "truncate"; position: Position }
  | { kind: "extend"; bytes: Uint8Array }
  | { kind: "insert"; position: Position; bytes: Uint8Array }
  | { kind: "delete"; position: Position; count: number }
  | { kind: "field"; position: Position; bytes: Uint8Array };

const position: fc.Arbitrary<Position> = fc.record({
  fraction: fc.double({ min: 0, max: 1, noNaN: true }),
  header: fc.boolean(),
  within: fc.nat(511),
});
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), position, bit: fc.nat(7) }),
  fc.record({ kind: fc.constant("overwrite" as const), position, bytes: fc.uint8Array({ minLength: 1, maxLength: 12 }) }),
  fc.record({ kind: fc.constant("truncate" as const), position }),
  fc.record({
    kind: fc.constant("extend" as const),
    bytes: fc.oneof(fc.uint8Array({ maxLength: 600 }), fc.constant(new Uint8Array(9000))),
  }),
  fc.record({ kind: fc.constant("insert" as const), position, bytes: fc.uint8Array({ minLength: 1, maxLength: 600 }) }),
  fc.record({ kind: fc.constant("delete" as const), position, count: fc.integer({ min: 1, max: 600 }) }),
  fc.record({
    kind: fc.constant("field" as const),
    position: position.map((p) => ({ ...p, header: true })),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 12 }),
  }),
);

/** Recomputes the checksum of the block holding `at`, so that deeper checks are reached. */
function rechecksum(bytes: Uint8Array, at: number): void {
  const start = at - (at % 512);
  if (start + 512 > bytes.length) return;
  const block = bytes.subarray(start, start + 512);
  block.fill(0x20, 148, 156);
  const sum = block.reduce((total, byte) => total + byte, 0);
  block.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0")), 148);
  block[154] = 0;
}

function locate(length: number, { fraction, header, within }: Position): number {
  const at = Math.floor(fraction * length);
  return Math.min(length - 1, header ? at - (at % 512) + within : at);
}

function mutate(archive: Uint8Array, m: Mutation): Uint8Array {
  if (m.kind === "extend") return concat(archive, m.bytes);
  if (archive.length === 0) return archive;
  const out = archive.slice();
  const at = locate(out.length, m.position);
  switch (m.kind) {
    case "flip":
      out[at] ^= 1 << m.bit;
      return out;
    case "overwrite":
      out.set(m.bytes.subarray(0, out.length - at), at);
      return out;
    case "field":
      out.set(m.bytes.subarray(0, out.length - at), at);
      rechecksum(out, at);
      return out;
    case "truncate":
      return out.subarray(0, at);
    case "insert":
      return concat(out.subarray(0, at), m.bytes, out.subarray(at));
    case "delete":
      return concat(out.subarray(0, at), out.subarray(at + m.count));
  }
}

async function archiveOf(plan: Parameters<typeof writerEntries>[0]): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of writeTar(writerEntries(plan))) chunks.push(chunk);
  return concat(...chunks);
}

test("readTar fails only with TarError on mutated archives and never hangs", { timeout: 60_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(
      plannedTree.filter((plan) => plan.reduce((sum, entry) => sum + entry.data.length, 0) < 50_000),
      fc.array(mutation, { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 1, max: 700 }),
      async (plan, mutations, chunk) => {
        let bytes = await archiveOf(plan);
        for (const m of mutations) bytes = mutate(bytes, m);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const hang = new Promise<"hang">((resolve) => (timer = setTimeout(() => resolve("hang"), 5_000)));
        const outcome = await Promise.race([
          readAll(streamOf(bytes, chunk)).then(() => "read", (error) => error),
          hang,
        ]).finally(() => clearTimeout(timer));
        assert.notEqual(outcome, "hang", "reader did not settle");
        if (outcome !== "read") assert.ok(outcome instanceof TarError, `not a TarError: ${outcome}`);
      },
    ),
    { numRuns: 300 },
  );
});
