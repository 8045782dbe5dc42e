/**
 * The part every exchange shares: connect within the connect deadline, send the request,
 * and read the final response head within the header deadline.
 *
 * @module
 */
import type { SocketConnection } from "../socket/types.ts";
import { ByteReader } from "../../streams/byte_reader.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import type { ExchangeGuard } from "./_guard.ts";
import { readResponseHead, type ResponseHead } from "./_head.ts";
import type { ParsedRequest } from "./exchange_options.ts";
import { encodeRequestHead, RequestUpload } from "./_request.ts";

/** A connection whose final response head has been read. */
export interface OpenedExchange {
  /** The connection, owned by the exchange's guard. */
  readonly connection: SocketConnection;
  /** The connection's bytes, positioned at the first byte after the head. */
  readonly reader: ByteReader;
  /** The final head (not 1xx, except 101). */
  readonly head: ResponseHead;
  /** The request upload, possibly still running. */
  readonly upload: RequestUpload;
}

/**
 * Runs the connector, giving up as soon as `signal` aborts even if the connector does
 * not honour it; a connection that arrives after that is aborted.
 */
function connect(request: ParsedRequest, signal: AbortSignal): Promise<SocketConnection> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return raceDeadline(request.connector(request.socketPath, { signal }), {
    signal,
    onAbort: (reason) => reason,
    onLate: (connection) => connection.abort(signal.reason),
  });
}

/**
 * Connects, sends the request and reads the final head (skipping 1xx interim answers
 * other than 101; all heads together stay within `maxHeadBytes`). The header deadline
 * starts when the request is fully sent and stops when the head is parsed.
 *
 * @param request The validated request.
 * @param guard The exchange's guard; it adopts the connection.
 * @param upgrade Whether to ask for `Connection: Upgrade` / `Upgrade: tcp`.
 * @param maxHeadBytes Most bytes the heads may take.
 * @returns The connection, its reader, the head and the upload.
 * @throws {DockerEngineTransportError} Whatever failed first; the caller passes it to
 * `guard.failWith`.
 */
export async function openExchange(
  request: ParsedRequest,
  guard: ExchangeGuard,
  upgrade: boolean,
  maxHeadBytes: number,
): Promise<OpenedExchange> {
  guard.startDeadline(
    "connect",
    request.connectTimeoutMs,
    `Cannot connect to ${request.socketPath}: no connection within ${request.connectTimeoutMs} ms`,
  );
  const connection = await connect(request, guard.signal);
  guard.clearDeadline("connect");
  guard.adopt(connection);
  const reader = new ByteReader(connection.readable);
  const upload = new RequestUpload(
    connection.writable,
    encodeRequestHead({ ...request, upgrade }),
    request.body,
    guard,
    request.onBodyChunkSent,
  );
  // A failed exchange stops the upload, which cancels a body stream waiting for its next chunk.
  guard.onFailure(() => upload.stop());
  let headRead = false;
  upload.done.then(() => {
    if (headRead) return;
    guard.startDeadline(
      "header",
      request.headerTimeoutMs,
      `Cannot read the response head: none within ${request.headerTimeoutMs} ms after the request was sent`,
    );
  });
  let head: ResponseHead;
  let budget = maxHeadBytes;
  do {
    head = await readResponseHead(reader, budget, maxHeadBytes);
    budget -= head.byteLength;
  } while (head.status < 200 && head.status !== 101);
  headRead = true;
  guard.clearDeadline("header");
  return { connection, reader, head, upload };
}
