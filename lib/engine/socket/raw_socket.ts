/**
 * Turns raw socket primitives into a {@linkcode SocketConnection} with pull-based Web
 * Streams. The three runtime adapters use it so the stream and lifecycle rules are
 * written once; the HTTP client uses it again for an upgraded connection.
 *
 * @module
 */
import { DockerEngineTransportError } from "../errors.ts";
import { offerDirectReads } from "../../streams/chunk_reader.ts";
import type { SocketConnection } from "./types.ts";

/**
 * Bytes a writer may queue on a connection's writable before `writer.ready` waits: the
 * runtime writes one chunk at a time, and the writer prepares the next ones meanwhile.
 */
export const WRITE_QUEUE_BYTES = 256 * 1024;

/** The primitives of one connected byte socket. */
export interface RawSocket {
  /**
   * Resolves with the next chunk, `null` at end of stream. Called only while a read of
   * the connection's readable is pending, never concurrently.
   */
  read(): Promise<Uint8Array | null>;
  /**
   * Resolves once the kernel has every byte of `chunk` and the runtime holds no reference
   * to it. Never called concurrently.
   */
  write(chunk: Uint8Array): Promise<void>;
  /** Sends FIN (shutdown of the write side); called once, after the last write settled. */
  shutdown(): Promise<void>;
  /**
   * Releases the socket now; pending `read`/`write` calls settle soon after (their
   * results are ignored). Called exactly once, on every way the connection ends.
   */
  destroy(): void;
}

/**
 * Wraps raw socket primitives as a {@linkcode SocketConnection}: a pull-based readable
 * (`highWaterMark: 0`, so `raw.read()` runs only while a read is pending), a writable
 * whose writes resolve when `raw.write()` does (chunks run one at a time; up to
 * {@linkcode WRITE_QUEUE_BYTES} may wait in its queue before `writer.ready` waits), an
 * idempotent `closeWrite()`, a graceful `close()` and an immediate `abort()`. The readable
 * offers direct reads (`lib/streams/chunk_reader.ts`): a `chunkReader` of it calls
 * `raw.read()` itself, with the same chunks, end and errors, and no stream hop.
 *
 * @param raw The primitives of one connected socket.
 * @returns The connection; its owner must `close()` or `abort()` it.
 *
 * @example An in-memory peer that answers once
 * ```ts
 * import { socketConnectionFromRaw } from "./raw_socket.ts";
 *
 * let answered = false;
 * const connection = socketConnectionFromRaw({
 *   read: () => Promise.resolve(answered ? null : (answered = true, new Uint8Array([1]))),
 *   write: () => Promise.resolve(),
 *   shutdown: () => Promise.resolve(),
 *   destroy: () => {},
 * });
 * for await (const chunk of connection.readable) console.log(chunk); // Uint8Array [ 1 ]
 * await connection.close();
 * ```
 */
export function socketConnectionFromRaw(raw: RawSocket): SocketConnection {
  return new StreamedSocket(raw);
}

/**
 * Describes a runtime error in one short phrase (its code first when it has one).
 *
 * @param error What the runtime threw.
 * @returns E.g. `connect ENOENT /var/run/docker.sock`.
 */
export function describeSocketError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const prefix = typeof code === "string" && code !== "" && !error.message.includes(code)
      ? `${code} `
      : "";
    return `${prefix}${error.message}`.trim() || error.name;
  }
  return String(error);
}

/** The error of a write after `close()`. */
function closedError(): DockerEngineTransportError {
  return new DockerEngineTransportError("connection", "Cannot write to the socket: it was closed");
}

function socketError(action: string, cause: unknown): DockerEngineTransportError {
  if (cause instanceof DockerEngineTransportError) return cause;
  return new DockerEngineTransportError(
    "connection",
    `Cannot ${action} the socket: ${describeSocketError(cause)}`,
    { cause },
  );
}

class StreamedSocket implements SocketConnection {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #raw: RawSocket;
  #readController!: ReadableStreamDefaultController<Uint8Array>;
  #writeController!: WritableStreamDefaultController;
  /** The write handed to the runtime and not yet settled (never rejects). */
  #writing: Promise<void> = Promise.resolve();
  #halfClosed: Promise<void> | undefined;
  #released = false;
  /** The error the connection failed with, once it did (boxed: a reason may be `undefined`). */
  #readFailure: { error: unknown } | undefined;
  /** Whether a direct read found the end and closed the readable. */
  #readEnded = false;

