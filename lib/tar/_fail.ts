// Builds TarErrors with the project's message shape:
// "Cannot read archive: <reason> at offset N (entry 'x')".
import { TarError, type TarErrorCode, type TarErrorOptions } from "./error.ts";

/** Which side of the format raised the error. */
export type TarAction = "read archive" | "write archive";

/** Quotes a path for a message: control characters, quote and backslash escaped. */
function quote(path: string): string {
  // deno-lint-ignore no-control-regex
  const escaped = path.replace(/[\u0000-\u001f\u007f'\\]/g, (c) =>
    c === "'" || c === "\\" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  return `'${escaped}'`;
}

/** A TarError for `action` with `reason`, placing offset and path in the message. */
export function tarError(
  action: TarAction,
  code: TarErrorCode,
  reason: string,
  options: TarErrorOptions = {},
): TarError {
  let message = `Cannot ${action}: ${reason}`;
  if (options.offset !== undefined) message += ` at offset ${options.offset}`;
  if (options.path !== undefined) message += ` (entry ${quote(options.path)})`;
  return new TarError(code, message, options);
}

/** A TarError raised while reading. */
export function readError(code: TarErrorCode, reason: string, options: TarErrorOptions = {}): TarError {
  return tarError("read archive", code, reason, options);
}
