/**
 * The runtime-neutral file transfer contract: importing a tree of regular files and
 * directories into a sandbox before its process runs, and exporting a selected part of its
 * workspace after compute stopped. Entries travel as Web Streams; totals, quotas and
 * deadlines are explicit.
 *
 * Units: `bytes` counts regular-file content (the sum of entry sizes), never archive framing;
 * `files` counts entries of either type (regular files and directories). Both are JavaScript
 * numbers (safe integers up to 2^53 − 1, about 9 PB), not `bigint`.
 *
 * @module
 */
import { MAX_ENTRY_SIZE } from "../tar/limits.ts";
import type { SandboxError } from "./errors.ts";

/**
 * Largest size of one regular file that a transfer carries, in bytes: 8 GiB − 1
 * (8,589,934,591), the largest 11-digit octal ustar size field. Base-256 sizes and PAX `size`
 * records are not produced or accepted; a larger file is refused with
 * `SandboxUnsupportedError` (`unsupported`). This is a format boundary, separate from quotas.
 *
 * @example
 * ```ts
 * import { MAX_TRANSFER_FILE_BYTES } from "./transfer.ts";
 *
 * console.log(MAX_TRANSFER_FILE_BYTES === 8 * 1024 ** 3 - 1); // true
 * ```
 */
export const MAX_TRANSFER_FILE_BYTES: number = MAX_ENTRY_SIZE;

/**
 * Optional logical limits of one transfer. They bound what one import or export moves; they
 * are not a disk quota (the guest can still fill the workspace volume itself).
 *
 * @example
 * ```ts
 * import type { SandboxTransferQuota } from "./transfer.ts";
 *
 * const quota: SandboxTransferQuota = { bytes: 64 * 1024 * 1024, files: 10_000 };
 * ```
 */
export interface SandboxTransferQuota {
  /**
   * Most regular-file content bytes (the sum of entry sizes), a non-negative safe integer.
   * Checked from each entry's declared size before the entry moves, so the limit is never
   * exceeded, not even by part of a file.
   *
   * @default {undefined} unlimited
   */
  readonly bytes?: number;
  /**
   * Most entries, regular files and directories alike (a non-negative safe integer);
   * checked before each entry moves.
   *
   * @default {undefined} unlimited
   */
  readonly files?: number;
}

/**
 * Counts of a transfer so far (for `onProgress`) or in total (the import receipt).
 *
 * @example
 * ```ts
 * import type { SandboxTransferProgress } from "./transfer.ts";
 *
 * const report = (progress: SandboxTransferProgress) => console.log(`${progress.files} entries, ${progress.bytes} bytes`);
 * report({ files: 2, bytes: 11 });
 * ```
 */
export interface SandboxTransferProgress {
  /** Entries (regular files and directories) moved or started. */
  readonly files: number;
  /** Regular-file content bytes moved, in bytes. */
  readonly bytes: number;
}

/**
 * What a successful import moved: every entry sent (directories the backend added for
 * missing parents included) and the content bytes.
 *
 * @example
 * ```ts
 * import type { SandboxTransferReceipt } from "./transfer.ts";
 *
 * const receipt: SandboxTransferReceipt = { files: 3, bytes: 1024 };
 * console.log(receipt.bytes); // 1024
 * ```
 */
export interface SandboxTransferReceipt {
  /** Entries written, regular files and directories. */
  readonly files: number;
  /** Regular-file content bytes written, in bytes. */
  readonly bytes: number;
}

/**
 * Options shared by imports and exports. Nothing here has a default bound: a transfer without
 * `deadlineAt` and `quota` runs as long and as large as its source.
 *
 * @example
 * ```ts
 * import type { SandboxTransferOptions } from "./transfer.ts";
 *
 * const options: SandboxTransferOptions = {
 *   deadlineAt: Date.now() + 60_000,
 *   quota: { bytes: 1024 ** 3, files: 50_000 },
 *   signal: AbortSignal.timeout(120_000),
 *   onProgress: ({ files, bytes }) => console.log(files, bytes),
 * };
 * ```
 */
