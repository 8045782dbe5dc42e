/**
 * The lexical checks shared by canonical relative paths and canonical absolute guest paths.
 *
 * @module
 */
import { utf8ByteLength } from "../streams/utf8.ts";

/** Longest path accepted, in bytes of UTF-8 (Linux `PATH_MAX`). */
export const MAX_PATH_BYTES = 4096;

/** Longest segment (file name) accepted, in bytes of UTF-8 (Linux `NAME_MAX`). */
export const MAX_SEGMENT_BYTES = 255;

const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Finds the first lexical defect of a canonical slash-separated path.
 *
 * @param text The candidate path.
 * @param absolute `true` for an absolute path (must start with one `/`), `false` for a relative
 *   one (must not).
 * @returns A reason starting with "must", or `undefined` when the path is canonical.
 */
export function pathDefect(text: string, absolute: boolean): string | undefined {
  if (text.length === 0) return "must not be empty";
  if (text.includes("\0")) return "must not contain NUL";
  if (LONE_SURROGATE.test(text)) return "must be well-formed Unicode";
  if (utf8ByteLength(text) > MAX_PATH_BYTES) {
    return `must be at most ${MAX_PATH_BYTES} bytes of UTF-8`;
  }
  if (text.includes("\\")) return "must not contain a backslash";
  if (CONTROL.test(text)) return "must not contain control characters";
  if (absolute && !text.startsWith("/")) return "must be absolute (start with /)";
  if (!absolute && text.startsWith("/")) return "must be relative (not start with /)";
  const body = absolute ? text.slice(1) : text;
  if (body.length === 0) return "must name an entry below /";
  if (body.endsWith("/")) return "must not end with /";
  for (const segment of body.split("/")) {
    if (segment === "") return "must not contain an empty segment (//)";
    if (segment === "." || segment === "..") return `must not contain a '${segment}' segment`;
    if (segment.length > MAX_SEGMENT_BYTES / 3 && utf8ByteLength(segment) > MAX_SEGMENT_BYTES) {
      return `must not contain a segment longer than ${MAX_SEGMENT_BYTES} bytes of UTF-8`;
    }
  }
  return undefined;
}
