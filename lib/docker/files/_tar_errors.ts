/**
 * Presenting tar reader and writer failures as sandbox errors.
 *
 * Export (reading the Engine's archive):
 * - content this backend does not export — a link, symlink, device, FIFO or sparse record,
 *   extended attributes or other PAX keys, a file above 8 GiB − 1, a name that is not valid
 *   UTF-8 (a header name, or a PAX record that is not UTF-8) or not canonical — is
 *   `SandboxUnsupportedError` (`unsupported`);
 * - a spill file that cannot be written or removed is `SandboxConfigurationError`
 *   (`configuration`: the spill directory is unusable);
 * - anything else (bad checksum, framing, truncation, duplicates) is `SandboxEngineError`
 *   (`engine`: the Engine produced an archive this library does not accept).
 *
 * Import (writing the archive): a writer rejection is `SandboxConfigurationError`, except a
 * size above 8 GiB − 1 (`SandboxUnsupportedError`).
 *
 * @module
 */
import {
  SandboxConfigurationError,
  SandboxEngineError,
  type SandboxError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import type { TarError, TarErrorCode } from "../../tar/error.ts";
import { quotePath } from "../../tar/quote_path.ts";
import { dirname } from "node:path";
import { denialOfDirectory, denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

const UNSUPPORTED_CONTENT: ReadonlySet<TarErrorCode> = new Set<TarErrorCode>([
  "unsupported_type",
  "pax_unsupported_key",
  "pax_size_override",
  "size_limit",
  "path_invalid",
  "path_length",
]);

const HOST_FAILURE: ReadonlySet<TarErrorCode> = new Set<TarErrorCode>(["spill_io", "path_limit"]);

/**
 * Map a reader error of an export.
 *
 * @param error The tar error.
 * @param action "export files".
 * @param where The workspace-relative path of the entry concerned, when known.
 * @returns The sandbox error, with `error` as its cause.
 */
export function exportTarError(error: TarError, action: string, where: string | undefined): SandboxError {
  const reason = error.message.replace(/^Cannot read archive: /u, "");
  const at = where === undefined ? "" : ` (at ${quotePath(where)})`;
  // The Engine writes a name that is not UTF-8 as a PAX `path` record with its raw bytes.
  const nonUtf8Name = error.code === "pax_record" && error.message.includes("PAX record is not valid UTF-8");
  if (UNSUPPORTED_CONTENT.has(error.code) || nonUtf8Name) {
    const what = error.code === "unsupported_type"
      ? "an entry that is neither a regular file nor a directory (a symlink, hard link, device, FIFO or sparse file)"
      : "an entry this backend does not export";
    return new SandboxUnsupportedError(`Cannot ${action}: the selection holds ${what}${at}: ${reason}`, { cause: error });
  }
  if (HOST_FAILURE.has(error.code)) {
    // Spill files get names of their own inside the spill directory: grant the directory.
    const denial = denoPermissionDenial(error);
    const why = denial ? denialReason(denial.target ? denialOfDirectory(denial, dirname(denial.target)) : denial) : reason;
    return new SandboxConfigurationError(`Cannot ${action}: the spill directory failed: ${why}`, { cause: error });
  }
  return new SandboxEngineError(`Cannot ${action}: the Engine's archive is not acceptable${at}: ${reason}`, { cause: error });
}

/**
 * Map a writer error of an import.
 *
 * @param error The tar error.
 * @param action "import files".
 * @returns The sandbox error, with `error` as its cause.
 */
export function importTarError(error: TarError, action: string): SandboxError {
  // The offset is a position in the archive we write, which means nothing to the caller.
  const reason = error.message.replace(/^Cannot write archive: /u, "").replace(/ at offset \d+/u, "");
  if (error.code === "size_limit") return new SandboxUnsupportedError(`Cannot ${action}: ${reason}`, { cause: error });
  return new SandboxConfigurationError(`Cannot ${action}: ${reason}`, { cause: error });
}