export interface SandboxTransferOptions {
  /**
   * Wall-clock deadline in milliseconds since the Unix epoch (as `Date.now()`). When it
   * passes, the transfer fails with `SandboxDeadlineError` (`deadline`); a value already in
   * the past fails at once.
   *
   * @default {undefined} no deadline
   */
  readonly deadlineAt?: number;
  /**
   * Logical limits; exceeding one fails with `SandboxQuotaError` (`quota`).
   *
   * @default {undefined} unlimited
   */
  readonly quota?: SandboxTransferQuota;
  /**
   * Cancels the transfer: it fails with `SandboxAbortedError` (`aborted`), `cause` the
   * signal's reason.
   *
   * @default {undefined} no cancellation
   */
  readonly signal?: AbortSignal;
  /**
   * Called synchronously after each entry starts and after each chunk of content moves
   * (exports: chunks of at most 64 KiB; imports: the chunks of the caller's bodies), with
   * the running totals. Keep it cheap. An exception thrown from it fails the transfer with
   * `SandboxAbortedError` whose `cause` is the exception.
   *
   * @default {undefined} no callback
   */
  readonly onProgress?: (progress: SandboxTransferProgress) => void;
}

/**
 * Options of an import.
 *
 * @example
 * ```ts
 * import type { SandboxImportOptions } from "./transfer.ts";
 *
 * const options: SandboxImportOptions = { quota: { files: 1_000 } };
 * ```
 */
export type SandboxImportOptions = SandboxTransferOptions;

/**
 * Options of an export.
 *
 * @example
 * ```ts
 * import type { SandboxExportOptions } from "./transfer.ts";
 *
 * const options: SandboxExportOptions = { quota: { bytes: 2 * 1024 ** 3 }, maxInMemoryPaths: 100_000 };
 * ```
 */
export interface SandboxExportOptions extends SandboxTransferOptions {
  /**
   * Most paths kept in memory for the duplicate and file/directory conflict checks of the
   * archive before sorted runs spill to the backend's spill directory (1 … 2^53 − 1). Lower
   * it to bound memory further; spill files are removed when the export ends however it
   * ends.
   *
   * @default {65536}
   */
  readonly maxInMemoryPaths?: number;
}

/**
 * One regular file, directory or symbolic link to import. Ownership is not part of it: the backend writes
 * every entry as the sandbox user so the non-root process can use it.
 *
 * `TarEntry` values from `readTar` and {@linkcode SandboxExportEntry} values do not fit this
 * shape as they are: their directories carry an (empty, closed) `body`, which an import
 * rejects, and an export's paths are relative to the workspace (`work/…`), an import's to
 * the import root (for the Docker backend `/workspace/work`). To import exported entries,
 * strip the selection's prefix (`work/`) from each path, drop the entry equal to it, and give
 * directories no body (cancel it); `uid` and `gid` are ignored.
 *
 * @example
 * ```ts
 * import type { SandboxImportEntry } from "./transfer.ts";
 *
 * const bytes = new TextEncoder().encode("console.log('hi');\n");
 * const entries: SandboxImportEntry[] = [
 *   { path: "src", type: "directory", mode: 0o755, size: 0 },
 *   { path: "src/main.js", type: "file", mode: 0o644, size: bytes.length, body: new Blob([bytes]).stream() },
 * ];
 * console.log(entries.length); // 2
 * ```
 */
export interface SandboxImportEntry {
  /**
   * Canonical relative path below the import root (see `parseSandboxRelativePath`): no
   * leading or trailing `/`, no empty, `.` or `..` segment, no NUL, backslash or control
   * character, at most 4096 bytes of UTF-8.
   */
  readonly path: string;
  /**
   * `"file"` (a regular file), `"directory"` or `"symlink"` (a symbolic link to `target`,
   * size 0, no body).
   */
  readonly type: "file" | "directory" | "symlink";
  /**
   * A symlink's target, as the link will hold it: a relative `/`-separated path (leading
   * `..` segments allowed, no empty or `.` segment, no NUL, backslash or control character,
   * at most 4096 bytes of UTF-8) that, resolved from the link's own directory, names an entry
   * inside the import root other than the root itself — never an absolute path and never a
   * path leaving the imported tree. Only symlinks take one. A link's target is not checked
   * to exist (`importDirectory` checks it on the host).
   *
   * @default {undefined}
   */
  readonly target?: string;
  /** Permission bits, 0 … 0o7777 (setuid, setgid and sticky included; ignored for a symlink). */
  readonly mode: number;
  /**
   * Modification time in whole seconds since the epoch, 0 … 8,589,934,591.
   *
   * @default the time the import started
   */
  readonly mtime?: number;
  /**
   * Exact content length in bytes, 0 … 8 GiB − 1 ({@linkcode MAX_TRANSFER_FILE_BYTES});
   * 0 for directories.
   */
  readonly size: number;
  /**
   * The file's bytes, exactly `size` of them; may be omitted when `size` is 0. Directories
   * take none. The import reads it to its end, or cancels it when the import fails first.
   *
   * @default {undefined}
   */
  readonly body?: ReadableStream<Uint8Array>;
}

