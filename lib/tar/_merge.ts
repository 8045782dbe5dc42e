// K-way merge of sorted path runs, checking duplicates and file ancestors on the way.
import { readError } from "./_fail.ts";
import type { PathRecord, RecordSource } from "./_spill_run.ts";
import { quotePath } from "./quote_path.ts";

/** The archive path of a sort key. */
export function pathOfKey(key: string): string {
  return key.replaceAll("\0", "/");
}

/** The sort key of an archive path: `/` becomes NUL, the lowest code unit. */
export function keyOfPath(path: string): string {
  return path.replaceAll("/", "\0");
}

/** Ascending comparison of two records by key. */
export function compareRecords(a: PathRecord, b: PathRecord): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * Checks records fed in ascending key order. Equal keys are duplicates (same type) or
 * conflicts (different types). Since every `P/…` key sorts directly after `P`, a file `P`
 * has a descendant exactly when the next distinct key starts with `P` + NUL.
 */
export class SortedChecker {
  #previous: PathRecord | undefined;

  /** @throws {TarError} `duplicate_path`, `path_conflict` for the later of the two entries. */
  push(record: PathRecord): void {
    const previous = this.#previous;
    this.#previous = record;
    if (previous === undefined) return;
    const later = record.offset >= previous.offset ? record : previous;
    const options = { offset: later.offset, path: pathOfKey(later.key) };
    if (previous.key === record.key) {
      if (previous.type === record.type) throw readError("duplicate_path", "duplicate path", options);
      throw readError("path_conflict", "path is both a file and a directory", options);
    }
    if (previous.type === "file" && record.key.startsWith(previous.key + "\0")) {
      throw readError("path_conflict", `path ${quotePath(pathOfKey(previous.key))} is a file and a directory`, options);
    }
  }
}

/** A record source over a sorted array. */
export function arraySource(records: readonly PathRecord[]): RecordSource {
  let index = 0;
  return {
    next: () => Promise.resolve(records[index++]),
    close: () => Promise.resolve(),
  };
}

/**
 * Merges sorted sources into one ascending sequence; every record passes `checker` before
 * it is yielded. The caller closes the sources.
 */
export async function* mergeSources(
  sources: readonly RecordSource[],
  checker: SortedChecker,
): AsyncGenerator<PathRecord> {
  // Binary min-heap of [record, source index].
  const heap: [PathRecord, number][] = [];
  const less = (i: number, j: number) => compareRecords(heap[i][0], heap[j][0]) < 0;
  const swap = (i: number, j: number) => ([heap[i], heap[j]] = [heap[j], heap[i]]);
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(i, parent)) return;
      swap(i, parent);
      i = parent;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const left = 2 * i + 1;
      let smallest = i;
      if (left < heap.length && less(left, smallest)) smallest = left;
      if (left + 1 < heap.length && less(left + 1, smallest)) smallest = left + 1;
      if (smallest === i) return;
      swap(i, smallest);
      i = smallest;
    }
  };
  for (let s = 0; s < sources.length; s++) {
    const first = await sources[s].next();
    if (first !== undefined) {
      heap.push([first, s]);
      up(heap.length - 1);
    }
  }
  while (heap.length > 0) {
    const [record, s] = heap[0];
    checker.push(record);
    yield record;
    const following = await sources[s].next();
    if (following === undefined) {
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        down(0);
      }
    } else {
      heap[0] = [following, s];
      down(0);
    }
  }
}
