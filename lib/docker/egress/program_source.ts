/**
 * The text of a program of ours that a helper container runs (the egress proxy,
 * `proxy_program.ts`; the port relay, `../ports/relay_program.ts`), read once from beside
 * its module: from the file system when the module was loaded from a `file:` URL (a
 * checkout, npm, a vendored copy), else with `fetch` (a registry such as JSR serves it over
 * `https:`). The text is what goes on the container's command line, byte for byte, and is
 * read back from the container's inspect.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

/** Largest program text accepted, in bytes: 96 KiB (Linux bounds one argument to 128 KiB). */
export const MAX_PROGRAM_BYTES = 96 * 1024;

const cache = new Map<string, Promise<string>>();

/**
 * The proxy program's text.
 *
 * @throws {SandboxConfigurationError} when Deno denies reading it (the message names the flag)
 * @throws {SandboxUnsupportedError} when it cannot be read otherwise or is larger than {@linkcode MAX_PROGRAM_BYTES}
 */
export function proxyProgramSource(): Promise<string> {
  return programSource(new URL("./proxy_program.ts", import.meta.url), "start sandbox", "the egress proxy program");
}

/**
 * The text of the program at `url`, read once (a failed read is tried again next time).
 *
 * @param url the program file, beside its module
 * @param action what fails without it, for messages ("start sandbox")
 * @param what the program, for messages ("the egress proxy program")
 * @throws {SandboxConfigurationError} when Deno denies reading it (the message names the flag)
 * @throws {SandboxUnsupportedError} when it cannot be read otherwise or is larger than {@linkcode MAX_PROGRAM_BYTES}
 */
export function programSource(url: URL, action: string, what: string): Promise<string> {
  const key = url.href;
  let cached = cache.get(key);
  if (cached === undefined) {
    cached = read(url, action, what);
    cache.set(key, cached);
    cached.catch(() => cache.delete(key));
  }
  return cached;
}

async function read(url: URL, action: string, what: string): Promise<string> {
  let text: string;
  try {
    if (url.protocol === "file:") text = await readFile(fileURLToPath(url), "utf8");
    else {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      text = await response.text();
    }
  } catch (cause) {
    const denial = denoPermissionDenial(cause);
    if (denial) {
      throw new SandboxConfigurationError(`Cannot ${action}: ${what} ${url} cannot be read: ${denialReason(denial)}`, { cause });
    }
    throw new SandboxUnsupportedError(`Cannot ${action}: ${what} ${url} cannot be read (${(cause as Error).message})`, { cause });
  }
  if (new TextEncoder().encode(text).byteLength > MAX_PROGRAM_BYTES) {
    throw new SandboxUnsupportedError(`Cannot ${action}: ${what} is larger than ${MAX_PROGRAM_BYTES} bytes`);
  }
  return text;
}
