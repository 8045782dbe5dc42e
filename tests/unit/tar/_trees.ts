// fast-check arbitraries of valid trees, flattened to writer entries in archive order.
import fc from "fast-check";
import type { TarWriterEntry } from "../../../lib/tar/write_tar.ts";
import { streamOf } from "./_build.ts";

/** A file or directory to write, with its body bytes kept for comparison. */
export interface PlannedEntry {
  readonly path: string;
  readonly type: "file" | "directory";
  readonly mode: number;
  readonly mtime: number;
  readonly uid: number;
  readonly gid: number;
  readonly data: Uint8Array;
}

type Node =
  | { kind: "file"; mode: number; mtime: number; uid: number; gid: number; data: Uint8Array }
  | { kind: "dir"; explicit: boolean; mode: number; mtime: number; uid: number; gid: number; children: Child[] };
type Child = { name: string; node: Node };

const segment: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/), weight: 6 },
  { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }), weight: 2 },
  { arbitrary: fc.string({ unit: fc.constantFrom("l", "o", "n", "g"), minLength: 90, maxLength: 160 }), weight: 1 },
).filter((name) => name !== "." && name !== ".." && !/[/\\\0]/.test(name));

const data: fc.Arbitrary<Uint8Array> = fc.oneof(
  { arbitrary: fc.constant(new Uint8Array(0)), weight: 2 },
  { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 1500 }), weight: 6 },
  { arbitrary: fc.integer({ min: 60_000, max: 140_000 }).map((n) => new Uint8Array(n).map((_, i) => (i * 7) % 256)), weight: 1 },
);

const meta = {
  mode: fc.integer({ min: 0, max: 0o7777 }),
  mtime: fc.integer({ min: 0, max: 8 ** 11 - 1 }),
  uid: fc.integer({ min: 0, max: 0o7777777 }),
  gid: fc.integer({ min: 0, max: 0o7777777 }),
};

const { tree } = fc.letrec<{ tree: Node; file: Node; dir: Node }>((tie) => ({
  tree: fc.oneof({ depthSize: "small", withCrossShrink: true }, tie("file"), tie("dir")),
  file: fc.record({ kind: fc.constant("file" as const), data, ...meta }),
  dir: fc.record({
    kind: fc.constant("dir" as const),
    explicit: fc.boolean(),
    ...meta,
    children: fc.uniqueArray(fc.record({ name: segment, node: tie("tree") }), {
      selector: (child) => child.name,
      maxLength: 4,
    }),
  }),
}));

function flatten(children: Child[], prefix: string, out: PlannedEntry[]): void {
  for (const { name, node } of children) {
    const path = prefix + name;
    const { mode, mtime, uid, gid } = node;
    if (node.kind === "file") {
      out.push({ path, type: "file", mode, mtime, uid, gid, data: node.data });
    } else {
      if (node.explicit || node.children.length === 0) {
        out.push({ path, type: "directory", mode, mtime, uid, gid, data: new Uint8Array(0) });
      }
      flatten(node.children, `${path}/`, out);
    }
  }
}

/** Valid trees of up to a few dozen entries, in a depth-first archive order. */
export const plannedTree: fc.Arbitrary<PlannedEntry[]> = fc
  .uniqueArray(fc.record({ name: segment, node: tree }), { selector: (child) => child.name, maxLength: 5 })
  .map((children) => {
    const out: PlannedEntry[] = [];
    flatten(children, "", out);
    return out;
  });

/**
 * Writer entries for a plan, bodies streamed in `chunk`-byte pieces (at least 8 KiB pieces
 * for bodies above 8 KiB, to keep runs fast).
 */
export function writerEntries(plan: readonly PlannedEntry[], chunk = 4096): TarWriterEntry[] {
  return plan.map(({ data, ...rest }) => ({
    ...rest,
    size: data.length,
    body: rest.type === "file" ? streamOf(data, data.length > 8192 ? Math.max(8192, chunk) : Math.max(1, chunk)) : undefined,
  }));
}
