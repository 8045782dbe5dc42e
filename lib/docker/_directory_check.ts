/**
 * What a configured directory is on disk: missing, not a directory, reached through a
 * symbolic link (not canonical, with its real path), or a directory with its `lstat` facts.
 * Shared by the spill-directory check and the file recovery store, which word their own
 * messages. `node:fs/promises` works on Deno, Bun and Node alike.
 *
 * @module
 */
import { lstat, realpath } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname, join, relative } from "node:path";
import process from "node:process";

/** One verdict of {@linkcode inspectDirectory}. */
export type DirectoryVerdict =
  | { readonly kind: "missing" }
  | { readonly kind: "not-directory" }
  | { readonly kind: "not-canonical"; readonly real: string }
  | { readonly kind: "directory"; readonly stat: Stats };

/**
 * Inspect `path` without following a final symbolic link; a link (or a link on the way) is
 * `not-canonical` with the real path it resolves to. A missing path is `missing` only when
 * its nearest existing ancestor is canonical (so creating it never goes through a link).
 *
 * @param path an absolute, lexically canonical path
 * @throws the file system's (or Deno's) refusal to read it, other than `ENOENT`
 */
export async function inspectDirectory(path: string): Promise<DirectoryVerdict> {
  let stat: Stats;
  try {
    stat = await lstat(path);
  } catch (cause) {
    if ((cause as { code?: unknown }).code === "ENOENT") return await missing(path);
    throw cause;
  }
  if (!stat.isDirectory() && !stat.isSymbolicLink()) return { kind: "not-directory" };
  let real: string;
  try {
    real = await realpath(path);
  } catch (cause) {
    // A dangling link: nothing is there.
    if ((cause as { code?: unknown }).code === "ENOENT") return { kind: "missing" };
    throw cause;
  }
  if (real !== path) {
    const target = await lstat(real);
    return target.isDirectory() ? { kind: "not-canonical", real } : { kind: "not-directory" };
  }
  return { kind: "directory", stat };
}

/** A missing `path`: `missing`, or `not-canonical` when an existing ancestor is reached through a link. */
async function missing(path: string): Promise<DirectoryVerdict> {
  for (let ancestor = dirname(path); ; ancestor = dirname(ancestor)) {
    let real: string;
    try {
      real = await realpath(ancestor);
    } catch (cause) {
      if ((cause as { code?: unknown }).code === "ENOENT" && ancestor !== "/") continue;
      throw cause;
    }
    return real === ancestor ? { kind: "missing" } : { kind: "not-canonical", real: join(real, relative(ancestor, path)) };
  }
}

/**
 * Why a directory's owner is not this process's user, or `undefined` when it is (or the
 * runtime has no uid). Both the spill directory and the recovery store must be private to
 * the host program: another user who owns one can plant files in it.
 *
 * @param stat the directory's `lstat`
 * @returns `"owned by uid <n>, not by this process (uid <m>)"` or `undefined`
 * @throws what reading this process's uid throws (Deno without `--allow-sys=uid`)
 */
export function ownerDefect(stat: Stats): string | undefined {
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  return uid === undefined || stat.uid === uid ? undefined : `owned by uid ${stat.uid}, not by this process (uid ${uid})`;
}
