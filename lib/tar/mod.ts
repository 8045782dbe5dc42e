/**
 * Strict, incremental tar (ustar + local PAX) reading and writing over Web Streams.
 *
 * {@linkcode readTar} is the security boundary for archives that leave a container: it
 * accepts regular files and directories only and rejects anything it does not fully
 * understand with a {@linkcode TarError} and a stable {@linkcode TarErrorCode}.
 * {@linkcode writeTar} produces archives that reader accepts.
 *
 * @example Round trip
 * ```ts
 * import { readTar, writeTar } from "./mod.ts";
 *
 * const archive = writeTar([{ path: "empty", type: "file", mode: 0o644, mtime: 0, size: 0 }]);
 * for await (const entry of readTar(archive)) console.log(entry.path); // empty
 * ```
 *
 * @module
 */
export type { TarEntry } from "./entry.ts";
export { TarError, type TarErrorCode, type TarErrorOptions } from "./error.ts";
export { readTar, type ReadTarOptions } from "./read_tar.ts";
export { type TarWriterEntry, writeTar } from "./write_tar.ts";
