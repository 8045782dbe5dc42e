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
import { offerDirectReads } from "../../streams/chunk_reader.ts";

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
  /**
   * The decoded body; the consumer must read it to the end or cancel it. It offers direct
   * reads (`lib/streams/chunk_reader.ts`), so a reader inside the library (the tar reader of
   * an export) takes the pieces without a stream hop.
   */
  readonly stream: ReadableStream<Uint8Array>;
  #bytes = 0;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  /** How the body ended, once it did: `null` complete, else the error it failed with. */
  #end: { failure: unknown } | null | undefined;
  readonly #opened: OpenedExchange;
  readonly #decoder: BodyDecoder;
  readonly #guard: ExchangeGuard;
  readonly #limits: ResponseBodyLimits;

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
    this.#opened = opened;
    this.#decoder = decoder;
    this.#guard = guard;
    this.#limits = limits;
    const cancel = (reason: unknown) => {
      guard.release();
      opened.upload.stop();
      opened.connection.abort(reason);
    };
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        guard.onFailure((error) => this.#fail(error));
      },
      pull: async (controller) => {
        try {
          const piece = await this.#next();
          if (piece !== null) controller.enqueue(piece);
        } catch {
          // #next errored the stream already.
        }
      },
      cancel,
    }, { highWaterMark: 0 });
    offerDirectReads(this.stream, {
      read: () => this.#next(),
      cancel: (reason) => {
        if (this.#end === undefined) {
          this.#end = { failure: reason };
          cancel(reason);
        }
        return Promise.resolve();
      },
    });
  }

  #fail(error: unknown): void {
    if (this.#end !== undefined) return;
    this.#end = { failure: error };
    this.#controller.error(error);
  }

  /**
   * The next piece, `null` once the body is complete (the stream is then closed); throws
   * once it failed (the stream is then errored with the same error). The one read path of
   * the stream's `pull` and its direct reads.
   */
  async #next(): Promise<Uint8Array | null> {
    if (this.#end !== undefined) return this.#ended();
    const { connection, reader, upload } = this.#opened;
    const guard = this.#guard;
    const { chunkBytes, maxBodyBytes, declaredLength } = this.#limits;
    const overLimit = () =>
      new DockerEngineTransportError(
        "response_limit",
        `Cannot read the response body: it exceeds the limit of ${maxBodyBytes} bytes`,
      );
    try {
      if (declaredLength !== undefined && declaredLength > maxBodyBytes) throw overLimit();
      const piece = await this.#decoder.next(chunkBytes);
      // Failed or cancelled while the piece was on its way.
      if (this.#end !== undefined) return this.#ended();
      if (piece !== null) {
        if (piece.byteLength > maxBodyBytes - this.#bytes) throw overLimit();
        this.#bytes += piece.byteLength;
        return piece;
      }
      if (!upload.complete) {
        // An early answer (an error before the request body was sent): the Engine may
        // keep the connection open until it has read the rest of the body, which will
        // never come, so its close is not awaited; the connection is aborted instead.
        guard.release();
        upload.stop();
        connection.abort();
        this.#close();
        return null;
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
      this.#close();
      return null;
    } catch (error) {
      if (this.#end === undefined) this.#fail(guard.failWith(error));
      return this.#ended();
    }
  }

  /** For a body that ended: `null` when it completed; throws its failure otherwise. */
  #ended(): null {
    const end = this.#end;
    if (end === null || end === undefined) return null;
    throw end.failure;
  }

  #close(): void {
    if (this.#end !== undefined) return;
    this.#end = null;
    this.#controller.close();
  }

  /** Body bytes delivered so far. */
  get bytes(): number {
    return this.#bytes;
  }
}
