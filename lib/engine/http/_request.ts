/**
 * Writes one HTTP/1.1 request: its head, then its body with `Content-Length` (bytes) or
 * chunked transfer coding (a stream), with backpressure and a count of body bytes sent.
 *
 * @module
 */
import { concatBytes } from "../../streams/concat_bytes.ts";
import type { ExchangeGuard } from "./_guard.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { MAX_CHUNK_BYTES } from "./limits.ts";
import { reasonOf } from "../../internal/reason.ts";

const encoder = new TextEncoder();
const CRLF = encoder.encode("\r\n");
const LAST_CHUNK = encoder.encode("0\r\n\r\n");

/** What the request head says, all of it validated before. */
export interface RequestHeadFields {
  /** Request method. */
  readonly method: string;
  /** Origin-form target. */
  readonly target: string;
  /** `Connection: Upgrade` + `Upgrade: tcp` instead of `Connection: close`. */
  readonly upgrade: boolean;
  /** `Content-Type`, if any. */
  readonly contentType?: string;
  /** Extra header fields. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The body: its kind and length decide `Content-Length` or `Transfer-Encoding`. */
  readonly body?: Uint8Array | ReadableStream<Uint8Array>;
}

/**
 * Encodes the request line and header fields, ending with the blank line.
 *
 * @param fields Method, target, upgrade, content type, extra headers, body.
 * @returns The head bytes (ASCII).
 */
export function encodeRequestHead(fields: RequestHeadFields): Uint8Array {
  const lines = [`${fields.method} ${fields.target} HTTP/1.1`, "Host: docker"];
  if (fields.upgrade) lines.push("Connection: Upgrade", "Upgrade: tcp");
  else lines.push("Connection: close");
  if (fields.contentType !== undefined) lines.push(`Content-Type: ${fields.contentType}`);
  if (fields.body instanceof ReadableStream) lines.push("Transfer-Encoding: chunked");
  else if (fields.body !== undefined) lines.push(`Content-Length: ${fields.body.byteLength}`);
  else if (fields.method === "POST" || fields.method === "PUT") lines.push("Content-Length: 0");
  for (const [name, value] of Object.entries(fields.headers ?? {})) lines.push(`${name}: ${value}`);
  return encoder.encode(`${lines.join("\r\n")}\r\n\r\n`);
}

/**
 * Sends a request on a connection. It runs by itself from construction on; the response
 * is read meanwhile, so an Engine that answers before reading the whole body is heard.
 */
export class RequestUpload {
  /** `true` once every byte of the request was written; `false` if stopped or failed. */
  readonly done: Promise<boolean>;
  #bytes = 0;
  #stopped = false;
  #finished = false;
  #complete = false;
  #source: ReadableStreamDefaultReader<Uint8Array> | undefined;
  readonly #onChunkSent: ((chunk: Uint8Array) => void) | undefined;

