/**
 * Files while compute runs: `writeFile` and `readFile` go through the guest (a fixed, minimal
 * writer or reader that runs as the sandbox user), so every path is resolved inside the
 * guest's own view, never on the host. Paths are canonical and relative to the workspace
 * (for the Docker backend `/workspace`; its writable part is `work/`).
 *
 * @module
 */
import { z } from "zod";
import { SandboxConfigurationError } from "./errors.ts";
import { parseSandboxRelativePath } from "./paths.ts";
import type { SandboxTransferOptions, SandboxTransferReceipt } from "./transfer.ts";
import { normalizeTransferOptions, type NormalizedTransferOptions } from "./transfer_input.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";

/**
 * Default of {@linkcode SandboxReadFileOptions.maxBytes}, in bytes: 16 MiB.
 */
export const DEFAULT_READ_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Largest {@linkcode SandboxReadFileOptions.maxBytes}, in bytes: 1 GiB (the file is returned
 * in memory; export larger files with `exportTree` after `stop()`).
 */
export const MAX_READ_FILE_BYTES = 1024 * 1024 * 1024;

/**
 * Options of `writeFile`: the transfer options (`deadlineAt`, `quota`, `signal`,
 * `onProgress`; the file counts as one entry of `data`'s size) and the file's mode.
 *
 * @example
 * ```ts
 * import type { SandboxWriteFileOptions } from "./guest_files.ts";
 *
 * const options: SandboxWriteFileOptions = { mode: 0o755, deadlineAt: Date.now() + 10_000 };
 * ```
 */
export interface SandboxWriteFileOptions extends SandboxTransferOptions {
  /**
   * Wall-clock deadline in milliseconds since the Unix epoch (as `Date.now()`). When it
   * passes, the call fails with `SandboxDeadlineError` (`deadline`), the file is unchanged and
   * the writer in the guest is ended; a value already in the past fails at once.
   *
   * @default {undefined} the backend's bound: for the Docker backend, `policy.deadlines.guestFileMs` (60 s) from the call
   */
  readonly deadlineAt?: number;
  /**
   * Permission bits of the file, 0 … 0o7777.
   *
   * @default {0o644}
   */
  readonly mode?: number;
}

/**
 * Options of `readFile`: `deadlineAt`, `signal` and `onProgress` as for transfers, and the
 * size bound.
 *
 * @example
 * ```ts
 * import type { SandboxReadFileOptions } from "./guest_files.ts";
 *
 * const options: SandboxReadFileOptions = { maxBytes: 1024 * 1024, signal: AbortSignal.timeout(5_000) };
 * ```
 */
export interface SandboxReadFileOptions extends Omit<SandboxTransferOptions, "quota"> {
  /**
   * Wall-clock deadline in milliseconds since the Unix epoch (as `Date.now()`). When it
   * passes, the call fails with `SandboxDeadlineError` (`deadline`) and the reader in the
   * guest is ended; a value already in the past fails at once.
   *
   * @default {undefined} the backend's bound: for the Docker backend, `policy.deadlines.guestFileMs` (60 s) from the call
   */
  readonly deadlineAt?: number;
  /**
   * Most bytes the file may hold, 0 … 1 GiB; a larger file fails with `SandboxQuotaError`
   * (`quota`) after at most `maxBytes + 1` bytes left the guest.
   *
   * @default {16777216} 16 MiB
   */
  readonly maxBytes?: number;
}

/**
 * Writing and reading single files of a running sandbox, through the guest.
 *
 * @example
 * ```ts
 * import type { SandboxGuestFiles } from "./guest_files.ts";
 *
 * async function roundTrip(sandbox: SandboxGuestFiles): Promise<string> {
 *   await sandbox.writeFile("work/note.txt", "hello\n");
 *   return new TextDecoder().decode(await sandbox.readFile("work/note.txt"));
 * }
 * ```
 */
export interface SandboxGuestFiles {
  /**
   * Writes one regular file (replacing it atomically), as the sandbox user, while compute runs.
   *
   * @param path Canonical path relative to the workspace.
   * @param data The content.
   * @param options Mode, deadline, quota, signal, progress.
   * @returns `{ files: 1, bytes }`.
   */
  writeFile(path: string, data: Uint8Array | string | Blob, options?: SandboxWriteFileOptions): Promise<SandboxTransferReceipt>;
  /**
   * Reads one regular file as the sandbox user while compute runs.
   *
   * @param path Canonical path relative to the workspace.
   * @param options Size bound, deadline, signal, progress.
   * @returns The file's bytes.
   */
  readFile(path: string, options?: SandboxReadFileOptions): Promise<Uint8Array>;
}