/**
 * Which part of the workspace to export. Paths are relative to the workspace root (for the
 * Docker backend `/workspace`, whose writable part is `work/`), canonical (see
 * `parseSandboxRelativePath`) and are never resolved through symbolic links.
 *
 * - `{ kind: "workspace" }`: the whole workspace; entries are workspace-relative
 *   (`work`, `work/…`).
 * - `{ kind: "file", path }`: exactly one regular file.
 * - `{ kind: "subtree", path }`: one real directory and everything below it, with
 *   workspace-relative paths (the directory itself first).
 *
 * @example
 * ```ts
 * import type { SandboxExportSelection } from "./transfer.ts";
 *
 * const artifacts: SandboxExportSelection = { kind: "subtree", path: "work/artifacts" };
 * const report: SandboxExportSelection = { kind: "file", path: "work/artifacts/report.json" };
 * console.log(artifacts.kind, report.kind);
 * ```
 */
export type SandboxExportSelection =
  | { readonly kind: "workspace" }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "subtree"; readonly path: string };

/**
 * One exported regular file or directory.
 *
 * Provisional: an entry, its bytes and the totals handed out so far count only once the
 * entry stream closes without error (a later byte of the archive can still make the export
 * fail, and duplicate checks past the in-memory bound run at its end).
 *
 * Not a {@linkcode SandboxImportEntry} as it is: see there for the conversion (paths relative
 * to the import root, no directory body).
 *
 * @example
 * ```ts
 * import type { SandboxExportEntry } from "./transfer.ts";
 *
 * async function sizes(entries: ReadableStream<SandboxExportEntry>): Promise<Map<string, number>> {
 *   const result = new Map<string, number>();
 *   for await (const entry of entries) {
 *     let bytes = 0;
 *     for await (const chunk of entry.body) bytes += chunk.length;
 *     result.set(entry.path, bytes);
 *   }
 *   return result; // complete: the stream closed without error
 * }
 * ```
 */
export interface SandboxExportEntry {
  /** Workspace-relative canonical path, without a trailing `/`. */
  readonly path: string;
  /** `"file"` (a regular file) or `"directory"`. */
  readonly type: "file" | "directory";
  /** Permission bits, masked with `0o7777`. */
  readonly mode: number;
  /** Modification time in seconds since the epoch. */
  readonly mtime: number;
  /** Content length in bytes (at most 8 GiB − 1); 0 for directories. */
  readonly size: number;
  /** Owner user ID inside the sandbox. */
  readonly uid: number;
  /** Owner group ID inside the sandbox. */
  readonly gid: number;
  /**
   * The content, in chunks of at most 64 KiB; empty and closed for directories. Read it to
   * its end or cancel it before asking for the next entry: asking earlier skips the rest and
   * errors this stream with `SandboxStateError` (`invalid_state`). It errors with the
   * export's error when the export fails while it is read.
   */
  readonly body: ReadableStream<Uint8Array>;
}

/**
 * What a failed import may have left behind. Imports are not atomic: the Engine writes each
 * entry as it arrives, so the first `entriesSent` entries (in source order, directories the
 * backend added for missing parents included) may be in the sandbox — the last of them
 * possibly truncated and, for the Docker backend, owned by root — and nothing after them is.
 * The safe recovery is to destroy the sandbox and start a fresh one.
 *
 * @example
 * ```ts
 * import type { SandboxPartialImport } from "./transfer.ts";
 *
 * const partial: SandboxPartialImport = { entriesSent: 0, bytesSent: 0, lastPathSent: undefined };
 * console.log(partial.entriesSent === 0 ? "nothing landed" : `up to ${partial.lastPathSent} may have landed`);
 * ```
 */
export interface SandboxPartialImport {
  /** Entries whose header left for the Engine; `0` means the sandbox is unchanged. */
  readonly entriesSent: number;
  /** Content bytes that left for the Engine, in bytes. */
  readonly bytesSent: number;
  /** Path of the last entry sent (the one possibly incomplete), or `undefined` when none. */
  readonly lastPathSent: string | undefined;
}

