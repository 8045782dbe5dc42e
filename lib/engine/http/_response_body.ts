/**
 * A response body as a pull-based `ReadableStream<Uint8Array>`: the connection is read
 * only while the consumer pulls, pieces are at most `chunkBytes`, the body limit is
 * enforced, and the body ends where its framing says (`Content-Length`, the last chunk,
 * nothing for `HEAD`/204/304), at which point our side closes the connection; only a
 * close-delimited body waits for the peer's close.
 *
 * @module
 */
import type { BodyDecoder } from "./_body_decoder.ts";
import type { ExchangeGuard } from "./_guard.ts";
import type { OpenedExchange } from "./_open.ts";
import { DockerEngineTransportError } from "../errors.ts";

/** Bounds of one response body. */
export interface ResponseBodyLimits {
  /** Largest piece delivered at once, in bytes. */
  readonly chunkBytes: number;
  /** Most body bytes accepted. */
  readonly maxBodyBytes: number;
  /** `Content-Length`, when the response declared one. */
  readonly declaredLength: number | undefined;
}

/**
 * The body stream of one exchange and its byte count. Ending it in any way (complete,
 * failed, cancelled) releases the guard and closes or aborts the connection.
 */
export class ResponseBody {
  /** The decoded body; the consumer must read it to the end or cancel it. */
  readonly stream: ReadableStream<Uint8Array>;
  #bytes = 0;

  /**
   * Creates the body stream; it reads nothing until the consumer pulls.
   *
   * @param opened The connection, positioned at the first body byte.
   * @param decoder The body decoder for the response's framing.
   * @param guard The exchange's guard; its failures error the stream.
   * @param limits Piece size, body limit, declared length.
   */
  constructor(
    opened: OpenedExchange,
    decoder: BodyDecoder,
    guard: ExchangeGuard,
    limits: ResponseBodyLimits,
  ) {
    const { connection, reader, upload } = opened;
    const { chunkBytes, maxBodyBytes, declaredLength } = limits;
    const overLimit = () =>
      new DockerEngineTransportError(
        "response_limit",
        `Cannot read the response body: it exceeds the limit of ${maxBodyBytes} bytes`,
      );
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => guard.onFailure((error) => controller.error(error)),
      pull: async (controller) => {
        try {
          if (declaredLength !== undefined && declaredLength > maxBodyBytes) throw overLimit();
          const piece = await decoder.next(chunkBytes);
          if (piece !== null) {
            if (piece.byteLength > maxBodyBytes - this.#bytes) throw overLimit();
            this.#bytes += piece.byteLength;
            controller.enqueue(piece);
            return;
          }
          if (!upload.complete) {
            // An early answer (an error before the request body was sent): the Engine may
            // keep the connection open until it has read the rest of the body, which will
            // never come, so its close is not awaited; the connection is aborted instead.
            guard.release();
            upload.stop();
            connection.abort();
            controller.close();
            return;
          }
          // The framing says the body is complete. The request said `Connection: close` and
          // the Engine (Go net/http) closes right after the body, but a keep-alive server or
          // a socket proxy in front of the Engine may keep the connection open: waiting for
          // the peer's close would hang until a deadline. Our side closes now instead. Bytes
          // that arrived together with the body's end are still caught; later ones are never
          // read.
          if (reader.buffered > 0) {
            throw new DockerEngineTransportError(
              "invalid_response",
              "Cannot read the response: the Engine sent more bytes than the body declared",
            );
          }
          guard.release();
          await connection.close();
          controller.close();
        } catch (error) {
          controller.error(guard.failWith(error));
        }
      },
      cancel: (reason) => {
        guard.release();
        upload.stop();
        connection.abort(reason);
      },
    }, { highWaterMark: 0 });
  }

  /** Body bytes delivered so far. */
  get bytes(): number {
    return this.#bytes;
  }
}
