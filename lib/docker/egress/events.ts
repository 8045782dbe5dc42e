/**
 * The egress proxy's decisions, read by the controller: the proxy writes one JSON line per
 * decision on its stdout; the controller reads it through the Engine (container attach,
 * attached before the proxy starts), parses each bounded line with zod and keeps them in a
 * bounded queue that the host reads as an async iterable.
 *
 * Bounded, never blocking the proxy: the attach stream is read continuously (stdout and
 * stderr share it), a line longer than {@linkcode MAX_EGRESS_LINE_LENGTH} ends the reading,
 * and when the host does not keep up the **oldest** queued event is dropped and counted
 * (`dropped`), so memory stays at most `capacity` events. Lines that are not a decision are
 * counted (`malformed`) and skipped. Stderr is drained and discarded (only counted).
 *
 * @module
 */
import { z } from "zod";
import { lines } from "../../sandbox/lines.ts";
import { demultiplex } from "../../engine/frames/demultiplex.ts";
import type { EgressEvent } from "./proxy_program.ts";
import { BoundedEvents } from "../_bounded_events.ts";

export type { EgressEvent } from "./proxy_program.ts";

/** Longest decision line read, in UTF-16 code units: 16,384. */
export const MAX_EGRESS_LINE_LENGTH = 16 * 1024;

/** Default and largest queue capacity, in events: 1,024 and 65,536. */
export const DEFAULT_EGRESS_EVENT_CAPACITY = 1024;

const eventSchema = z.strictObject({
  event: z.enum(["allowed", "denied", "closed"]),
  host: z.string().max(1024),
  port: z.number().int().min(0).max(65535),
  address: z.string().max(64).optional(),
  reason: z.string().max(4096).optional(),
  bytesOut: z.number().int().nonnegative().optional(),
  bytesIn: z.number().int().nonnegative().optional(),
  route: z.string().max(64).optional(),
  status: z.number().int().min(0).max(999).optional(),
  durationMs: z.number().int().nonnegative().optional(),
});
const listeningSchema = z.strictObject({ event: z.literal("listening"), port: z.number().int() });

/**
 * The decisions of one sandbox's egress proxy (`sandbox.egress`, allowlist sandboxes only).
 *
 * Iterate it (`for await (const event of sandbox.egress)`) to receive each decision once, in
 * order; events queued before the iteration began come first. There is one queue: two
 * iterations at once share it (each event goes to one of them). Iteration ends once the
 * proxy's output ended (the proxy stopped or the sandbox stopped) and the queue is empty.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a running allowlist sandbox on a Docker Engine
 * for await (const event of sandbox.egress!) {
 *   if (event.event === "denied") console.warn("egress denied", event.host, event.port, event.reason);
 * }
 * ```
 */
export class DockerEgressEvents implements AsyncIterable<EgressEvent> {
  /** Most events kept unread; older ones are dropped first. */
  readonly capacity: number;
  readonly #queue: BoundedEvents<EgressEvent>;
  #malformed = 0;
  #listening: { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void };
  /** Settles (never rejects) once the proxy's output ended. */
  readonly ended: Promise<void>;

  /**
   * Start reading `source` (the proxy's multiplexed attach output; this object owns it).
   *
   * @internal made by the sandbox's startup
   */
  constructor(source: ReadableStream<Uint8Array>, capacity: number = DEFAULT_EGRESS_EVENT_CAPACITY) {
    this.capacity = capacity;
    this.#queue = new BoundedEvents(capacity);
    let resolve!: () => void, reject!: (error: Error) => void;
    const promise = new Promise<void>((yes, no) => ((resolve = yes), (reject = no)));
    promise.catch(() => {});
    this.#listening = { promise, resolve, reject };
    const output = demultiplex(source, { maxBufferedOutputBytes: 1024 * 1024, onFault: () => undefined });
    const drainStderr = output.stderr.pipeTo(new WritableStream()).catch(() => {});
    this.ended = Promise.all([this.#read(output.stdout), drainStderr]).then(() => {
      this.#queue.end();
      this.#listening.reject(new Error("the proxy's output ended before it listened"));
    });
  }

  /** Events dropped because the queue was full (the oldest go first). */
  get dropped(): number {
    return this.#queue.dropped;
  }

  /** Lines of the proxy's stdout that were not a decision (skipped). */
  get malformed(): number {
    return this.#malformed;
  }

  /**
   * Resolves once the proxy reported it listens; rejects when its output ended first.
   *
   * @internal used by startup
   */
  get listening(): Promise<void> {
    return this.#listening.promise;
  }

  async #read(stdout: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const line of lines(stdout, { maxLineLength: MAX_EGRESS_LINE_LENGTH })) {
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          this.#malformed++;
          continue;
        }
        const event = eventSchema.safeParse(value);
        if (event.success) this.#queue.push(Object.freeze(event.data));
        else if (listeningSchema.safeParse(value).success) this.#listening.resolve();
        else this.#malformed++;
      }
    } catch {
      // A fault of the stream or an over-long line ends the reading; the proxy's stop is
      // noticed by the sandbox through the Engine, not here.
    }
  }

  /** Each decision once, in order; ends once the output ended and the queue is empty. */
  [Symbol.asyncIterator](): AsyncIterator<EgressEvent> {
    return this.#queue[Symbol.asyncIterator]();
  }
}