/**
 * A rejected import: any {@linkcode SandboxError} subclass (its `code` says why) that also
 * carries what may have landed.
 *
 * @example
 * ```ts
 * import type { SandboxImportFailure } from "./transfer.ts";
 *
 * function describe(failure: SandboxImportFailure): string {
 *   return `${failure.code}: ${failure.partialImport.entriesSent} entries may have landed`;
 * }
 * ```
 */
export type SandboxImportFailure = SandboxError & { readonly partialImport: SandboxPartialImport };

/**
 * What a failed import may have left behind, read from the error it rejected with.
 *
 * @param error The rejection reason of `importTree`.
 * @returns The partial-import record, or `undefined` for any other value.
 *
 * @example
 * ```ts
 * import { partialImportOf } from "./transfer.ts";
 *
 * try {
 *   throw new Error("not from an import");
 * } catch (error) {
 *   console.log(partialImportOf(error)); // undefined
 * }
 * ```
 */
export function partialImportOf(error: unknown): SandboxPartialImport | undefined {
  if (typeof error !== "object" || error === null || !(error instanceof Error)) return undefined;
  const partial = (error as { partialImport?: unknown }).partialImport;
  if (typeof partial !== "object" || partial === null) return undefined;
  const { entriesSent, bytesSent, lastPathSent } = partial as Record<string, unknown>;
  if (typeof entriesSent !== "number" || typeof bytesSent !== "number") return undefined;
  if (lastPathSent !== undefined && typeof lastPathSent !== "string") return undefined;
  return { entriesSent, bytesSent, lastPathSent };
}

/**
 * Attaches a partial-import record to an import's error (as the read-only, enumerable
 * property `partialImport`) and returns it. For backends.
 *
 * @param error The error the import rejects with.
 * @param partial What may have landed.
 * @returns `error`, now a {@linkcode SandboxImportFailure}.
 *
 * @example
 * ```ts
 * import { SandboxQuotaError } from "./errors.ts";
 * import { markPartialImport, partialImportOf } from "./transfer.ts";
 *
 * const error = markPartialImport(new SandboxQuotaError("Cannot import files: over quota"), {
 *   entriesSent: 2,
 *   bytesSent: 10,
 *   lastPathSent: "b.txt",
 * });
 * console.log(partialImportOf(error)?.entriesSent); // 2
 * ```
 */
export function markPartialImport(error: SandboxError, partial: SandboxPartialImport): SandboxImportFailure {
  if (partialImportOf(error) === undefined) {
    Object.defineProperty(error, "partialImport", {
      value: Object.freeze({ ...partial }),
      enumerable: true,
      writable: false,
      configurable: false,
    });
  }
  return error as SandboxImportFailure;
}

/**
 * The file transfer operations of a sandbox.
 *
 * @example
 * ```ts
 * import type { SandboxFileTransfers } from "./transfer.ts";
 *
 * async function copyArtifacts(sandbox: SandboxFileTransfers): Promise<number> {
 *   const entries = await sandbox.exportTree({ kind: "subtree", path: "work/artifacts" });
 *   let files = 0;
 *   for await (const entry of entries) {
 *     await entry.body.cancel();
 *     files += 1;
 *   }
 *   return files;
 * }
 * ```
 */
export interface SandboxFileTransfers {
  /**
   * Writes entries into the sandbox's writable work directory before its process is
   * reserved.
   *
   * @param source The entries, in order; parents may come implicitly.
   * @param options Deadline, quota, signal and progress.
   * @returns What was written.
   * @throws {SandboxImportFailure} For every failure after validation began; see the
   *   backend for codes.
   */
  importTree(
    source: AsyncIterable<SandboxImportEntry> | Iterable<SandboxImportEntry>,
    options?: SandboxImportOptions,
  ): Promise<SandboxTransferReceipt>;
  /**
   * Streams a selected part of the workspace after compute stopped.
   *
   * @param selection What to export.
   * @param options Deadline, quota, signal, progress and the in-memory path bound.
   * @returns The entries; provisional until the stream closes without error.
   */
  exportTree(selection: SandboxExportSelection, options?: SandboxExportOptions): Promise<ReadableStream<SandboxExportEntry>>;
}
