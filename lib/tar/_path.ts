// The path rules the reader enforces and the writer applies to its caller's entries.
import type { TarErrorCode } from "./error.ts";
import { MAX_PATH_BYTES, MAX_SEGMENT_BYTES } from "./limits.ts";
import { utf8ByteLength } from "../streams/utf8.ts";

/** Unicode category Cc: U+0000–U+001F and U+007F–U+009F. */
const CONTROL = /\p{Cc}/u;

/** A path rule broken: the error code and a reason for the message. */
export interface PathProblem {
  readonly code: Extract<TarErrorCode, "path_invalid" | "path_length">;
  readonly reason: string;
}

/**
 * Checks an archive path and returns it without a directory's trailing `/`, or the rule it
 * breaks. Relative, `/`-separated, non-empty segments other than `.` and `..` of at most
 * 255 UTF-8 bytes each, no NUL, no backslash, no control character (Unicode Cc), at most
 * 4096 UTF-8 bytes; a single trailing `/` only on a directory.
 */
export function checkPath(path: string, type: "file" | "directory"): string | PathProblem {
  let bare = path;
  if (bare.endsWith("/")) {
    if (type !== "directory") return { code: "path_invalid", reason: "file path ends with '/'" };
    bare = bare.slice(0, -1);
  }
  if (bare === "") return { code: "path_invalid", reason: "empty path" };
  if (!bare.isWellFormed()) return { code: "path_invalid", reason: "path is not well-formed Unicode" };
  if (utf8ByteLength(bare) > MAX_PATH_BYTES) {
    return { code: "path_length", reason: `path longer than ${MAX_PATH_BYTES} bytes` };
  }
  if (bare.includes("\0")) return { code: "path_invalid", reason: "NUL in path" };
  if (bare.includes("\\")) return { code: "path_invalid", reason: "backslash in path" };
  if (CONTROL.test(bare)) return { code: "path_invalid", reason: "control character in path" };
  if (bare.startsWith("/")) return { code: "path_invalid", reason: "absolute path" };
  for (const segment of bare.split("/")) {
    if (segment === "") return { code: "path_invalid", reason: "empty path segment" };
    if (segment === "." || segment === "..") {
      return { code: "path_invalid", reason: `'${segment}' path segment` };
    }
    if (segment.length > MAX_SEGMENT_BYTES / 3 && utf8ByteLength(segment) > MAX_SEGMENT_BYTES) {
      return { code: "path_length", reason: `path segment longer than ${MAX_SEGMENT_BYTES} bytes` };
    }
  }
  return bare;
}
