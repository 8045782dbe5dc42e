// The set of entry paths seen in an archive, with duplicate and ancestor-conflict checks.
// Up to a bound it lives in memory and conflicts are reported at once; past the bound it
// spills sorted runs to a caller-given directory and finds conflicts between runs by an
// external k-way merge at the end of the archive (finish()).
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import { readError } from "./_fail.ts";
import { arraySource, compareRecords, keyOfPath, mergeSources, SortedChecker } from "./_merge.ts";
import { utf8Length } from "./_path.ts";
import { type PathRecord, type RecordSource, RunReader, writeRecords } from "./_spill_run.ts";
import { TarError } from "./error.ts";

/** Bounds of a path set; see `ReadTarOptions` for the documented meaning. */
export interface PathSetOptions {
  readonly spillDirectory?: string | undefined;
  readonly maxInMemoryPaths: number;
  readonly maxInMemoryPathBytes: number;
  /** Runs merged at once. */
  readonly fanIn?: number;
}

const IMPLICIT = "implicit";
type Slot = { type: "file" | "directory"; offset: number } | typeof IMPLICIT;

/** Paths of one archive: explicit files and directories, and implicit ancestor directories. */
export class PathSet {
  #options: PathSetOptions;
  #memory = new Map<string, Slot>();
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
   * Adds a validated path (no trailing `/`) of an entry whose header is at `offset`.
   *
   * @throws {TarError} `duplicate_path`, `path_conflict` (found in memory), `path_limit`
   * (bound exceeded without a spill directory), `spill_io`.
   */
  async add(path: string, type: "file" | "directory", offset: number): Promise<void> {
    const at = { offset, path };
    const existing = this.#memory.get(path);
    if (existing !== undefined) {
      if (existing === IMPLICIT) {
        if (type === "file") throw readError("path_conflict", "file at a path an earlier entry needs as a directory", at);
      } else if (existing.type === type) {
        throw readError("duplicate_path", "duplicate path", at);
      } else {
        throw readError("path_conflict", "path is both a file and a directory", at);
      }
    }
    const missing: string[] = [];
    for (let end = path.lastIndexOf("/"); end > 0; end = path.lastIndexOf("/", end - 1)) {
      const ancestor = path.slice(0, end);
      const slot = this.#memory.get(ancestor);
      if (slot === undefined) missing.push(ancestor);
      else if (slot !== IMPLICIT && slot.type === "file") {
        throw readError("path_conflict", `ancestor '${ancestor}' is a file`, at);
      } else break;
    }
    if (existing === undefined) this.#bytes += utf8Length(path);
    this.#memory.set(path, { type, offset });
    for (const ancestor of missing) {
      this.#memory.set(ancestor, IMPLICIT);
      this.#bytes += utf8Length(ancestor);
    }
    if (this.#memory.size <= this.#options.maxInMemoryPaths && this.#bytes <= this.#options.maxInMemoryPathBytes) return;
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
    for (const [path, slot] of this.#memory) {
      if (slot !== IMPLICIT) records.push({ key: keyOfPath(path), type: slot.type, offset: slot.offset });
    }
    this.#memory.clear();
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
      const merged = await this.#writeRun(mergeSources(await openRuns(group), checker()));
      this.#runs.push(merged);
      for (const run of group) await this.#remove(run);
    }
    const sources = [...await openRuns(this.#runs), arraySource(this.#drainMemory())];
    for await (const _ of mergeSources(sources, checker())) { /* checked on the way */ }
  }

  async #removeAll(): Promise<void> {
    this.#disposed = true;
    this.#memory.clear();
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
    await Promise.allSettled(readers.map((reader) => reader.close()));
    throw error;
  }
  return readers;
}

function spillError(cause: unknown): TarError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return readError("spill_io", `spill file failed: ${reason}`, { cause });
}
