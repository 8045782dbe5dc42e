// Builds TarErrors with the project's message shape:
// "Cannot read archive: <reason> at offset N (entry 'x')".
import { TarError, type TarErrorCode, type TarErrorOptions } from "./error.ts";
import { quotePath } from "./quote_path.ts";

/** Which side of the format raised the error. */
export type TarAction = "read archive" | "write archive";

/** A TarError for `action` with `reason`, placing offset and path in the message. */
export function tarError(
  action: TarAction,
  code: TarErrorCode,
  reason: string,
  options: TarErrorOptions = {},
): TarError {
  let message = `Cannot ${action}: ${reason}`;
  if (options.offset !== undefined) message += ` at offset ${options.offset}`;
  if (options.path !== undefined) message += ` (entry ${quotePath(options.path)})`;
  return new TarError(code, message, options);
}

/** A TarError raised while reading. */
export function readError(code: TarErrorCode, reason: string, options: TarErrorOptions = {}): TarError {
  return tarError("read archive", code, reason, options);
}
