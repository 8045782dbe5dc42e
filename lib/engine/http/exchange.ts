/**
 * One streaming HTTP/1.1 exchange with the Docker Engine over its Unix socket.
 *
 * @module
 */
import { bodyDecoder } from "./_body_decoder.ts";
import { responseFraming } from "./_framing.ts";
import { ExchangeGuard } from "./_guard.ts";
import { openExchange } from "./_open.ts";
import { type EngineExchangeOptions, parseRequest } from "./exchange_options.ts";
import { ResponseBody } from "./_response_body.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { MAX_RESPONSE_HEAD_BYTES } from "./limits.ts";

export type { EngineExchangeOptions, EngineMethod } from "./exchange_options.ts";

/** The answer of {@linkcode exchange}: head parsed, body still on the wire. */
export interface EngineResponse {
  /** HTTP status, 200–599 (1xx interim answers are skipped; 101 is an error). */
  readonly status: number;
  /** Response header fields. */
  readonly headers: Headers;
  /**
   * The decoded body (`Content-Length`, chunked or close-delimited; empty for `HEAD`,
   * 204 and 304) in pieces of at most `chunkBytes`. Pull-based: the socket is read only
   * while the consumer reads. The caller must read it to the end or cancel it;
   * cancelling aborts the connection. It ends where the framing says the body ends, and
   * the connection is closed then, even when the server would keep it open (a keep-alive
   * server or socket proxy); only a close-delimited body waits for the peer's close. It
   * fails with a `DockerEngineTransportError`: `invalid_response` when truncated, badly
   * framed or followed by bytes that arrived with its end,
   * `response_limit` past `maxBodyBytes`, `deadline` when `timeoutMs` passes, `aborted`
   * when the signal fires, `connection` when the socket fails.
   */
  readonly body: ReadableStream<Uint8Array>;
  /**
   * Request body bytes written to the socket so far (framing excluded).
   *
   * @returns The count, in bytes.
   */
  uploadedBytes(): bigint;
  /**
   * Response body bytes delivered by `body` so far.
   *
   * @returns The count, in bytes.
   */
  downloadedBytes(): bigint;
}

/**
 * Sends one request on a fresh connection (`Connection: close`) and resolves once the
 * response head is parsed; the body streams after. The response is complete when its
 * framing says so (`Content-Length`, the last chunk, no body for `HEAD`/204/304): our side
 * then closes the connection without waiting for the peer to close it, so a keep-alive
 * server or socket proxy in front of the Engine does not stall a request. If the Engine
 * answers with a status of 300 or more before the request body was fully sent, no further
 * body chunk is read (pieces already queued on the socket, at most 256 KiB, may still go
 * out) and the body stream is cancelled.
 *
 * Bounds: head 16 KiB ({@linkcode MAX_RESPONSE_HEAD_BYTES}), chunk-size line 4 KiB,
 * trailers 16 KiB, body `maxBodyBytes`. Deadlines: connect, header, whole; all timers and
 * the abort listener are removed when the exchange ends, however it ends.
 *
 * @param options Socket, request, deadlines, limits and signal.
 * @returns Status, headers, the body stream and byte counters.
 * @throws {TypeError} When an option is invalid (before any I/O).
 * @throws {DockerEngineTransportError} `connection` when connecting fails or the Engine
 * closes without answering; `deadline` when the connect or header deadline (or
 * `timeoutMs`) passes; `aborted` when the signal fires or the request body stream
 * fails; `response_limit` for a head over 16 KiB; `invalid_response` for a malformed
 * head, conflicting framing, or a `101` the request did not ask for.
 *
 * @example List containers
 * ```ts ignore
 * // ignore: needs a Docker Engine socket
 * import { exchange } from "./exchange.ts";
 *
 * const response = await exchange({
 *   socketPath: "/var/run/docker.sock",
 *   method: "GET",
 *   target: "/v1.51/containers/json",
 *   timeoutMs: 30_000,
 *   maxBodyBytes: 4 * 1024 * 1024,
 * });
 * const text = await new Response(response.body).text();
 * console.log(response.status, text, response.downloadedBytes());
 * ```
 */
export async function exchange(options: EngineExchangeOptions): Promise<EngineResponse> {
  const request = parseRequest(options);
  const guard = new ExchangeGuard(request.signal);
  if (request.timeoutMs !== undefined) {
    guard.startDeadline(
      "whole",
      request.timeoutMs,
      `Cannot complete the Engine request: it took longer than ${request.timeoutMs} ms`,
    );
  }
  try {
    const opened = await openExchange(request, guard, false, MAX_RESPONSE_HEAD_BYTES);
    const { head, reader, upload } = opened;
    if (head.status === 101) {
      throw new DockerEngineTransportError(
        "invalid_response",
        "Cannot read the response: the Engine switched protocols (101) on a request that did not ask to upgrade",
      );
    }
    const framing = responseFraming(head, request.method);
    if (head.status >= 300) upload.stop();
    const body = new ResponseBody(opened, bodyDecoder(framing, reader), guard, {
      chunkBytes: request.chunkBytes,
      maxBodyBytes: request.maxBodyBytes,
      declaredLength: framing.kind === "length" ? framing.length : undefined,
    });
    return {
      status: head.status,
      headers: head.headers,
      body: body.stream,
      uploadedBytes: () => BigInt(upload.bytes),
      downloadedBytes: () => BigInt(body.bytes),
    };
  } catch (error) {
    throw guard.failWith(error);
  }
}
