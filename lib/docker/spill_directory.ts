/**
 * Verify the caller's spill directory at start: it exists, is a directory (not a symlink),
 * its real path is the configured one, and this process's user owns it.
 * `node:fs/promises` and `node:process` work on Deno, Bun and Node alike.
 *
 * @module
 */
import { lstat, realpath } from "node:fs/promises";
import process from "node:process";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../sandbox/_deno_permission.ts";

/**
 * @param path the configured, lexically canonical spill directory
 * @throws {SandboxConfigurationError} when it is missing, not a directory, not canonical on
 *   disk (a symlink on the way) or owned by another user, or when Deno denies reading it or
 *   the process's uid (the message names the `--allow-read` / `--allow-sys` flag)
 */
export async function verifySpillDirectory(path: string): Promise<void> {
  const fail = (reason: string, cause?: unknown): never => {
    throw new SandboxConfigurationError(`Cannot use spill directory ${path} (config.spillDirectory): ${reason}`, { cause });
  };
  const failed = (cause: unknown, reason: string): never => {
    const denial = denoPermissionDenial(cause);
    return fail(denial ? denialReason(denial) : reason, cause);
  };
  let stat;
  try {
    stat = await lstat(path);
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    return failed(cause, code === "ENOENT" ? "it does not exist (create it, owned by this process's user)" : `it cannot be read (${String(code ?? cause)})`);
  }
  if (!stat.isDirectory()) fail("it is not a directory: set config.spillDirectory to a directory");
  let real: string;
  try {
    real = await realpath(path);
  } catch (cause) {
    return failed(cause, "its real path cannot be resolved");
  }
  if (real !== path) fail(`it is not canonical on disk (resolves to ${real}): set config.spillDirectory to ${real}`);
  let uid: number | undefined;
  try {
    uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  } catch (cause) {
    return failed(cause, "this process's uid cannot be read");
  }
  if (uid !== undefined && stat.uid !== uid) fail(`it is owned by uid ${stat.uid}, not by this process (uid ${uid}): use a directory this user owns`);
}
