/**
 * A bounded, buffered exchange with the Docker Engine: whole deadline, body limit,
 * body returned as bytes.
 *
 * @module
 */
import { concatBytes } from "../../streams/concat_bytes.ts";
import { type EngineExchangeOptions, exchange } from "./exchange.ts";
import { validateEngineRequest } from "./validate.ts";

/** Options of {@linkcode requestBuffered}. */
export interface EngineBufferedRequestOptions
  extends Omit<EngineExchangeOptions, "timeoutMs" | "maxBodyBytes"> {
  /**
   * Time allowed for the whole exchange, response body included, in milliseconds (a safe
   * integer from 1 to 2^31 − 1). Required: a buffered request always ends.
   */
  readonly timeoutMs: number;
  /**
   * Most response body bytes accepted (a non-negative safe integer). Required: a
   * buffered body is always bounded. The head is bounded separately (16 KiB).
   */
  readonly maxResponseBytes: number;
}

/** The answer of {@linkcode requestBuffered}. */
export interface EngineBufferedResponse {
  /** HTTP status, 200–599. */
  readonly status: number;
  /** Response header fields. */
  readonly headers: Headers;
  /** The whole decoded body (empty for `HEAD`, 204 and 304). */
  readonly body: Uint8Array;
}

/**
 * Sends one request and reads the whole response into memory, within `timeoutMs` and
 * `maxResponseBytes`. Any status is returned as is; mapping statuses to errors is the
 * caller's business.
 *
 * @param options As for `exchange`, with a required whole deadline and body limit.
 * @returns Status, headers and body bytes.
 * @throws {TypeError} When the target, `timeoutMs`, `maxResponseBytes` or another option
 * is invalid (see `validateEngineRequest`).
 * @throws {DockerEngineTransportError} `deadline` when `timeoutMs` (or the connect or
 * header deadline) passes; `response_limit` when the body exceeds `maxResponseBytes` or
 * the head 16 KiB; `invalid_response` for a malformed, truncated or over-long response;
 * `aborted` when the signal fires; `connection` when the socket fails.
 *
 * @example Ping the Engine
 * ```ts ignore
 * // ignore: needs a Docker Engine socket
 * import { requestBuffered } from "./request_buffered.ts";
 *
 * const reply = await requestBuffered({
 *   socketPath: "/var/run/docker.sock",
 *   method: "GET",
 *   target: "/_ping",
 *   timeoutMs: 5_000,
 *   maxResponseBytes: 1_024,
 * });
 * console.log(reply.status, new TextDecoder().decode(reply.body)); // 200 OK
 * ```
 */
export async function requestBuffered(
  options: EngineBufferedRequestOptions,
): Promise<EngineBufferedResponse> {
  validateEngineRequest(options.target, options);
  const { maxResponseBytes, ...rest } = options;
  const response = await exchange({ ...rest, maxBodyBytes: maxResponseBytes });
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  const body = concatBytes(parts);
  return { status: response.status, headers: response.headers, body };
}
