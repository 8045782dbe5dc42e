import { DockerEngineError } from "./errors.ts";

/** Longest Unix socket path in bytes (Linux `sun_path` holds 108 bytes with the NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** The usual socket of a local rootful daemon, named in messages as an example. */
const USUAL_SOCKET = "unix:///var/run/docker.sock";

/** A value for a message: JSON-quoted (controls escaped), cut at 200 characters. */
function shown(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

/**
 * What is wrong with an endpoint, worded to follow its name ("config.endpoint must …"),
 * with the corrected value when one can be derived; `undefined` for a valid endpoint.
 *
 * @param endpoint What the caller passed.
 * @returns The defect, e.g. `must be unix:// and an absolute socket path: use
 *   "unix:///var/run/docker.sock"`, or `undefined`.
 */
export function endpointDefect(endpoint: unknown): string | undefined {
  if (typeof endpoint !== "string") return `must be a string such as ${shown(USUAL_SOCKET)}`;
  if (!endpoint.startsWith("unix://")) {
    // A bare absolute path, or `unix:` with too few slashes: the socket path is clear.
    const path = endpoint.startsWith("/") ? endpoint : /^unix:\/?(?!\/)/u.test(endpoint) ? `/${endpoint.replace(/^unix:\/?/u, "")}` : undefined;
    if (path !== undefined && !path.startsWith("//")) {
      return `must be unix:// followed by the absolute socket path (${shown(endpoint)} is not): use ${shown(`unix://${path}`)}`;
    }
    return `must be unix:// followed by the absolute socket path (${shown(endpoint)} is not; tcp, ssh, npipe and http endpoints are not supported): a local daemon's socket is usually ${shown(USUAL_SOCKET)}`;
  }
  const path = endpoint.slice("unix://".length);
  if (path === "") return `must name a socket path after unix://, e.g. ${shown(USUAL_SOCKET)}`;
  if (!path.startsWith("/")) {
    return `must name an absolute socket path after unix:// (three slashes): did you mean ${shown(`unix:///${path}`)}?`;
  }
  if (path.startsWith("//")) return `must not start the socket path with "//": use ${shown(`unix:///${path.replace(/^\/+/u, "")}`)}`;
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/u.test(path)) return `must not contain control characters (${shown(endpoint)})`;
  if (/[%?#]/u.test(path)) return `must not contain '%', '?' or '#' (the socket path is taken literally, never percent-decoded)`;
  const bytes = new TextEncoder().encode(path).byteLength;
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    return `must name a socket path of at most ${MAX_SOCKET_PATH_BYTES} bytes (this one has ${bytes}): use a shorter path to the socket, e.g. a symbolic link to it`;
  }
  return undefined;
}

/**
 * Parse an explicit Docker Engine endpoint, `unix:///absolute/path.sock`, into its socket
 * path. Only Unix sockets are supported; nothing is read from the environment
 * (`DOCKER_HOST` is never consulted) and the path is taken literally (no percent-decoding).
 * The error message says the fix, with the corrected value when it is clear
 * (`/var/run/docker.sock` → `unix:///var/run/docker.sock`).
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
  const defect = endpointDefect(endpoint);
  if (defect !== undefined) throw new DockerEngineError("invalid_endpoint", `Cannot use Engine endpoint: the endpoint ${defect}`);
  return endpoint.slice("unix://".length);
}
