/**
 * Quoting archive paths for messages, so a hostile name cannot write control sequences into a
 * log or a terminal through an error message.
 *
 * @module
 */

/**
 * Quotes a path for a message: single quotes around it; control characters (Unicode Cc:
 * U+0000–U+001F, U+007F–U+009F), the quote and the backslash escaped (`\x1b`, `\'`, `\\`).
 *
 * @param path Any string.
 * @returns The quoted, printable form.
 *
 * @example
 * ```ts
 * import { quotePath } from "./quote_path.ts";
 *
 * console.log(quotePath("a\u001b[31mred")); // 'a\x1b[31mred'
 * ```
 */
export function quotePath(path: string): string {
  // deno-lint-ignore no-control-regex
  const escaped = path.replace(/[\u0000-\u001f\u007f-\u009f'\\]/g, (c) =>
    c === "'" || c === "\\" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  return `'${escaped}'`;
}
