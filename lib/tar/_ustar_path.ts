// The entry path a ustar header spells in its `prefix` and `name` fields.
import { readError } from "./_fail.ts";

const strict = new TextDecoder("utf-8", { fatal: true });
const lossy = new TextDecoder();

/** Field text up to its first NUL; undefined when a non-NUL byte follows that NUL. */
function terminated(field: Uint8Array): Uint8Array | undefined {
  const nul = field.indexOf(0);
  if (nul === -1) return field;
  for (let i = nul + 1; i < field.length; i++) if (field[i] !== 0) return undefined;
  return field.subarray(0, nul);
}

/**
 * `prefix + "/" + name` (or `name` alone when the prefix is empty), decoded as UTF-8.
 *
 * @throws {TarError} `path_invalid` for a NUL inside a field or invalid UTF-8.
 */
export function ustarPath(name: Uint8Array, prefix: Uint8Array, offset: number): string {
  const nameText = terminated(name);
  const prefixText = terminated(prefix);
  if (nameText === undefined || prefixText === undefined) {
    const path = lossy.decode(nameText === undefined ? name : prefix).replace(/\0+$/, "");
    throw readError("path_invalid", "NUL in path", { offset, path });
  }
  let joined: Uint8Array = nameText;
  if (prefixText.length > 0) {
    joined = new Uint8Array(prefixText.length + 1 + nameText.length);
    joined.set(prefixText);
    joined[prefixText.length] = 0x2f;
    joined.set(nameText, prefixText.length + 1);
  }
  try {
    return strict.decode(joined);
  } catch {
    throw readError("path_invalid", "path is not valid UTF-8", { offset, path: lossy.decode(joined) });
  }
}