  constructor(raw: RawSocket) {
    this.#raw = raw;
    this.readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#readController = controller;
      },
      pull: (controller) => this.#pull(controller),
      cancel: (reason) => this.abort(reason),
    }, { highWaterMark: 0 });
    offerDirectReads(this.readable, {
      read: () => this.#readDirect(),
      cancel: (reason) => {
        // As cancelling the readable: nothing once it ended.
        if (!this.#readEnded) this.abort(reason);
        return Promise.resolve();
      },
    });
    this.writable = new WritableStream<Uint8Array>({
      start: (controller) => {
        this.#writeController = controller;
      },
      write: (chunk) => this.#write(chunk),
      close: () => this.#released ? Promise.reject(closedError()) : this.closeWrite(),
      abort: (reason) => this.abort(reason),
    }, new ByteLengthQueuingStrategy({ highWaterMark: WRITE_QUEUE_BYTES }));
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    let chunk: Uint8Array | null;
    try {
      chunk = await this.#next();
    } catch {
      return; // #next errored the stream already
    }
    if (chunk === null) {
      if (!this.#released) controller.close();
      return;
    }
    controller.enqueue(chunk);
  }

  /**
   * The next non-empty chunk from the socket, `null` at its end or once the connection was
   * closed; throws the connection's error once it failed or was aborted (the readable is
   * then errored with it). The one read path of both the readable's `pull` and its direct
   * reads.
   */
  async #next(): Promise<Uint8Array | null> {
    for (;;) {
      this.#throwIfFailed();
      if (this.#released) return null;
      let chunk: Uint8Array | null;
      try {
        chunk = await this.#raw.read();
      } catch (error) {
        if (!this.#released) this.abort(socketError("read from", error));
        this.#throwIfFailed();
        return null; // closed meanwhile: the read ends
      }
      this.#throwIfFailed();
      if (this.#released || chunk === null) return null;
      if (chunk.byteLength > 0) return chunk;
    }
  }

  #throwIfFailed(): void {
    if (this.#readFailure !== undefined) throw this.#readFailure.error;
  }

  /** A direct read: as `#next`, and the readable closes at the end as its `pull` would close it. */
  async #readDirect(): Promise<Uint8Array | null> {
    const chunk = await this.#next();
    if (chunk === null && !this.#released && !this.#readEnded) {
      this.#readEnded = true;
      this.#readController.close();
    }
    return chunk;
  }

  async #write(chunk: Uint8Array): Promise<void> {
    if (this.#released) throw closedError();
    if (this.#halfClosed !== undefined) {
      throw new DockerEngineTransportError(
        "connection",
        "Cannot write to the socket: its write side was closed",
      );
    }
    const written = this.#raw.write(chunk);
    this.#writing = written.then(() => {}, () => {});
    try {
      await written;
    } catch (error) {
      throw socketError("write to", error);
    }
  }

  closeWrite(): Promise<void> {
    this.#halfClosed ??= this.#writing.then(async () => {
      if (this.#released) return;
      try {
        await this.#raw.shutdown();
      } catch (error) {
        throw socketError("half-close", error);
      }
    });
    return this.#halfClosed;
  }

  async close(): Promise<void> {
    await this.#writing;
    if (this.#released) return;
    this.#released = true;
    this.#raw.destroy();
    try {
      if (!this.#readEnded) this.#readController.close();
    } catch {
      // Already closed or errored: nothing left to end.
    }
    // The writable is not errored here: a later write (or one still queued) fails in
    // `#write`, which makes its error only then. Every Engine request closes a connection,
    // and an error made eagerly (its stack captured) was a visible part of a request's CPU
    // time on Node (profiled on Node 26).
  }

  abort(reason?: unknown): void {
    if (this.#released) return;
    this.#released = true;
    const error = reason ??
      new DockerEngineTransportError("aborted", "Cannot use the socket: it was aborted");
    this.#readFailure = { error };
    this.#raw.destroy();
    this.#readController.error(error);
    this.#writeController.error(error);
  }
}
