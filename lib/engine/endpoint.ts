import { DockerEngineError } from "./errors.ts";

/** Longest Unix socket path in bytes (Linux `sun_path` holds 108 bytes with the NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Parse an explicit Docker Engine endpoint, `unix:///absolute/path.sock`, into its socket
 * path. Only Unix sockets are supported; nothing is read from the environment
 * (`DOCKER_HOST` is never consulted) and the path is taken literally (no percent-decoding).
 *
 * @param endpoint `unix://` followed by an absolute path of at most 107 bytes
 * @returns the absolute socket path
 * @throws {DockerEngineError} code `invalid_endpoint` for another scheme, a relative path,
 *   a path starting with `//`, control characters, `%`, `?` or `#`, or a path over 107 bytes
 *
 * @example
 * ```ts
 * import { parseEngineEndpoint } from "./endpoint.ts";
 * console.assert(parseEngineEndpoint("unix:///var/run/docker.sock") === "/var/run/docker.sock");
 * ```
 */
export function parseEngineEndpoint(endpoint: string): string {
  const fail = (reason: string): never => {
    throw new DockerEngineError("invalid_endpoint", `Cannot use Engine endpoint: ${reason}`);
  };
  if (typeof endpoint !== "string") fail("the endpoint must be a string");
  if (!endpoint.startsWith("unix://")) {
    fail("only unix:///absolute/path endpoints are supported (no tcp, ssh, npipe or relative forms)");
  }
  const path = endpoint.slice("unix://".length);
  if (!path.startsWith("/")) fail("the socket path must be absolute (unix:///absolute/path)");
  if (path.startsWith("//")) fail("the socket path must not start with '//'");
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/u.test(path)) fail("the socket path contains control characters");
  if (/[%?#]/u.test(path)) fail("the socket path must not contain '%', '?' or '#'");
  if (new TextEncoder().encode(path).byteLength > MAX_SOCKET_PATH_BYTES) {
    fail(`the socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes`);
  }
  return path;
}
