/**
 * Validation of transfer input: options, export selections and import entries. Failures are
 * `SandboxConfigurationError`s naming the field; a file above the format boundary is a
 * `SandboxUnsupportedError`.
 *
 * @module
 */
import { z } from "zod";
import { pathDefect } from "../internal/path_defects.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "./errors.ts";
import { parseSandboxRelativePath } from "./paths.ts";
import { MAX_OCTAL_11 } from "../tar/limits.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";
import {
  MAX_TRANSFER_FILE_BYTES,
  type SandboxExportSelection,
  type SandboxTransferProgress,
} from "./transfer.ts";

/** Largest `mtime` an import entry may carry: 11 octal digits of seconds. */
const MAX_MTIME = MAX_OCTAL_11;

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const importOptionsSchema = z.strictObject({
  deadlineAt: z.number({ error: expect("must be a number of milliseconds since the epoch") })
    .int({ error: "must be a whole number of milliseconds since the epoch" })
    .min(0, { error: "must not be negative" }).max(Number.MAX_SAFE_INTEGER).optional(),
  quota: z.strictObject({
    bytes: count.optional(),
    files: count.optional(),
  }).optional(),
  signal: z.instanceof(AbortSignal, { error: "must be an AbortSignal" }).optional(),
  onProgress: z.custom<(progress: SandboxTransferProgress) => void>((value) => typeof value === "function", {
    error: "must be a function",
  }).optional(),
});

const exportOptionsSchema = importOptionsSchema.extend({
  maxInMemoryPaths: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
});

/** Transfer options after validation; an absent option is `undefined`. */
export interface NormalizedTransferOptions {
  /** Deadline, milliseconds since the epoch. */
  readonly deadlineAt: number | undefined;
  /** Most content bytes and most entries. */
  readonly quota: { readonly bytes: number | undefined; readonly files: number | undefined };
  /** The caller's cancellation. */
  readonly signal: AbortSignal | undefined;
  /** The caller's progress callback. */
  readonly onProgress: ((progress: SandboxTransferProgress) => void) | undefined;
  /** Paths kept in memory before spilling (exports only). */
  readonly maxInMemoryPaths: number | undefined;
  /**
   * Where `quota.bytes` came from when the caller did not set it (a backend default such as
   * `config.defaultExportQuota.bytes`), for the quota error's fix; `undefined` when the
   * caller set it or there is none.
   */
  readonly quotaBytesDefault?: string;
  /**
   * Set when `deadlineAt` is a backend default because the caller set none: its length in
   * milliseconds and where it is configured (e.g. `policy.deadlines.guestFileMs`), for the
   * deadline error's fix; `undefined` when the caller set `deadlineAt` or there is none.
   */
  readonly deadlineDefault?: { readonly ms: number; readonly source: string };
}

/**
 * Validates import or export options.
 *
 * @param options The caller's options (`undefined` means none).
 * @param action The "<action>" of an error message.
 * @param allowPathBound Whether `maxInMemoryPaths` is allowed (exports only).
 * @returns The options with absent fields as `undefined`.
 * @throws {SandboxConfigurationError} Naming the first invalid field.
 */
export function normalizeTransferOptions(options: unknown, action: string, allowPathBound: boolean): NormalizedTransferOptions {
  const parsed: z.infer<typeof exportOptionsSchema> = allowPathBound
    ? parseConfiguration(exportOptionsSchema, options ?? {}, action, "options")
    : parseConfiguration(importOptionsSchema, options ?? {}, action, "options");
  return {
    deadlineAt: parsed.deadlineAt,
    quota: { bytes: parsed.quota?.bytes, files: parsed.quota?.files },
    signal: parsed.signal,
    onProgress: parsed.onProgress,
    maxInMemoryPaths: parsed.maxInMemoryPaths,
  };
}

const selectionSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("workspace") }),
  z.strictObject({ kind: z.literal("file"), path: z.string() }),
  z.strictObject({ kind: z.literal("subtree"), path: z.string() }),
]);

/**
 * Validates an export selection; its path must be canonical.
 *
 * @param selection The caller's selection.
 * @param action The "<action>" of an error message.
 * @returns The selection (frozen copy).
 * @throws {SandboxConfigurationError} Naming the field and the defect.
 */
export function parseExportSelection(selection: unknown, action: string): SandboxExportSelection {
  const parsed = parseConfiguration(selectionSchema, selection, action, "selection");
  if (parsed.kind === "workspace") return Object.freeze({ kind: "workspace" });
  return Object.freeze({ kind: parsed.kind, path: checkedPath(parsed.path, "selection.path", action) });
}

function checkedPath(path: string, field: string, action: string): string {
  try {
    return parseSandboxRelativePath(path, field);
  } catch (error) {
    (error as Error).message = (error as Error).message.replace(/^Cannot parse sandbox path:/u, `Cannot ${action}:`);
    throw error;
  }
}

