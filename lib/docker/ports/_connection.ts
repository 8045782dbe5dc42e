/**
 * One relayed connection as Web Streams: the guest's bytes queue here until the consumer
 * reads them (at most one window: the relay sends only what this side granted back), and
 * the writable sends at most the relay's credit before it waits. Half-close is an `end`
 * frame; a reset, a lost relay or a stop errors both streams — a readable that was cut never
 * closes normally.
 *
 * @module
 */
import { SandboxAbortedError, type SandboxError, SandboxQuotaError } from "../../sandbox/errors.ts";
import { SandboxConnectionError, type SandboxConnection } from "../../sandbox/ports.ts";
import { CREDIT_BATCH_BYTES, encodeFrame, FRAME, RELAY_WINDOW_BYTES } from "./relay_program.ts";

/**
 * What a connection needs of its channel (`RelayChannel` in `./_channel.ts` is one): declared
 * here, beside its user, so the channel imports the connection and not the other way round.
 */
export interface ConnectionChannel {
  /** The channel's failure once it failed. */
  readonly failure: SandboxError | undefined;
  /** Send one frame. */
  send(frame: Uint8Array): void;
  /** Send data frames for `id`, resolving once the relay's stdin took them. */
  sendData(id: number, bytes: Uint8Array): Promise<void>;
  /** Grant the relay `bytes` more of credit for `id`. */
  credit(id: number, bytes: number): void;
  /** Forget connection `id`. */
  forget(id: number): void;
}

/** A relayed connection (see the module doc); made by the channel when the relay opened it. */
export class RelayConnection implements SandboxConnection {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #id: number;
  readonly #port: number;
  readonly #channel: ConnectionChannel;
  readonly #maxBytes: number | undefined;
  readonly #closed: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  #readController!: ReadableStreamDefaultController<Uint8Array>;
  #writeController!: WritableStreamDefaultController;
  readonly #queue: Uint8Array[] = [];
  /** Bytes received and not yet granted back (queued plus taken-but-ungranted). */
  #inFlight = 0;
  #grant = 0;
  #credit = RELAY_WINDOW_BYTES;
  #wakeReader: (() => void) | undefined;
  #wakeWriter: (() => void) | undefined;
  #remoteEnded = false;
  #readClosed = false;
  #localEnded = false;
  #failure: SandboxError | undefined;
  #settled = false;
  /** Bytes host → guest so far. */
  bytesIn = 0;
  /** Bytes guest → host so far. */
  bytesOut = 0;

