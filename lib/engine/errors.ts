/**
 * The errors of the Engine layer, one module for all of it: {@linkcode DockerEngineError}
 * for the client above the transport (endpoint parsing, API version negotiation, HTTP status
 * mapping, response validation) and {@linkcode DockerEngineTransportError} for the transport
 * (Unix socket and HTTP/1.1 codec: deadlines, framing, limits). `lib/docker` maps both to
 * sandbox errors.
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

/**
 * Stable codes of {@linkcode DockerEngineTransportError}:
 *
 * - `deadline`: a connect, header or whole-exchange deadline passed.
 * - `aborted`: the caller's `AbortSignal` fired, the caller aborted the connection, or
 *   the caller's request body stream failed.
 * - `response_limit`: the response crossed a bound (head size, chunk-size line, trailer
 *   section, body limit).
 * - `invalid_response`: the response broke HTTP/1.1 framing, was truncated, carried more
 *   bytes than it declared, switched protocols unasked, or refused an upgrade.
 * - `connection`: connecting failed, the socket failed, or the Engine closed the
 *   connection before answering.
 */
export type DockerEngineTransportErrorCode =
  | "deadline"
  | "aborted"
  | "response_limit"
  | "invalid_response"
  | "connection";

/** Options of {@linkcode DockerEngineTransportError}. */
export interface DockerEngineTransportErrorOptions extends ErrorOptions {
  /**
   * HTTP status of the response that caused the error (set when an upgrade was
   * answered with something other than `101`).
   *
   * @default undefined
   */
  readonly status?: number;
  /**
   * The first bytes (at most 4 KiB) of the body of that response, for example the
   * Engine's JSON `{"message": …}`.
   *
   * @default undefined
   */
  readonly body?: Uint8Array;
}

/**
 * Failure of talking to a Docker Engine over its Unix socket: connecting, sending the
 * request, or reading and decoding the response. Messages read "Cannot <action>:
 * <reason>"; branch on {@linkcode DockerEngineTransportError.code}, never on the message.
 *
 * @example Branch on the code
 * ```ts
 * import { DockerEngineTransportError } from "./errors.ts";
 *
 * const error = new DockerEngineTransportError("deadline", "Cannot connect: no connection within 10 ms");
 * console.log(error instanceof DockerEngineTransportError && error.code === "deadline"); // true
 * ```
 */
export class DockerEngineTransportError extends Error {
  /** Always `"DockerEngineTransportError"`. */
  override readonly name: string = "DockerEngineTransportError";
  /** What went wrong, stable across releases. */
  readonly code: DockerEngineTransportErrorCode;
  /** HTTP status of the offending response, when there was one (refused upgrade). */
  readonly status: number | undefined;
  /** First bytes (≤ 4 KiB) of the offending response's body, when there was one. */
  readonly body: Uint8Array | undefined;

  /**
   * Creates the error.
   *
   * @param code Stable error code.
   * @param message "Cannot <action>: <reason>".
   * @param options `cause` (the underlying error), `status` and `body`.
   */
  constructor(
    code: DockerEngineTransportErrorCode,
    message: string,
    options?: DockerEngineTransportErrorOptions,
  ) {
    super(message, options);
    this.code = code;
    this.status = options?.status;
    this.body = options?.body;
  }
}

/**
 * Stable codes of {@linkcode DockerEngineOutputError}:
 *
 * - `output_limit`: unread stdout and stderr would exceed the demultiplexer's bound.
 * - `framing`: the attach stream broke its framing (a stream type other than stdout or
 *   stderr, nonzero reserved bytes, a frame above the frame limit, a chunk that is not bytes,
 *   an end inside a header or payload).
 * - `abandoned`: a consumer cancelled stdout or stderr before the output ended.
 * - `source_failed`: the attach stream itself failed; `cause` is its error.
 */
export type DockerEngineOutputErrorCode = "output_limit" | "framing" | "abandoned" | "source_failed";

/**
 * A fault of an exec's multiplexed output (Docker Engine API attach stream, non-TTY), raised
 * by the demultiplexer; `lib/docker` maps it to the sandbox error of its code.
 *
 * @example
 * ```ts
 * import { DockerEngineOutputError } from "./errors.ts";
 *
 * const error = new DockerEngineOutputError("framing", "Cannot demultiplex process output: a frame header names stream type 7");
 * console.log(error.code, error.name); // framing DockerEngineOutputError
 * ```
 */
export class DockerEngineOutputError extends Error {
  /** Always `"DockerEngineOutputError"`. */
  override readonly name: string = "DockerEngineOutputError";
  /** What went wrong, stable across releases; see {@linkcode DockerEngineOutputErrorCode}. */
  readonly code: DockerEngineOutputErrorCode;

  /**
   * Creates the error.
   *
   * @param code Stable error code.
   * @param message "Cannot demultiplex process output: <reason>".
   * @param options `cause`: the source's error for `source_failed`, the cancel reason for `abandoned`.
   */
  constructor(code: DockerEngineOutputErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
