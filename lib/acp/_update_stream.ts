/**
 * One turn's `session/update` notifications as a `ReadableStream`, bounded by the bytes of
 * the updates not yet read. The SDK reads the agent's stdout eagerly and has no backpressure
 * towards the agent, so a consumer that does not read must not make memory grow without
 * bound: past the limit the stream errors with a `SandboxOutputLimitError` instead.
 *
 * @module
 */
import type { SessionUpdate } from "./protocol.ts";
import { SandboxOutputLimitError } from "../sandbox/errors.ts";

const encoder = new TextEncoder();

/** Size of one update as the bound counts it: the UTF-8 bytes of its JSON text. */
export function updateBytes(update: SessionUpdate): number {
  return encoder.encode(JSON.stringify(update)).length;
}

/** What became of an update handed to {@linkcode UpdateStream.push}. */
export type PushOutcome = "queued" | "discarded" | "overflow";

/** The writable end the session routes updates into, and the stream it hands out. */
export class UpdateStream {
  /** The stream handed to the caller. */
  readonly readable: ReadableStream<SessionUpdate>;
  readonly #limit: number;
  #controller!: ReadableStreamDefaultController<SessionUpdate>;
  #state: "open" | "cancelled" | "ended" = "open";
  #failure: SandboxOutputLimitError | undefined;
  #pushed = 0;

  /** @param limitBytes Most unread update bytes before the stream errors. */
  constructor(limitBytes: number) {
    this.#limit = limitBytes;
    this.readable = new ReadableStream<SessionUpdate>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => {
        // The consumer said it wants no more of this turn's updates: they are dropped.
        this.#state = "cancelled";
      },
    }, { highWaterMark: limitBytes, size: updateBytes });
  }

  /** How many updates were handed to {@linkcode push} so far (queued or not). */
  get pushed(): number {
    return this.#pushed;
  }

  /** The overflow error once the bound was passed, else `undefined`. */
  get failure(): SandboxOutputLimitError | undefined {
    return this.#failure;
  }

  /**
   * Queue one update; `overflow` when it takes the unread bytes past the limit (the stream
   * then errors with {@linkcode overflowError} and later updates are discarded).
   */
  push(update: SessionUpdate): PushOutcome {
    this.#pushed += 1;
    if (this.#state !== "open") return "discarded";
    this.#controller.enqueue(update);
    if ((this.#controller.desiredSize ?? 0) >= 0) return "queued";
    this.#failure = overflowError(this.#limit);
    this.fail(this.#failure);
    return "overflow";
  }

  /** End the stream after the queued updates (the turn is over). */
  close(): void {
    if (this.#state === "open") this.#controller.close();
    this.#state = "ended";
  }

  /** Error the stream (queued updates are dropped, as Web Streams do). */
  fail(error: unknown): void {
    if (this.#state === "open") this.#controller.error(error);
    this.#state = "ended";
  }
}

/** The error of an update stream that passed `limitBytes`. */
export function overflowError(limitBytes: number): SandboxOutputLimitError {
  return new SandboxOutputLimitError(
    `Cannot buffer session updates: more than ${limitBytes} bytes of this turn's updates are unread ` +
      "(maxBufferedUpdateBytes); read turn.updates while the turn runs, or raise options.maxBufferedUpdateBytes",
  );
}
