/**
 * The one error class of the Engine transport (Unix socket + HTTP/1.1 codec).
 *
 * @module
 */

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
