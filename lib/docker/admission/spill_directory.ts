/**
 * Verify the caller's spill directory at start: it exists, is a directory, its real path is
 * the configured one (a symlink, or one on the way, is refused naming the real path), and
 * this process's user owns it.
 * `node:fs/promises` and `node:process` work on Deno, Bun and Node alike.
 *
 * @module
 */
import { SandboxConfigurationError } from "../../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";
import { type DirectoryVerdict, inspectDirectory, ownerDefect } from "../_directory_check.ts";

/**
 * @param path the configured, lexically canonical spill directory
 * @throws {SandboxConfigurationError} when it is missing, not a directory, not canonical on
 *   disk (a symlink on the way: the message names the real path to configure) or owned by
 *   another user, or when Deno denies reading it or the process's uid (the message names the
 *   `--allow-read` / `--allow-sys` flag)
 */
export async function verifySpillDirectory(path: string): Promise<void> {
  const fail = (reason: string, cause?: unknown): never => {
    throw new SandboxConfigurationError(`Cannot use spill directory ${path} (config.spillDirectory): ${reason}`, { cause });
  };
  const failed = (cause: unknown, reason: string): never => {
    const denial = denoPermissionDenial(cause);
    return fail(denial ? denialReason(denial) : reason, cause);
  };
  let verdict: DirectoryVerdict;
  try {
    verdict = await inspectDirectory(path);
  } catch (cause) {
    return failed(cause, `it cannot be read (${String((cause as { code?: unknown }).code ?? cause)})`);
  }
  if (verdict.kind === "missing") return fail("it does not exist (create it, owned by this process's user)");
  if (verdict.kind === "not-directory") return fail("it is not a directory: set config.spillDirectory to a directory");
  if (verdict.kind === "not-canonical") return fail(`it is not canonical on disk (resolves to ${verdict.real}): set config.spillDirectory to ${verdict.real}`);
  const { stat } = verdict;
  let owner: string | undefined;
  try {
    owner = ownerDefect(stat);
  } catch (cause) {
    return failed(cause, "this process's uid cannot be read");
  }
  if (owner !== undefined) fail(`it is ${owner}: use a directory this user owns`);
}