  /**
   * Starts writing.
   *
   * @param writable The connection's writable; locked until the upload ends.
   * @param head The encoded request head.
   * @param body The request body, if any.
   * @param guard Fails the exchange with `aborted` when `body` (a stream) errors.
   * @param onChunkSent Told of each chunk of a stream body once the kernel has all of it.
   */
  constructor(
    writable: WritableStream<Uint8Array>,
    head: Uint8Array,
    body: Uint8Array | ReadableStream<Uint8Array> | undefined,
    guard: ExchangeGuard,
    onChunkSent?: (chunk: Uint8Array) => void,
  ) {
    this.#onChunkSent = onChunkSent;
    this.done = this.#run(writable.getWriter(), head, body, guard).then((complete) => {
      this.#finished = true;
      this.#complete = complete;
      return complete;
    });
  }

  /** Body bytes written so far (framing excluded). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whether every byte of the request was written. */
  get complete(): boolean {
    return this.#complete;
  }

  /** Stops after the write in flight and cancels the body stream. */
  stop(): void {
    if (this.#stopped || this.#finished) return;
    this.#stopped = true;
    this.#source?.cancel(
      new DockerEngineTransportError(
        "aborted",
        "Cannot send the rest of the request body: the exchange ended first",
      ),
    ).catch(() => {});
  }

  async #run(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    head: Uint8Array,
    body: Uint8Array | ReadableStream<Uint8Array> | undefined,
    guard: ExchangeGuard,
  ): Promise<boolean> {
    try {
      if (body instanceof ReadableStream) {
        await writer.write(head);
        return await this.#writeChunked(writer, body, guard);
      }
      if (body === undefined || body.byteLength <= MAX_CHUNK_BYTES) {
        await writer.write(body === undefined ? head : concatBytes([head, body]));
        this.#bytes = body?.byteLength ?? 0;
        return true;
      }
      await writer.write(head);
      for (let offset = 0; offset < body.byteLength; offset += MAX_CHUNK_BYTES) {
        if (this.#stopped) return false;
        const slice = body.subarray(offset, offset + MAX_CHUNK_BYTES);
        await writer.write(slice);
        this.#bytes += slice.byteLength;
      }
      return true;
    } catch {
      // The connection failed; reading the response tells what happened.
      return false;
    } finally {
      writer.releaseLock();
    }
  }

  async #writeChunked(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    body: ReadableStream<Uint8Array>,
    guard: ExchangeGuard,
  ): Promise<boolean> {
    const source = body.getReader();
    this.#source = source;
    let complete = false;
    let first = true;
    // Writes are queued without awaiting each one (`writer.ready` bounds the queue), so the
    // next chunk is read from the body while earlier ones reach the kernel. A failed write
    // errors the writable, which `writer.ready` and the last write then report.
    let lastWrite: Promise<void> = Promise.resolve();
    const queue = (bytes: Uint8Array): Promise<void> => {
      const written = writer.write(bytes);
      written.catch(() => {});
      lastWrite = written;
      return written;
    };
    try {
      for (;;) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await source.read();
          if (!result.done && !(result.value instanceof Uint8Array)) {
            throw new TypeError("a request body chunk is not a Uint8Array");
          }
        } catch (error) {
          if (this.#stopped) return false;
          // What was queued before the failure still reaches the Engine, as it would have
          // with every write awaited: the caller's account of what was sent stays exact.
          await lastWrite.catch(() => {});
          guard.fail(
            new DockerEngineTransportError(
              "aborted",
              `Cannot send the request body: the body stream failed: ${reasonOf(error)}`,
              { cause: error },
            ),
          );
          return false;
        }
        if (this.#stopped) return false;
        if (result.done) break;
        const chunk = result.value;
        let last: Promise<void> | undefined;
        for (let offset = 0; offset < chunk.byteLength; offset += MAX_CHUNK_BYTES) {
          await writer.ready;
          if (this.#stopped) return false;
          const slice = chunk.subarray(offset, offset + MAX_CHUNK_BYTES);
          // Two writes per piece and no copy of the data: the CRLF that ends the previous
          // piece travels with this piece's size line.
          queue(encoder.encode(`${first ? "" : "\r\n"}${slice.byteLength.toString(16)}\r\n`));
          first = false;
          last = queue(slice);
          last.then(() => {
            this.#bytes += slice.byteLength;
          }, () => {});
        }
        if (last !== undefined && this.#onChunkSent !== undefined) this.#notifySent(last, chunk, guard);
      }
      await queue(first ? LAST_CHUNK : concatBytes([CRLF, LAST_CHUNK]));
      complete = true;
      return true;
    } finally {
      // Tell the producer to stop when its bytes will not all be sent.
      if (!complete) this.stop();
      else source.releaseLock();
    }
  }

  /** Tells `onChunkSent` of `chunk` once its last write settled well. */
  #notifySent(last: Promise<void>, chunk: Uint8Array, guard: ExchangeGuard): void {
    last.then(() => {
      try {
        this.#onChunkSent?.(chunk);
      } catch (error) {
        guard.fail(
          new DockerEngineTransportError(
            "aborted",
            `Cannot send the request body: onBodyChunkSent failed: ${reasonOf(error)}`,
            { cause: error },
          ),
        );
      }
    }, () => {});
  }
}