const entrySchema = z.object({
  path: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  target: z.string().optional(),
  mode: z.number().int().min(0).max(0o7777, { error: "must be at most 0o7777 (permission bits)" }),
  mtime: z.number().int().min(0).max(MAX_MTIME, { error: `must be whole seconds from 0 to ${MAX_MTIME}` }).optional(),
  size: count,
  body: z.instanceof(ReadableStream, { error: "must be a ReadableStream" }).optional(),
});

/** An import entry after validation (see `SandboxImportEntry` for each field). */
export interface ParsedImportEntry {
  /** Canonical relative path. */
  readonly path: string;
  /** Entry type. */
  readonly type: "file" | "directory" | "symlink";
  /** A symlink's target (relative, inside the import root), else `undefined`. */
  readonly target: string | undefined;
  /** Permission bits, 0 … 0o7777. */
  readonly mode: number;
  /** Seconds since the epoch, or `undefined` for the import's time. */
  readonly mtime: number | undefined;
  /** Content bytes (0 for a directory). */
  readonly size: number;
  /** The content, when `size` > 0 or given anyway. */
  readonly body: ReadableStream<Uint8Array> | undefined;
}

/**
 * Validates one import entry.
 *
 * @param entry The caller's entry.
 * @param index Its position in the source (for the message).
 * @param action The "<action>" of an error message.
 * @returns The validated fields.
 * @throws {SandboxConfigurationError} Naming the entry and field.
 * @throws {SandboxUnsupportedError} For a size above 8 GiB − 1.
 */
export function parseImportEntry(entry: unknown, index: number, action: string): ParsedImportEntry {
  const parsed = parseConfiguration(entrySchema, entry, action, `entry[${index}]`);
  const path = checkedPath(parsed.path, `entry[${index}].path`, action);
  if (parsed.size > MAX_TRANSFER_FILE_BYTES) {
    throw new SandboxUnsupportedError(
      `Cannot ${action}: entry '${path}' is ${parsed.size} bytes; one file is at most ${MAX_TRANSFER_FILE_BYTES} bytes (8 GiB − 1, the archive format's size field)`,
    );
  }
  if (parsed.type === "directory" && (parsed.size !== 0 || parsed.body !== undefined)) {
    throw new SandboxConfigurationError(`Cannot ${action}: entry[${index}] (directory '${path}') must have size 0 and no body`);
  }
  if (parsed.type === "file" && parsed.size > 0 && parsed.body === undefined) {
    throw new SandboxConfigurationError(`Cannot ${action}: entry[${index}].body is required for a file of ${parsed.size} bytes`);
  }
  if (parsed.type === "symlink") {
    if (parsed.size !== 0 || parsed.body !== undefined) {
      throw new SandboxConfigurationError(`Cannot ${action}: entry[${index}] (symlink '${path}') must have size 0 and no body`);
    }
    const defect = parsed.target === undefined ? "is required for a symlink" : linkTargetDefect(path, parsed.target);
    if (defect !== undefined) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: entry[${index}].target of symlink '${path}' ${defect}; import only links that stay inside the imported tree ` +
          "(importDirectory: links \"skip\" drops links)",
      );
    }
  } else if (parsed.target !== undefined) {
    throw new SandboxConfigurationError(`Cannot ${action}: entry[${index}].target is only for a symlink, not a ${parsed.type}`);
  }
  return {
    path,
    type: parsed.type,
    target: parsed.target,
    mode: parsed.mode,
    mtime: parsed.mtime,
    size: parsed.size,
    body: parsed.body as ReadableStream<Uint8Array> | undefined,
  };
}

/**
 * Why a symlink at `path` (canonical, relative to the import root) may not hold `target`,
 * or `undefined` when `target` is relative and, resolved lexically from the link's
 * directory, names an entry strictly inside the root.
 *
 * @param path The link's canonical relative path.
 * @param target The link's target.
 * @returns A reason starting with "must", or `undefined`.
 */
export function linkTargetDefect(path: string, target: string): string | undefined {
  if (typeof target !== "string") return "must be a string";
  if (target.startsWith("/")) return `must be relative, not the absolute path ${JSON.stringify(target)}`;
  // Leading ".." segments are what a link inside a tree uses ("../pkg/bin/cli.js"); the
  // lexical checks of a canonical path apply to the rest.
  const segments = target.split("/");
  let ups = 0;
  while (segments[ups] === "..") ups += 1;
  const rest = segments.slice(ups).join("/");
  const defect = rest === "" ? "must name an entry below its leading '..' segments" : pathDefect(rest, false);
  if (defect !== undefined) return defect;
  const depth = path.split("/").length - 1;
  if (ups > depth) return `must not leave the imported tree (${JSON.stringify(target)} from '${path}' climbs ${ups - depth} level(s) above its root)`;
  return undefined;
}