/** `writeFile`'s arguments after validation. */
export interface NormalizedWriteFile {
  /** Canonical workspace-relative path. */
  readonly path: string;
  /** The content as a `Blob` (a string is UTF-8 encoded, bytes are copied). */
  readonly data: Blob;
  /** Permission bits. */
  readonly mode: number;
  /** The transfer options. */
  readonly options: NormalizedTransferOptions;
}

/** `readFile`'s arguments after validation. */
export interface NormalizedReadFile {
  /** Canonical workspace-relative path. */
  readonly path: string;
  /** Most bytes, bytes. */
  readonly maxBytes: number;
  /**
   * Where `maxBytes` came from when the caller did not set it and a backend default is
   * below {@linkcode DEFAULT_READ_FILE_MAX_BYTES} (e.g. `config.defaultExportQuota.bytes`),
   * for the quota error's fix.
   */
  readonly maxBytesDefault?: string;
  /** The transfer options (no quota). */
  readonly options: NormalizedTransferOptions;
}

function checkedPath(path: unknown, action: string): string {
  try {
    return parseSandboxRelativePath(path as string, "path");
  } catch (error) {
    (error as Error).message = (error as Error).message.replace(/^Cannot parse sandbox path:/u, `Cannot ${action}:`);
    throw error;
  }
}

const modeSchema = z.number({ error: expect("must be an integer from 0 to 0o7777 (permission bits)") })
  .int({ error: "must be an integer from 0 to 0o7777 (permission bits)" })
  .min(0, { error: "must be an integer from 0 to 0o7777 (permission bits)" })
  .max(0o7777, { error: "must be an integer from 0 to 0o7777 (permission bits)" });

const readBound = `must be an integer from 0 to ${MAX_READ_FILE_BYTES} bytes`;
const maxBytesSchema = z.number({ error: expect(readBound) }).int({ error: readBound }).min(0, { error: readBound })
  .max(MAX_READ_FILE_BYTES, { error: readBound });

/**
 * Validates `writeFile`'s arguments.
 *
 * @throws {SandboxConfigurationError} naming `path`, `data` or the option
 */
export function normalizeWriteFile(path: string, data: unknown, options: SandboxWriteFileOptions | undefined): NormalizedWriteFile {
  const action = "write file";
  const checked = checkedPath(path, action);
  let blob: Blob;
  if (typeof data === "string") blob = new Blob([data]);
  else if (data instanceof Uint8Array) blob = new Blob([data.slice()]);
  else if (data instanceof Blob) blob = data;
  else throw new SandboxConfigurationError(`Cannot ${action}: data must be a Uint8Array, a string or a Blob`);
  const { mode, ...transfer } = (options ?? {}) as SandboxWriteFileOptions;
  return Object.freeze({
    path: checked,
    data: blob,
    mode: mode === undefined ? 0o644 : parseConfiguration(modeSchema, mode, action, "options.mode"),
    options: normalizeTransferOptions(transfer, action, false),
  });
}

/**
 * Validates `readFile`'s arguments.
 *
 * @throws {SandboxConfigurationError} naming `path` or the option
 */
export function normalizeReadFile(path: string, options: SandboxReadFileOptions | undefined): NormalizedReadFile {
  const action = "read file";
  const checked = checkedPath(path, action);
  const { maxBytes, ...transfer } = (options ?? {}) as SandboxReadFileOptions & { quota?: unknown };
  if (transfer.quota !== undefined) {
    throw new SandboxConfigurationError(`Cannot ${action}: options.quota is not a known field; bound the size with options.maxBytes`);
  }
  return Object.freeze({
    path: checked,
    maxBytes: maxBytes === undefined ? DEFAULT_READ_FILE_MAX_BYTES : parseConfiguration(maxBytesSchema, maxBytes, action, "options.maxBytes"),
    options: normalizeTransferOptions(transfer, action, false),
  });
}
