/**
 * Upgrading an Engine connection to a raw byte stream (`Connection: Upgrade`,
 * `Upgrade: tcp`), as exec start and container attach do.
 *
 * @module
 */
import { socketConnectionFromRaw } from "../socket/raw_socket.ts";
import type { SocketConnection } from "../socket/types.ts";
import { bodyDecoder } from "./_body_decoder.ts";
import { responseFraming } from "./_framing.ts";
import { ExchangeGuard } from "./_guard.ts";
import { type OpenedExchange, openExchange } from "./_open.ts";
import { type ParsedRequest, parseRequest } from "./exchange_options.ts";
import { DockerEngineTransportError } from "../errors.ts";
import type { EngineExchangeOptions } from "./exchange.ts";
import { MAX_REFUSAL_BODY_BYTES, MAX_UPGRADE_HEAD_BYTES } from "./limits.ts";

/**
 * Options of {@linkcode upgrade}: those of `exchange` without the whole-exchange
 * deadline and the body limit (an upgraded stream lives as long as its owner wants).
 * `chunkBytes` bounds the pieces of the upgraded readable; `signal` aborts the upgraded
 * connection too, until it is closed.
 */
export type EngineUpgradeOptions = Omit<EngineExchangeOptions, "timeoutMs" | "maxBodyBytes">;

/**
 * An upgraded connection: the `101` head, then raw bytes both ways. Bytes that arrived
 * together with the head come first in `readable`. `closeWrite()` (or closing
 * `writable`) sends FIN and keeps reading, as exec stdin end-of-file needs. The caller
 * owns it and must `close()` or `abort()` it.
 */
export interface EngineUpgrade extends SocketConnection {
  /** Always `101` (Switching Protocols). */
  readonly status: 101;
  /** Header fields of the `101` answer. */
  readonly headers: Headers;
}

/**
 * Sends a request asking to upgrade the connection (`Connection: Upgrade`,
 * `Upgrade: tcp`) and requires `101 Switching Protocols`. The head may take 64 KiB
 * ({@linkcode MAX_UPGRADE_HEAD_BYTES}). On any failure the connection is aborted.
 *
 * @param options Socket, request, connect and header deadlines, piece size, signal.
 * @returns The upgraded connection, readable pieces of at most `chunkBytes`.
 * @throws {TypeError} When an option is invalid (before any I/O).
 * @throws {DockerEngineTransportError} `invalid_response` with `status` and `body` (its
 * first 4 KiB, of which 1,024 characters are quoted in the message) when the Engine
 * answers anything but `101`, e.g. 404 for an unknown exec or 409 for a stopped
 * container; `connection`, `deadline` (connect or header), `aborted`, `response_limit`
 * (head over 64 KiB) or `invalid_response` (malformed head) as for `exchange`.
 *
 * @example Start an exec attached to stdin, stdout and stderr
 * ```ts ignore
 * // ignore: needs a Docker Engine socket and a created exec
 * import { upgrade } from "./upgrade.ts";
 *
 * const attach = await upgrade({
 *   socketPath: "/var/run/docker.sock",
 *   method: "POST",
 *   target: "/v1.51/exec/0123abcd/start",
 *   body: new TextEncoder().encode(JSON.stringify({ Detach: false, Tty: false })),
 *   contentType: "application/json",
 * });
 * const stdin = attach.writable.getWriter();
 * await stdin.write(new TextEncoder().encode("input"));
 * await stdin.close(); // FIN: the process sees end of file, output keeps coming
 * for await (const frames of attach.readable) console.log(frames.byteLength);
 * await attach.close();
 * ```
 */
export async function upgrade(options: EngineUpgradeOptions): Promise<EngineUpgrade> {
  const request = parseRequest({ ...options, timeoutMs: undefined, maxBodyBytes: undefined });
  const guard = new ExchangeGuard(request.signal);
  try {
    const opened = await openExchange(request, guard, true, MAX_UPGRADE_HEAD_BYTES);
    if (opened.head.status !== 101) throw await refusal(opened, request, guard);
    // The Engine reads the request body before switching; wait for our side to finish.
    guard.startDeadline(
      "header",
      request.headerTimeoutMs,
      `Cannot upgrade the connection: the request was not sent within ${request.headerTimeoutMs} ms`,
    );
    if (!(await opened.upload.done)) {
      throw new DockerEngineTransportError(
        "connection",
        "Cannot upgrade the connection: the request could not be sent completely",
      );
    }
    guard.clearDeadline("header");
    return upgraded(opened, guard, request.chunkBytes);
  } catch (error) {
    throw guard.failWith(error);
  }
}

/** Most characters of a refusal body quoted in the error message. */
const MAX_QUOTED_CHARS = 1_024;

/** The error for a non-101 answer, with the first bytes of its body. */
async function refusal(
  opened: OpenedExchange,
  request: ParsedRequest,
  guard: ExchangeGuard,
): Promise<DockerEngineTransportError> {
  const { head, reader, upload } = opened;
  upload.stop();
  guard.startDeadline(
    "header",
    request.headerTimeoutMs,
    `Cannot upgrade the connection: the refusal body did not arrive within ${request.headerTimeoutMs} ms`,
  );
  const body = new Uint8Array(MAX_REFUSAL_BODY_BYTES);
  let length = 0;
  try {
    const decoder = bodyDecoder(responseFraming(head, request.method), reader);
    while (length < body.byteLength) {
      const piece = await decoder.next(body.byteLength - length);
      if (piece === null) break;
      body.set(piece, length);
      length += piece.byteLength;
    }
  } catch (error) {
    // The status is the news; a broken body only shortens the quote, unless we gave up.
    if (guard.failure !== undefined) throw error;
  }
  const snippet = body.slice(0, length);
  // deno-lint-ignore no-control-regex
  const text = new TextDecoder().decode(snippet).replace(/[\u0000-\u001f\u007f]+/gu, " ").trim()
    .slice(0, MAX_QUOTED_CHARS);
  return new DockerEngineTransportError(
    "invalid_response",
    `Cannot upgrade the connection: the Engine answered ${head.status} ${head.reason}`.trimEnd() +
      (text === "" ? " instead of 101" : ` instead of 101: ${text}`),
    { status: head.status, body: snippet },
  );
}

/**
 * Why the connection under an upgraded stream is aborted once that stream ends. Nobody sees
 * it (the upgraded stream reports its own end or failure), so it is made once: every exec
 * ends its connection so, and an error made per call (its stack captured) cost a visible
 * part of a run's CPU time on Node (profiled on Node 26).
 */
const RELEASED = new DockerEngineTransportError("aborted", "Cannot use the connection: its upgraded stream ended");

/** The upgraded connection over the exchange's connection and reader. */
function upgraded(opened: OpenedExchange, guard: ExchangeGuard, chunkBytes: number): EngineUpgrade {
  const { connection, reader, head } = opened;
  const writer = connection.writable.getWriter();
  const stream = socketConnectionFromRaw({
    // Bytes that came with the head are buffered in the reader and come out first.
    read: () => reader.read(chunkBytes),
    write: (chunk) => writer.write(chunk),
    shutdown: () => writer.close(),
    destroy: () => {
      guard.release();
      connection.abort(RELEASED);
    },
  });
  guard.onFailure((error) => stream.abort(error));
  return {
    status: 101,
    headers: head.headers,
    readable: stream.readable,
    writable: stream.writable,
    closeWrite: () => stream.closeWrite(),
    close: () => stream.close(),
    abort: (reason) => stream.abort(reason),
  };
}
