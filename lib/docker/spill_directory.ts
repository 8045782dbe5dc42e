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

/**
 * @param path the configured, lexically canonical spill directory
 * @throws {SandboxConfigurationError} when it is missing, not a directory, not canonical on
 *   disk (a symlink on the way) or owned by another user
 */
export async function verifySpillDirectory(path: string): Promise<void> {
  const fail = (reason: string, cause?: unknown): never => {
    throw new SandboxConfigurationError(`Cannot use spill directory ${path}: ${reason}`, { cause });
  };
  let stat;
  try {
    stat = await lstat(path);
  } catch (cause) {
    return fail("it does not exist or cannot be read", cause);
  }
  if (!stat.isDirectory()) fail("it is not a directory");
  let real: string;
  try {
    real = await realpath(path);
  } catch (cause) {
    return fail("its real path cannot be resolved", cause);
  }
  if (real !== path) fail(`it is not canonical on disk (resolves to ${real})`);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  if (uid !== undefined && stat.uid !== uid) fail(`it is owned by uid ${stat.uid}, not by this process (uid ${uid})`);
}
