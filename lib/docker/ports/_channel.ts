/**
 * The controller's end of the relay: many connections over the relay's one stdin/stdout
 * (frames and credit of `relay_program.ts`). Each connection is a {@linkcode RelayConnection}
 * with Web Streams; the channel reads the relay's output continuously and hands each
 * connection's bytes to its queue, which the credit bounds to one window
 * ({@linkcode RELAY_WINDOW_BYTES}): a frame past the credit is a protocol fault that ends the
 * channel. When the output ends or fails, every open connection errors (never a normal end).
 *
 * @module
 */
import { SandboxConnectionError } from "../../sandbox/ports.ts";
import type { SandboxError } from "../../sandbox/errors.ts";
import {
  CREDIT_BATCH_BYTES,
  encodeFrame,
  encodeHeader,
  FRAME,
  FrameDecoder,
  MAX_FRAME_PAYLOAD,
  readU32,
  RELAY_WINDOW_BYTES,
  type RelayFrame,
  u32,
} from "./relay_program.ts";
import { RelayConnection } from "./_connection.ts";

/** How a channel's connection opened. */
interface Opening {
  readonly port: number;
  resolve(connection: RelayConnection): void;
  reject(error: SandboxError): void;
  readonly maxBytes: number | undefined;
}

/** The bytes the channel writes: frames to the relay's stdin. */
export interface ChannelWriter {
  /** Queue `bytes`; resolves once written (rejects once the attach failed). */
  write(bytes: Uint8Array): Promise<void>;
}

/** The relay's stream of frames. */
export class RelayChannel {
  readonly #writer: ChannelWriter;
  readonly #openings = new Map<number, Opening>();
  readonly #connections = new Map<number, RelayConnection>();
  readonly #ready: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  readonly #ended: PromiseWithResolvers<SandboxError> = Promise.withResolvers<SandboxError>();
  #nextId = 1;
  #failure: SandboxError | undefined;

  /**
   * Start reading `output` (the relay's stdout, demultiplexed; this channel owns it).
   *
   * @param describe what a lost relay's error says, given what ended it
   */
  constructor(output: ReadableStream<Uint8Array>, writer: ChannelWriter, lost: (why: string, cause?: unknown) => SandboxError) {
    this.#writer = writer;
    this.#ready.promise.catch(() => {});
    void this.#read(output).then(
      () => this.fail(lost("its output ended")),
      (error) => this.fail(lost(error instanceof RangeError ? `it broke the frame protocol (${error.message})` : "its output failed", error)),
    );
  }

  /** Resolves once the relay said it runs; rejects when it ended first. */
  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  /** Resolves with the channel's failure once it ended (never rejects). */
  get ended(): Promise<SandboxError> {
    return this.#ended.promise;
  }

  /** The failure once the channel ended. */
  get failure(): SandboxError | undefined {
    return this.#failure;
  }

  /** Connections opening or open. */
  get size(): number {
    return this.#openings.size + this.#connections.size;
  }

  async #read(output: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new FrameDecoder();
    const reader = output.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const frame of decoder.push(value)) this.#handle(frame);
        if (this.#failure) break;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  #handle(frame: RelayFrame): void {
    const { type, id, payload } = frame;
    if (type === FRAME.ready) return this.#ready.resolve();
    const opening = this.#openings.get(id);
    if (opening !== undefined) {
      this.#openings.delete(id);
      if (type === FRAME.opened) {
        const connection = new RelayConnection(id, opening.port, this, opening.maxBytes);
        this.#connections.set(id, connection);
        opening.resolve(connection);
      } else {
        const code = new TextDecoder().decode(payload);
        opening.reject(
          new SandboxConnectionError(
            code === "ECONNREFUSED" ? "refused" : "reset",
            code === "ECONNREFUSED"
              ? `Cannot connect to port ${opening.port} in the sandbox: connection refused (nothing listens on 127.0.0.1:${opening.port} inside it)`
              : `Cannot connect to port ${opening.port} in the sandbox: the connect failed (${code})`,
          ),
        );
      }
      return;
    }
    const connection = this.#connections.get(id);
    // Frames of a connection this side already ended are dropped.
    if (connection === undefined) return;
    if (type === FRAME.data) {
      if (!connection.receive(payload)) throw new RangeError(`connection ${id} sent more than its credit`);
    } else if (type === FRAME.end) connection.receiveEnd();
    else if (type === FRAME.reset) connection.receiveReset(new TextDecoder().decode(payload));
    else if (type === FRAME.credit) connection.receiveCredit(readU32(payload));
    else if (type === FRAME.closed) {
      this.#connections.delete(id);
      connection.receiveClosed();
    } else throw new RangeError(`frame type ${type} does not go to the controller`);
  }

  /**
   * Open a connection to the guest's `port`.
   *
   * @throws {SandboxConnectionError} `refused` when nothing accepts it
   * @throws {SandboxError} the channel's failure
   */
  open(port: number, maxBytes: number | undefined): { promise: Promise<RelayConnection>; cancel: (error: SandboxError) => void } {
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<RelayConnection>();
    if (this.#failure) {
      reject(this.#failure);
      return { promise, cancel: () => {} };
    }
    this.#openings.set(id, { port, resolve, reject, maxBytes });
    const payload = new Uint8Array([port >> 8, port & 0xff]);
    this.send(encodeFrame(FRAME.open, id, payload));
    return {
      promise,
      cancel: (error) => {
        if (!this.#openings.delete(id)) {
          // Opened meanwhile: reset it.
          this.#connections.get(id)?.fail(error);
          return;
        }
        // The relay may still open it: its OPENED finds no opening and the reset ends it.
        this.send(encodeFrame(FRAME.reset, id));
        reject(error);
      },
    };
  }

  /** Queue a control frame (failures end the channel through the attach's end). */
  send(frame: Uint8Array): void {
    this.#writer.write(frame).catch(() => {});
  }

  /** Send data of connection `id` (≤ one window, split into frames). */
  async sendData(id: number, bytes: Uint8Array): Promise<void> {
    let last: Promise<void> = Promise.resolve();
    for (let offset = 0; offset < bytes.byteLength; offset += MAX_FRAME_PAYLOAD) {
      const piece = bytes.subarray(offset, offset + MAX_FRAME_PAYLOAD);
      // Header and payload are queued together: no other frame comes between them.
      this.#writer.write(encodeHeader(FRAME.data, id, piece.byteLength)).catch(() => {});
      last = this.#writer.write(piece);
    }
    await last;
  }

  /** Grant `bytes` of credit back to the relay for connection `id`. */
  credit(id: number, bytes: number): void {
    this.send(encodeFrame(FRAME.credit, id, u32(bytes)));
  }

  /** Forget connection `id` (it was reset by this side). */
  forget(id: number): void {
    this.#connections.delete(id);
  }

  /** End the channel: every opening rejects and every connection errors with `error`. */
  fail(error: SandboxError): void {
    if (this.#failure) return;
    this.#failure = error;
    this.#ready.reject(error);
    for (const opening of this.#openings.values()) opening.reject(error);
    this.#openings.clear();
    for (const connection of this.#connections.values()) connection.fail(error, false);
    this.#connections.clear();
    this.#ended.resolve(error);
  }
}

export { CREDIT_BATCH_BYTES, RELAY_WINDOW_BYTES };
