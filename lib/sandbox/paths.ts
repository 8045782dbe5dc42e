/**
 * Canonical workspace-relative paths, as used to name files in imports, export selections and
 * dataset subpaths.
 *
 * @module
 */
import { SandboxConfigurationError } from "./errors.ts";
import { pathDefect } from "../internal/path_defects.ts";

/**
 * Validates a canonical relative path and returns it unchanged.
 *
 * A canonical relative path is lexically unambiguous, so it names exactly one entry under its
 * root without normalisation: it is non-empty, at most 4096 bytes of UTF-8, well-formed
 * Unicode, and has no leading `/`, no trailing `/`, no empty, `.` or `..` segments, no NUL, no
 * backslash and no control characters (Unicode category Cc: U+0000–U+001F, U+007F–U+009F).
 * Nothing is resolved or rewritten; a path that needs rewriting is rejected. Lexical checks do
 * not follow symbolic links: a canonical path can still traverse a link inside a tree.
 *
 * @param text The candidate path.
 * @param field Name of the field in the error message.
 * @default {"path"} field
 * @returns `text`, unchanged.
 * @throws {SandboxConfigurationError} When `text` is not a string or not canonical; the message
 *   names `field` and the defect.
 *
 * @example
 * ```ts
 * import { parseSandboxRelativePath } from "./paths.ts";
 *
 * parseSandboxRelativePath("artifacts/report.json"); // "artifacts/report.json"
 * try {
 *   parseSandboxRelativePath("../etc/passwd", "selection.path");
 * } catch (error) {
 *   console.log((error as Error).message);
 *   // Cannot parse sandbox path: selection.path must not contain a '..' segment
 * }
 * ```
 */
export function parseSandboxRelativePath(text: string, field: string = "path"): string {
  if (typeof text !== "string") {
    throw new SandboxConfigurationError(`Cannot parse sandbox path: ${field} must be a string`);
  }
  const defect = pathDefect(text, false);
  if (defect !== undefined) {
    throw new SandboxConfigurationError(`Cannot parse sandbox path: ${field} ${defect}`);
  }
  return text;
}
