/**
 * The text of the egress proxy program (`proxy_program.ts`), read once from beside this
 * module: from the file system when the module was loaded from a `file:` URL (a checkout,
 * npm, a vendored copy), else with `fetch` (a registry such as JSR serves it over `https:`).
 * The text is what goes on the proxy container's command line, byte for byte, and is read
 * back from the container's inspect.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../../internal/deno_permission.ts";

/** Largest program text accepted, in bytes: 96 KiB (Linux bounds one argument to 128 KiB). */
export const MAX_PROGRAM_BYTES = 96 * 1024;

let cached: Promise<string> | undefined;

/**
 * The proxy program's text.
 *
 * @throws {SandboxConfigurationError} when Deno denies reading it (the message names the flag)
 * @throws {SandboxUnsupportedError} when it cannot be read otherwise or is larger than {@linkcode MAX_PROGRAM_BYTES}
 */
export function proxyProgramSource(): Promise<string> {
  cached ??= (async () => {
    const url = new URL("./proxy_program.ts", import.meta.url);
    let text: string;
    try {
      if (url.protocol === "file:") text = await readFile(fileURLToPath(url), "utf8");
      else {
        const response = await fetch(url);
        if (!response.ok) throw new Error(`${url} answered ${response.status}`);
        text = await response.text();
      }
    } catch (cause) {
      cached = undefined;
      const denial = denoPermissionDenial(cause);
      if (denial) {
        throw new SandboxConfigurationError(`Cannot start sandbox: the egress proxy program ${url} cannot be read: ${denialReason(denial)}`, { cause });
      }
      throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy program ${url} cannot be read (${(cause as Error).message})`, { cause });
    }
    if (new TextEncoder().encode(text).byteLength > MAX_PROGRAM_BYTES) {
      throw new SandboxUnsupportedError(`Cannot start sandbox: the egress proxy program is larger than ${MAX_PROGRAM_BYTES} bytes`);
    }
    return text;
  })();
  return cached;
}
