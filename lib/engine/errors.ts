/**
 * Errors of the Docker Engine client above the transport: endpoint parsing, API version
 * negotiation, HTTP status mapping and response validation. Transport faults (deadlines,
 * framing, limits) are {@linkcode DockerEngineTransportError} in `./http/errors.ts`.
 *
 * @module
 */

/**
 * Stable codes of {@linkcode DockerEngineError}:
 * - `invalid_endpoint`: the endpoint is not `unix:///absolute/path`
 * - `unsupported_api_version`: the daemon's API version is below the supported minimum
 * - `not_found` (HTTP 404), `conflict` (HTTP 409), `bad_request` (HTTP 400),
 *   `server_error` (HTTP 5xx), `unexpected_status` (any other status not expected)
 * - `invalid_body`: a JSON reply that does not parse or does not match its schema
 */
export type DockerEngineErrorCode =
  | "invalid_endpoint"
  | "unsupported_api_version"
  | "not_found"
  | "conflict"
  | "bad_request"
  | "server_error"
  | "unexpected_status"
  | "invalid_body";

/** Options of {@linkcode DockerEngineError}. */
export interface DockerEngineErrorOptions extends ErrorOptions {
  /** HTTP status of the Engine reply, when the error comes from one. */
  readonly status?: number;
  /** The Engine's own `message` from its JSON error body (at most 1,024 characters). */
  readonly engineMessage?: string;
}

/**
 * A Docker Engine reply or configuration the client cannot use.
 *
 * @example
 * ```ts
 * import { DockerEngineError } from "./errors.ts";
 * const error = new DockerEngineError("not_found", "Cannot inspect container: no such container", { status: 404 });
 * console.assert(error.code === "not_found" && error.status === 404);
 * ```
 */
export class DockerEngineError extends Error {
  /** Stable code; see {@linkcode DockerEngineErrorCode}. */
  readonly code: DockerEngineErrorCode;
  /** HTTP status of the reply, when there was one. */
  readonly status: number | undefined;
  /** The Engine's own error message, when it sent one. */
  readonly engineMessage: string | undefined;

  /**
   * Create the error.
   *
   * @param code stable code
   * @param message "Cannot <action>: <reason>"
   * @param options status, Engine message and cause
   */
  constructor(code: DockerEngineErrorCode, message: string, options?: DockerEngineErrorOptions) {
    super(message, options);
    this.name = "DockerEngineError";
    this.code = code;
    this.status = options?.status;
    this.engineMessage = options?.engineMessage;
  }
}

/**
 * Map an unexpected HTTP status to its {@linkcode DockerEngineErrorCode}: the one place
 * where Engine statuses become error codes (Engine API: 400 bad parameter, 404 no such
 * object, 409 conflict, 500 server error).
 *
 * @param status HTTP status code
 * @returns the error code for that status
 */
export function codeForStatus(status: number): DockerEngineErrorCode {
  if (status === 400) return "bad_request";
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status >= 500 && status <= 599) return "server_error";
  return "unexpected_status";
}
