/**
 * One regular file or directory of an archive, as {@linkcode readTar} produces it.
 *
 * Everything an entry says is provisional until the entry stream closes without error:
 * later bytes can still make the archive invalid (and spilled duplicate checks run at its
 * end).
 *
 * @example Copy every file body somewhere
 * ```ts
 * import { readTar } from "./mod.ts";
 *
 * async function sizes(archive: ReadableStream<Uint8Array>): Promise<Map<string, number>> {
 *   const result = new Map<string, number>();
 *   for await (const entry of readTar(archive)) {
 *     let bytes = 0;
 *     for await (const chunk of entry.body) bytes += chunk.length;
 *     result.set(entry.path, bytes);
 *   }
 *   return result;
 * }
 * ```
 */
export interface TarEntry {
  /**
   * Relative path, `/`-separated, UTF-8 decoded, without a directory's trailing `/`; from
   * the PAX `path` record when present, else from the ustar `prefix` and `name` fields.
   */
  readonly path: string;
  /** `file` for type flag `0` or NUL, `directory` for `5`. */
  readonly type: "file" | "directory";
  /** Permission bits (the mode field masked with `0o7777`, setuid/setgid/sticky included). */
  readonly mode: number;
  /**
   * Modification time in seconds since the epoch (PAX `mtime` when present, which may be
   * negative or fractional).
   */
  readonly mtime: number;
  /** Body length in bytes, at most 8 GiB − 1; 0 for directories. */
  readonly size: number;
  /** Owner user id (PAX `uid` when present). */
  readonly uid: number;
  /** Owner group id (PAX `gid` when present). */
  readonly gid: number;
  /**
   * Byte offset in the archive of the entry's header (of its PAX header when it has one).
   */
  readonly offset: number;
  /**
   * The file's bytes, in chunks of at most 64 KiB; an empty, closed stream for directories.
   * Read it to its end or cancel it before asking for the next entry: asking earlier skips
   * the rest of the body and errors this stream with code `entry_skipped`. It errors with
   * the archive's error if the archive turns out to be invalid while it is read (its
   * padding is checked before it closes), and with code `cancelled` if the entry stream is
   * cancelled first.
   */
  readonly body: ReadableStream<Uint8Array>;
}
