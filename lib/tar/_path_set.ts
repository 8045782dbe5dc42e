// The set of entry paths seen in an archive, with duplicate and ancestor-conflict checks.
// Up to a bound it lives in memory and conflicts are reported at once; past the bound it
// spills sorted runs to a caller-given directory and finds conflicts between runs by an
// external k-way merge at the end of the archive (finish()).
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import { readError } from "./_fail.ts";
import { arraySource, compareRecords, keyOfPath, mergeSources, SortedChecker } from "./_merge.ts";
import { utf8ByteLength } from "../streams/utf8.ts";
import { type PathRecord, type RecordSource, RunReader, writeRecords } from "./_spill_run.ts";
import { TarError } from "./error.ts";
import { quotePath } from "./quote_path.ts";

/** Bounds of a path set; see `ReadTarOptions` for the documented meaning. */
export interface PathSetOptions {
  readonly spillDirectory?: string | undefined;
  readonly maxInMemoryPaths: number;
  readonly maxInMemoryPathBytes: number;
  /** Runs merged at once. */
  readonly fanIn?: number;
}

/**
 * A path in memory: one node per segment, so that adding a path costs time linear in its
 * length however deep it is. `type` is undefined for a directory only implied by a
 * descendant; explicit entries keep their full path for spilling.
 */
interface Node {
  type: "file" | "directory" | undefined;
  path: string;
  offset: number;
  children: Map<string, Node> | undefined;
}

function emptyRoot(): Node {
  return { type: "directory", path: "", offset: 0, children: undefined };
}

/** Paths of one archive: explicit files and directories, and implicit ancestor directories. */
export class PathSet {
  #options: PathSetOptions;
  #root: Node = emptyRoot();
  /** Nodes in memory. */
  #count = 0;
  /** UTF-8 bytes held: the full path of each explicit node, the segment of each implicit one. */
  #bytes = 0;
  #runs: string[] = [];
  #created = new Set<string>();
  #queue: Promise<unknown> = Promise.resolve();
  #disposed = false;

  constructor(options: PathSetOptions) {
    this.#options = options;
  }

  /** Runs `task` after every earlier queued task (spill, finish, dispose). */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Adds a validated path (no trailing `/`) of an entry whose header is at `offset`. After
   * an error the set is only fit for `dispose`.
   *
   * @throws {TarError} `duplicate_path`, `path_conflict` (found in memory), `path_limit`
   * (bound exceeded without a spill directory), `spill_io`.
   */
  async add(path: string, type: "file" | "directory", offset: number): Promise<void> {
    const at = { offset, path };
    const segments = path.split("/");
    let node = this.#root;
    for (let i = 0; i < segments.length - 1; i++) {
      let child = node.children?.get(segments[i]);
      if (child === undefined) {
        child = { type: undefined, path: "", offset, children: undefined };
        (node.children ??= new Map()).set(segments[i], child);
        this.#count++;
        this.#bytes += utf8ByteLength(segments[i]);
      } else if (child.type === "file") {
        throw readError("path_conflict", `ancestor ${quotePath(segments.slice(0, i + 1).join("/"))} is a file`, at);
      }
      node = child;
    }
    const last = segments[segments.length - 1];
    const existing = node.children?.get(last);
    if (existing === undefined) {
      (node.children ??= new Map()).set(last, { type, path, offset, children: undefined });
      this.#count++;
    } else if (existing.type === undefined && type === "directory") {
      existing.type = type;
      existing.path = path;
      existing.offset = offset;
    } else if (existing.type === type) {
      throw readError("duplicate_path", "duplicate path", at);
    } else if (existing.type === undefined) {
      throw readError("path_conflict", "file at a path an earlier entry needs as a directory", at);
    } else {
      throw readError("path_conflict", "path is both a file and a directory", at);
    }
    this.#bytes += utf8ByteLength(path);
    if (this.#count <= this.#options.maxInMemoryPaths && this.#bytes <= this.#options.maxInMemoryPathBytes) return;
    if (this.#options.spillDirectory === undefined) {
      throw readError(
        "path_limit",
        `more than ${this.#options.maxInMemoryPaths} paths or ${this.#options.maxInMemoryPathBytes} path bytes and no spill directory`,
        at,
      );
    }
    await this.#serial(() => this.#spill());
  }

  /** The explicit in-memory entries as sorted records; empties memory. */
  #drainMemory(): PathRecord[] {
    const records: PathRecord[] = [];
    const stack = [this.#root];
    for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
      for (const child of node.children?.values() ?? []) {
        if (child.type !== undefined) records.push({ key: keyOfPath(child.path), type: child.type, offset: child.offset });
        if (child.children !== undefined) stack.push(child);
      }
    }
    this.#root = emptyRoot();
    this.#count = 0;
    this.#bytes = 0;
    return records.sort(compareRecords);
  }

