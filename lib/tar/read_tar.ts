import { isAbsolute } from "node:path";
import { z } from "zod";
import { ArchiveReader } from "./_archive_reader.ts";
import { ByteReader } from "../streams/byte_reader.ts";
import { readError } from "./_fail.ts";
import { PathSet } from "./_path_set.ts";
import type { TarEntry } from "./entry.ts";

/**
 * Options of {@linkcode readTar}.
 *
 * @example Spill path checks of a large archive to a directory the caller owns
 * ```ts
 * import { readTar, type ReadTarOptions } from "./mod.ts";
 *
 * const options: ReadTarOptions = { spillDirectory: "/var/lib/my-app/spill", maxInMemoryPaths: 100_000 };
 * const entries = readTar(new Blob([new Uint8Array(1024)]).stream(), options);
 * await entries.cancel();
 * ```
 */
export interface ReadTarOptions {
  /**
   * Absolute path of an existing directory the reader may write temporary files to, once
   * more paths than the in-memory bounds were seen. Files are created with exclusive random
   * names (`agentcell-tar-paths-<uuid>.run`, mode 0600) and removed when the entry stream
   * closes, errors or is cancelled. Without it, exceeding a bound fails with `path_limit`.
   * No default location is discovered.
   * @default undefined
   */
  readonly spillDirectory?: string;
  /**
   * Most paths (entries plus their implicit ancestor directories) held in memory for the
   * duplicate and conflict checks before they spill (or fail with `path_limit`).
   * @default 65536
   */
  readonly maxInMemoryPaths?: number;
  /**
   * Most UTF-8 bytes of path text held in memory for those checks, in bytes: the full path
   * of every entry plus the last segment of every implicit ancestor directory.
   * @default 8388608 (8 MiB)
   */
  readonly maxInMemoryPathBytes?: number;
}

const optionsSchema = z.strictObject({
  spillDirectory: z.string().refine((path) => isAbsolute(path) && !path.includes("\0"), "must be an absolute path")
    .optional(),
  maxInMemoryPaths: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  maxInMemoryPathBytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
});

/**
 * Reads a ustar/PAX archive incrementally and strictly: the security boundary for archives
 * that come out of a container.
 *
 * Only regular files (type `0` or NUL) and directories (`5`) with local PAX records of the
 * keys `path`, `mtime`, `atime`, `ctime`, `uid`, `gid`, `uname`, `gname` are accepted.
 * Headers (unsigned checksum, `ustar\0` + `00` magic, octal fields, size ≤ 8 GiB − 1), body
 * lengths, zero padding and termination (two zero blocks, then only zeros to the end of the
 * source) are validated as the bytes arrive; paths must be relative and canonical, unique,
 * and never both a file and a directory (an entry under a file, or a file where an earlier
 * entry implies a directory). Implicit parent directories are fine.
 *
 * The result pulls lazily: the source is read only as far as the consumer asks (one source
 * chunk, one 512-byte header, one PAX block of at most 64 KiB held at a time). Read or
 * cancel each file body before asking for the next entry (asking earlier skips the rest of
 * it). The entry stream closes only after the end of the archive has been validated and
 * the final path check ran; until then every entry is provisional. When the path bounds
 * spill to disk, duplicates and conflicts between spilled runs are reported at the end of
 * the archive (as an error instead of the close), not when the entry is read.
 *
 * Errors of the source stream propagate unchanged; a source chunk that is not a
 * `Uint8Array` errors the stream with a `TypeError`. Cancelling the result cancels the
 * source and removes spill files before the cancel resolves.
 *
 * @param source The archive bytes, split anywhere.
 * @param options Path-check bounds and spill directory.
 * @returns A stream of entries (high-water mark 0).
 * @throws {TarError} `invalid_options` at once for invalid options. The stream errors
 * with a {@linkcode TarError} whose code names the rule broken (see
 * {@linkcode TarErrorCode}), its `offset` and, when known, the entry `path`.
 *
 * @example List an archive
 * ```ts
 * import { readTar } from "./mod.ts";
 *
 * const archive = new Blob([new Uint8Array(1024)]).stream(); // an empty archive
 * for await (const entry of readTar(archive)) {
 *   console.log(entry.type, entry.path, entry.size);
 *   await entry.body.cancel();
 * }
 * ```
 */
export function readTar(source: ReadableStream<Uint8Array>, options: ReadTarOptions = {}): ReadableStream<TarEntry> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    throw readError("invalid_options", `invalid options: ${z.prettifyError(parsed.error)}`, { cause: parsed.error });
  }
  const paths = new PathSet({
    spillDirectory: parsed.data.spillDirectory,
    maxInMemoryPaths: parsed.data.maxInMemoryPaths ?? 65_536,
    maxInMemoryPathBytes: parsed.data.maxInMemoryPathBytes ?? 8 * 1024 * 1024,
  });
  const reader = new ArchiveReader(new ByteReader(source), paths);
  return new ReadableStream<TarEntry>({
    start: (controller) => reader.attach(controller),
    pull: () => reader.pull(),
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}