  /** @internal made by the channel */
  constructor(id: number, port: number, channel: ConnectionChannel, maxBytes: number | undefined) {
    this.#id = id;
    this.#port = port;
    this.#channel = channel;
    this.#maxBytes = maxBytes;
    this.#closed.promise.catch(() => {});
    this.readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#readController = controller;
      },
      pull: (controller) => this.#pull(controller),
      cancel: () => this.fail(new SandboxAbortedError(`Cannot read from port ${port}: the readable was cancelled`), true, true),
    }, { highWaterMark: 0 });
    this.writable = new WritableStream<Uint8Array>({
      start: (controller) => {
        this.#writeController = controller;
      },
      write: (chunk) => this.#write(chunk),
      close: () => this.#end(),
      abort: () => this.fail(new SandboxAbortedError(`Cannot write to port ${port}: the writable was aborted`), true, true),
    }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }));
  }

  /** Settles once the connection is over: resolves after a clean end or `close()`, rejects with the failure. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  /** The failure, once the connection failed. */
  get failure(): SandboxError | undefined {
    return this.#failure;
  }

  /** End now in both directions (the guest's socket is reset if open); `closed` resolves. */
  close(): Promise<void> {
    this.fail(new SandboxAbortedError(`Cannot use the connection to port ${this.#port}: it was closed`), true, true);
    return Promise.resolve();
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    for (;;) {
      const chunk = this.#queue.shift();
      if (chunk !== undefined) {
        controller.enqueue(chunk);
        this.#grantBack(chunk.byteLength);
        return;
      }
      if (this.#failure) return;
      if (this.#remoteEnded) {
        this.#readClosed = true;
        controller.close();
        this.#settleIfDone();
        return;
      }
      await new Promise<void>((wake) => (this.#wakeReader = wake));
    }
  }

  #grantBack(bytes: number): void {
    this.#inFlight -= bytes;
    this.#grant += bytes;
    if (this.#grant >= CREDIT_BATCH_BYTES || this.#inFlight === 0) {
      this.#channel.credit(this.#id, this.#grant);
      this.#grant = 0;
    }
  }

  #wake(): void {
    const reader = this.#wakeReader;
    this.#wakeReader = undefined;
    reader?.();
    const writer = this.#wakeWriter;
    this.#wakeWriter = undefined;
    writer?.();
  }

  #overBound(bytes: number): boolean {
    return this.#maxBytes !== undefined && this.bytesIn + this.bytesOut + bytes > this.#maxBytes;
  }

  #boundError(): SandboxQuotaError {
    return new SandboxQuotaError(
      `Cannot relay port ${this.#port}: the connection passed options.maxBytesPerConnection (${this.#maxBytes} bytes, both directions together)`,
    );
  }

  async #write(chunk: Uint8Array): Promise<void> {
    if (!(chunk instanceof Uint8Array)) throw new TypeError(`Cannot write to port ${this.#port}: a chunk is not a Uint8Array`);
    let rest = chunk;
    while (rest.byteLength > 0) {
      if (this.#failure) throw this.#failure;
      if (this.#localEnded) throw new SandboxConnectionError("reset", `Cannot write to port ${this.#port}: the writable was closed`);
      if (this.#credit <= 0) {
        await new Promise<void>((wake) => (this.#wakeWriter = wake));
        continue;
      }
      const piece = rest.subarray(0, Math.min(this.#credit, rest.byteLength));
      if (this.#overBound(piece.byteLength)) {
        const error = this.#boundError();
        this.fail(error, true);
        throw error;
      }
      this.#credit -= piece.byteLength;
      this.bytesIn += piece.byteLength;
      rest = rest.subarray(piece.byteLength);
      try {
        await this.#channel.sendData(this.#id, piece);
      } catch (error) {
        // The attach failed: the channel ends with its own failure, which says more.
        throw this.#failure ?? this.#channel.failure ?? new SandboxConnectionError("relay_lost", `Cannot write to port ${this.#port}: the relay's connection failed`, { cause: error });
      }
    }
  }

  #end(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    this.#localEnded = true;
    this.#channel.send(encodeFrame(FRAME.end, this.#id));
    this.#settleIfDone();
    return Promise.resolve();
  }

  /**
   * Guest bytes arrived.
   *
   * @returns `false` when they exceed the credit (a protocol fault of the relay)
   * @internal
   */
  receive(payload: Uint8Array): boolean {
    if (this.#failure) return true;
    if (this.#inFlight + payload.byteLength > RELAY_WINDOW_BYTES) return false;
    if (this.#overBound(payload.byteLength)) {
      this.fail(this.#boundError(), true);
      return true;
    }
    this.bytesOut += payload.byteLength;
    this.#inFlight += payload.byteLength;
    this.#queue.push(payload);
    this.#wake();
    return true;
  }

  /** @internal the guest ended its side */
  receiveEnd(): void {
    this.#remoteEnded = true;
    this.#wake();
  }

  /** @internal the guest's socket failed */
  receiveReset(code: string): void {
    this.#channel.forget(this.#id);
    this.fail(new SandboxConnectionError("reset", `Cannot relay port ${this.#port}: the guest's side of the connection failed (${code || "reset"})`), false);
  }

  /** @internal the relay granted credit */
  receiveCredit(bytes: number): void {
    this.#credit += bytes;
    this.#wake();
  }

  /** @internal the guest socket closed (after both ends) */
  receiveClosed(): void {
    if (!this.#remoteEnded) {
      this.fail(new SandboxConnectionError("reset", `Cannot relay port ${this.#port}: the guest closed the connection without ending it`), false);
      return;
    }
    this.#localEnded = true;
    this.#settleIfDone(true);
  }

  #settleIfDone(closedByGuest = false): void {
    if (this.#settled || this.#failure) return;
    if ((this.#readClosed || closedByGuest) && this.#localEnded && (closedByGuest || this.#remoteEnded)) {
      if (!closedByGuest) return; // wait for the relay's `closed`
      this.#settled = true;
      this.#closed.resolve();
    }
  }

  /**
   * Fail the connection: both streams error with `error` (a stream already closed stays
   * closed), `closed` rejects (resolves when `graceful`: the caller ended it).
   *
   * @param notify whether to reset the guest's side (the relay does not know yet)
   * @internal
   */
  fail(error: SandboxError, notify = true, graceful = false): void {
    if (this.#failure || this.#settled) return;
    this.#failure = error;
    this.#queue.length = 0;
    if (notify) {
      this.#channel.forget(this.#id);
      this.#channel.send(encodeFrame(FRAME.reset, this.#id));
    }
    if (!this.#readClosed) {
      try {
        this.#readController.error(error);
      } catch {
        // Cancelled already.
      }
    }
    try {
      this.#writeController.error(error);
    } catch {
      // Closed or aborted already.
    }
    this.#wake();
    this.#settled = true;
    if (graceful) this.#closed.resolve();
    else this.#closed.reject(error);
  }
}