  /** Creates a run file with an exclusive random name and fills it from `records`. */
  async #writeRun(records: AsyncIterable<PathRecord> | Iterable<PathRecord>): Promise<string> {
    if (this.#disposed) throw new Error("path set is disposed");
    const path = join(this.#options.spillDirectory!, `agentcell-tar-paths-${crypto.randomUUID()}.run`);
    const handle = await open(path, "wx", 0o600);
    this.#created.add(path);
    try {
      await writeRecords(handle, records);
    } finally {
      await handle.close();
    }
    return path;
  }

  async #spill(): Promise<void> {
    try {
      this.#runs.push(await this.#writeRun(this.#drainMemory()));
    } catch (cause) {
      throw spillError(cause);
    }
  }

  async #remove(path: string): Promise<void> {
    await rm(path, { force: true });
    this.#created.delete(path);
  }

  /**
   * Completes the checks: merges the spilled runs with what is in memory. Removes every
   * spill file, whatever the outcome.
   *
   * @throws {TarError} `duplicate_path`, `path_conflict` between runs, `spill_io`.
   */
  finish(): Promise<void> {
    return this.#serial(async () => {
      try {
        await this.#mergeAll();
      } catch (cause) {
        throw cause instanceof TarError ? cause : spillError(cause);
      } finally {
        await this.#removeAll();
      }
    });
  }

  async #mergeAll(): Promise<void> {
    if (this.#runs.length === 0) return;
    const fanIn = Math.max(2, this.#options.fanIn ?? 16);
    const checker = () => new SortedChecker();
    // Merge runs in groups until the rest and memory fit in one pass.
    while (this.#runs.length + 1 > fanIn) {
      const group = this.#runs.splice(0, fanIn);
      const readers = await openRuns(group);
      try {
        this.#runs.push(await this.#writeRun(mergeSources(readers, checker())));
      } finally {
        await closeAll(readers);
      }
      for (const run of group) await this.#remove(run);
    }
    const readers = await openRuns(this.#runs);
    try {
      const sources = [...readers, arraySource(this.#drainMemory())];
      for await (const _ of mergeSources(sources, checker())) { /* checked on the way */ }
    } finally {
      await closeAll(readers);
    }
  }

  async #removeAll(): Promise<void> {
    this.#disposed = true;
    this.#root = emptyRoot();
    this.#runs = [];
    const errors: unknown[] = [];
    for (const path of [...this.#created]) {
      await this.#remove(path).catch((error) => errors.push(error));
    }
    if (errors.length > 0) throw spillError(errors[0]);
  }

  /**
   * Removes every spill file and forgets all paths, after any spill in progress. Safe to
   * call more than once.
   *
   * @throws {TarError} `spill_io` when a spill file cannot be removed.
   */
  dispose(): Promise<void> {
    return this.#serial(() => this.#removeAll());
  }
}

/** Opens run readers, closing the opened ones if one fails. */
async function openRuns(paths: readonly string[]): Promise<RecordSource[]> {
  const readers: RecordSource[] = [];
  try {
    for (const path of paths) readers.push(await RunReader.open(path));
  } catch (error) {
    await closeAll(readers);
    throw error;
  }
  return readers;
}

/** Closes every source, ignoring failures. */
async function closeAll(sources: readonly RecordSource[]): Promise<void> {
  await Promise.allSettled(sources.map((source) => source.close()));
}

function spillError(cause: unknown): TarError {
  // A runtime's own message (a file-system error); our own errors never reach here.
  const reason = cause instanceof Error ? cause.message : String(cause);
  return readError("spill_io", `spill file failed: ${reason}`, { cause });
}
