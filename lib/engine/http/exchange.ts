/**
 * One streaming HTTP/1.1 exchange with the Docker Engine over its Unix socket.
 *
 * @module
 */
import type { UnixConnector } from "../socket/types.ts";
import { bodyDecoder } from "./_body_decoder.ts";
import { responseFraming } from "./_framing.ts";
import { ExchangeGuard } from "./_guard.ts";
import { openExchange } from "./_open.ts";
import { parseRequest } from "./_options.ts";
import { ResponseBody } from "./_response_body.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { MAX_RESPONSE_HEAD_BYTES } from "./limits.ts";

/** An HTTP method the Engine API uses. */
export type EngineMethod = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";

/** Options of {@linkcode exchange}. */
export interface EngineExchangeOptions {
  /** Absolute path of the Engine's Unix socket, e.g. `/var/run/docker.sock`. */
  readonly socketPath: string;
  /** Request method. A body is allowed with `POST` and `PUT` only. */
  readonly method: EngineMethod;
  /**
   * Origin-form request target, e.g. `/v1.51/containers/json?all=1`: starts with `/` (not
   * `//`), printable ASCII without `\` or `#`, at most 16,384 characters.
   */
  readonly target: string;
  /**
   * Extra request header fields: token names, printable ASCII values. The client writes
   * `Host`, `Connection`, `Upgrade`, `Content-Length`, `Transfer-Encoding` and
   * `Content-Type` itself; passing them (or `TE`, `Trailer`, `Keep-Alive`,
   * `Proxy-Connection`, `Expect`) is a `TypeError`.
   *
   * @default {} (none)
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Request body: bytes are sent with `Content-Length`; a stream is sent with chunked
   * transfer coding as the consumer (the socket) drains it, which the Engine accepts for
   * `PUT /containers/{id}/archive` and `POST /images/create?fromSrc=-`. The stream is
   * cancelled when the exchange ends before it was fully sent.
   *
   * @default undefined (no body; `POST`/`PUT` send `Content-Length: 0`)
   */
  readonly body?: Uint8Array | ReadableStream<Uint8Array>;
  /**
   * Called with each non-empty chunk of a stream `body`, in order, once the kernel has
   * every byte of it and the runtime holds no reference to it: from then on the producer
   * may reuse the chunk's memory (a pool of read buffers, say). Not called for a chunk that
   * was not sent completely, nor for empty chunks. The guarantee is the built-in
   * connector's; a replacement `connector` that keeps chunks (wrapping the socket in a
   * `TransformStream`, say) must keep it too. An exception it throws fails the exchange with
   * `aborted`.
   *
   * @default undefined (no notice)
   */
  readonly onBodyChunkSent?: (chunk: Uint8Array) => void;
  /**
   * `Content-Type` of the body, e.g. `application/json` or `application/x-tar`.
   *
   * @default undefined (no Content-Type field)
   */
  readonly contentType?: string;
  /**
   * Time allowed for connecting, in milliseconds (1 … 2^31 − 1).
   *
   * @default {10000}
   */
  readonly connectTimeoutMs?: number;
  /**
   * Time allowed from the request (body included) being fully sent until the response
   * head is parsed, in milliseconds (1 … 2^31 − 1).
   *
   * @default {60000}
   */
  readonly headerTimeoutMs?: number;
  /**
   * Time allowed for the whole exchange, response body included, in milliseconds
   * (1 … 2^31 − 1).
   *
   * @default undefined (no whole-exchange deadline)
   */
  readonly timeoutMs?: number;
  /**
   * Most response body bytes accepted (a non-negative safe integer); more fail the body
   * stream with `response_limit`.
   *
   * @default {Number.MAX_SAFE_INTEGER} (unlimited)
   */
  readonly maxBodyBytes?: number;
  /**
   * Largest piece the body stream delivers at once, in bytes (1 … 65,536).
   *
   * @default {65536}
   */
  readonly chunkBytes?: number;
  /**
   * Aborts the exchange at any stage, the response body included: the pending promise or
   * the body stream fails with `aborted` and the connection is aborted.
   *
   * @default undefined (no signal)
   */
  readonly signal?: AbortSignal;
  /**
   * Opens the connection; replace it to wrap or observe the socket.
   *
   * @default connectUnixSocket (the running runtime's adapter)
   */
  readonly connector?: UnixConnector;
}

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
