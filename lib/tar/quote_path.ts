/**
 * Quoting archive paths for messages, so a hostile name cannot write control sequences into a
 * log or a terminal through an error message, and a 4 KiB path does not fill one.
 *
 * @module
 */

/** Longest path quoted whole, in characters; a longer one keeps its start and end. */
export const MAX_QUOTED_PATH_CHARACTERS = 200;
/** Characters kept from the start of a cut path. */
const HEAD_CHARACTERS = 120;
/** Characters kept from the end of a cut path. */
const TAIL_CHARACTERS = 60;

function escape(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f'\\]/g, (c) =>
    c === "'" || c === "\\" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/**
 * Quotes a path for a message: single quotes around it; control characters (Unicode Cc:
 * U+0000–U+001F, U+007F–U+009F), the quote and the backslash escaped (`\x1b`, `\'`, `\\`).
 * A path over {@linkcode MAX_QUOTED_PATH_CHARACTERS} characters is cut to its first 120 and
 * last 60 characters around `…`, followed by its full length in characters.
 *
 * @param path Any string.
 * @returns The quoted, printable form.
 *
 * @example
 * ```ts
 * import { quotePath } from "./quote_path.ts";
 *
 * console.log(quotePath("a\u001b[31mred")); // 'a\x1b[31mred'
 * console.log(quotePath("d/".repeat(2048)).length < 300); // true
 * ```
 */
export function quotePath(path: string): string {
  if (path.length <= MAX_QUOTED_PATH_CHARACTERS) return `'${escape(path)}'`;
  // Cut on code points, so no surrogate half is left at the cut.
  const points = Array.from(path);
  if (points.length <= MAX_QUOTED_PATH_CHARACTERS) return `'${escape(path)}'`;
  const head = points.slice(0, HEAD_CHARACTERS).join("");
  const tail = points.slice(-TAIL_CHARACTERS).join("");
  return `'${escape(head)}…${escape(tail)}' (${points.length} characters)`;
}
