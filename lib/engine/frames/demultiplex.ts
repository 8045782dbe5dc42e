/**
 * Splitting the Docker Engine's multiplexed exec output into stdout and stderr.
 *
 * Without a TTY, the Engine's attach stream (Docker Engine API v1.24 and later, "Attach to a
 * container" / "Start an exec instance") carries stdout and stderr on one connection as
 * frames: an 8-byte header, then the payload. Header byte 0 is the stream type (0 stdin, 1
 * stdout, 2 stderr), bytes 1–3 are zero, bytes 4–7 are the payload length as a big-endian
 * unsigned 32-bit integer.
 *
 * @module
 */
import { endOutputs } from "./_end.ts";
import { DockerEngineOutputError } from "../errors.ts";
import { chunkReader } from "../../streams/chunk_reader.ts";

/**
 * Size of a frame header, in bytes (Docker Engine API attach stream).
 */
export const FRAME_HEADER_BYTES = 8;

/**
 * Default of {@linkcode DemultiplexOptions.maxFrameBytes}, in bytes: 1 MiB.
 */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

const STDOUT = 1;
const STDERR = 2;
const MAX_UINT32 = 0xffff_ffff;
const ACTION = "Cannot demultiplex process output";

/**
 * Options of {@linkcode demultiplex}.
 *
 * @example
 * ```ts
 * import type { DemultiplexOptions } from "./demultiplex.ts";
 *
 * const stop = (reason: unknown) => console.error("stopping the sandbox", reason);
 * const options: DemultiplexOptions = {
 *   maxBufferedOutputBytes: 4 * 1024 * 1024,
 *   onFault: (error) => stop(error),
 * };
 * ```
 */
export interface DemultiplexOptions {
  /**
   * Bound on output enqueued but not yet read, in bytes, combined over stdout and stderr: an
   * integer from 1 to 2^53 - 1. A payload piece that would take the unread total above it is
   * an overflow. Each piece is at most one source chunk, so the bound should be at least the
   * source's chunk size (the Engine connection's is 64 KiB).
   */
  readonly maxBufferedOutputBytes: number;
  /**
   * Largest payload length a frame may declare, in bytes: an integer from 0 to 2^32 - 1. A
   * larger declaration is a framing error, raised before any byte of that payload is kept.
   *
   * @default {1048576} 1 MiB
   */
  readonly maxFrameBytes?: number;
  /**
   * Called exactly once, synchronously, on the first fault; never on a clean end. The caller
   * stops the sandbox here, and says what the fault is in its own terms: what it returns is
   * the error stdout, stderr and `done` fail with (`undefined` keeps `error`). Must not throw
   * (an exception it throws is ignored, and `error` is used).
   *
   * @param error A {@linkcode DockerEngineOutputError}: `output_limit` (overflow), `framing`
   *   (malformed frames or an end inside a frame), `abandoned` (a consumer cancelled stdout or
   *   stderr before the end) or `source_failed` (the source failed; `cause` is its error).
   * @returns The error the outputs fail with, or `undefined` for `error` itself.
   */
  readonly onFault: (error: DockerEngineOutputError) => unknown;
  /**
   * Called once at the source's clean end (after `done` resolved): stdout and stderr close
   * only when the promise it returns resolves, and error with its rejection reason instead
   * when it rejects. An attach stream also ends cleanly when the Engine dies, so a caller that
   * knows more (the exec's exit was observed) keeps a cut output from looking complete.
   * Cancelling a stream meanwhile is not a fault (the output has ended). Must not throw.
   *
   * @default undefined: the streams close at the clean end
   */
  readonly confirmEnd?: () => Promise<void>;
}

/**
 * The two output streams of {@linkcode demultiplex} and the end of reading.
 *
 * @example
 * ```ts
 * import { demultiplex, type DemultiplexedOutput } from "./demultiplex.ts";
 *
 * const output: DemultiplexedOutput = demultiplex(ReadableStream.from<Uint8Array>([]), {
 *   maxBufferedOutputBytes: 1024,
 *   onFault: () => {},
 * });
 * await output.done; // an empty source ends cleanly
 * ```
 */
export interface DemultiplexedOutput {
  /**
   * Payload bytes of stream type 1, in order. Closes at a clean end (with `confirmEnd`, once
   * it resolves); errors on a fault.
   */
  readonly stdout: ReadableStream<Uint8Array>;
  /** Payload bytes of stream type 2, in order; closes and errors as `stdout` does. */
  readonly stderr: ReadableStream<Uint8Array>;
  /**
   * Resolves when the source ended cleanly at a frame boundary (both streams are then closed,
   * or with `confirmEnd` closing, though unread bytes may remain in them); rejects with the fault (as `onFault` returned
   * it) otherwise. Already marked handled, so leaving it unawaited raises no unhandled
   * rejection.
   */
  readonly done: Promise<void>;
}

interface Channel {
  readonly name: "stdout" | "stderr";
  readonly stream: ReadableStream<Uint8Array>;
  readonly controller: ReadableStreamDefaultController<Uint8Array>;
}

function checkedInteger(value: unknown, minimum: number, maximum: number, field: string): number {
  if (
    typeof value !== "number" || !Number.isInteger(value) || value < minimum || value > maximum
  ) {
    throw new TypeError(`${ACTION}: options.${field} must be an integer from ${minimum} to ${maximum} bytes`);
  }
  return value;
}

/**
 * Demultiplexes a Docker Engine attach stream (non-TTY) into stdout and stderr.
 *
 * The source is read continuously, whether or not anyone reads the outputs: stdout and stderr
 * share one connection, so waiting for a slow stdout reader would also stall stderr. Memory
 * stays bounded regardless of what the peer sends:
 * - unread output (both streams together, measured by their byte-length queues) never exceeds
 *   `maxBufferedOutputBytes`; a piece that would exceed it faults with `output_limit`
 *   instead of being kept;
 * - payloads are forwarded piecewise as they arrive, and no buffer is ever allocated from a
 *   declared frame length. The pieces one stream gets from a source chunk are views of it
 *   (no copy) when together they are at least half of the chunk's buffer, else copies: the
 *   pieces of one chunk sit side by side in their stream's queue, so the chunks a stream's
 *   unread views keep alive take at most twice its unread bytes, plus the one chunk its
 *   reader is partway through. Source chunks must not be reused by their producer;
 * - besides the output queues, at most a partial 8-byte header and the source chunk being
 *   split are held.
 *
 * A fault calls `onFault` once with a {@linkcode DockerEngineOutputError}, errors both streams
 * with what it returned (dropping unread output), cancels the source and rejects `done`.
 * Faults: overflow (`output_limit`); a stream type other than 1 or 2 (including stdin's 0 and
 * the Engine's "systemerr" 3), nonzero reserved bytes, a declared length above
 * `maxFrameBytes`, a non-`Uint8Array` chunk, or an end inside a header or payload
 * (`framing`); a consumer cancelling stdout or stderr before the clean end (`abandoned`:
 * unread output cannot be dropped silently, so the caller stops the sandbox); the source
 * erroring (`source_failed`, its error as `cause`). Zero-length frames are accepted and
 * produce no chunk. After a clean end, cancelling a stream only discards its unread bytes.
 *
 * @param source The attach stream's output side; `demultiplex` locks it and owns it from now.
 * @param options The output bound, the frame bound and the fault callback.
 * @returns The two output streams and `done`.
 * @throws {TypeError} When `maxBufferedOutputBytes` or `maxFrameBytes` is out of range,
 *   `onFault` is not a function, or `source` is already locked.
 *
 * @example
 * ```ts
 * import { demultiplex } from "./demultiplex.ts";
 *
 * const frame = (type: number, text: string): Uint8Array => {
 *   const payload = new TextEncoder().encode(text);
 *   const bytes = new Uint8Array(8 + payload.length);
 *   bytes[0] = type;
 *   new DataView(bytes.buffer).setUint32(4, payload.length);
 *   bytes.set(payload, 8);
 *   return bytes;
 * };
 * const source = ReadableStream.from([frame(1, "hello "), frame(2, "warning"), frame(1, "world")]);
 * const { stdout, stderr, done } = demultiplex(source, {
 *   maxBufferedOutputBytes: 4 * 1024 * 1024,
 *   onFault: (error) => console.error("stop the sandbox:", error.code),
 * });
 * const [out, err] = await Promise.all([
 *   new Response(stdout).text(),
 *   new Response(stderr).text(),
 * ]);
 * await done;
 * console.log(out, "|", err); // "hello world | warning"
 * ```
 */
export function demultiplex(
  source: ReadableStream<Uint8Array>,
  options: DemultiplexOptions,
): DemultiplexedOutput {
  const limit = checkedInteger(
    options.maxBufferedOutputBytes,
    1,
    Number.MAX_SAFE_INTEGER,
    "maxBufferedOutputBytes",
  );
  const maxFrameBytes = checkedInteger(
    options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
    0,
    MAX_UINT32,
    "maxFrameBytes",
  );
  const onFault = options.onFault;
  if (typeof onFault !== "function") {
    throw new TypeError(`${ACTION}: options.onFault must be a function`);
  }
  const confirmEnd = options.confirmEnd;
  if (confirmEnd !== undefined && typeof confirmEnd !== "function") {
    throw new TypeError(`${ACTION}: options.confirmEnd must be a function`);
  }
  const reader = chunkReader(source);

  let state: "running" | "ended" | "faulted" = "running";
  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => {});

  const header = new Uint8Array(FRAME_HEADER_BYTES);
  const headerView = new DataView(header.buffer);
  let headerFilled = 0;
  let payloadRemaining = 0;
  let target: Channel | undefined;

  function fault(code: DockerEngineOutputError["code"], message: string, cause?: unknown): void {
    if (state !== "running") return;
    state = "faulted";
    const error = new DockerEngineOutputError(code, `${ACTION}: ${message}`, cause === undefined ? undefined : { cause });
    let failure: unknown = error;
    try {
      failure = onFault(error) ?? error;
    } catch {
      // Documented: onFault must not throw; its exception cannot change the outcome.
    }
    for (const channel of [stdout, stderr]) {
      try {
        channel.controller.error(failure);
      } catch {
        // Already closed by the consumer's cancel.
      }
    }
    reader.cancel(failure).catch(() => {});
    rejectDone(failure);
  }

  function channel(name: "stdout" | "stderr"): Channel {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
      cancel(reason) {
        fault("abandoned", `the ${name} reader was cancelled before the output ended`, reason);
      },
    }, new ByteLengthQueuingStrategy({ highWaterMark: limit }));
    return { name, stream, controller };
  }
  const stdout = channel("stdout");
  const stderr = channel("stderr");

  /** Bytes enqueued on `channel` and not yet read (its queue's total size). */
  function unread(channel: Channel): number {
    return limit - (channel.controller.desiredSize ?? limit);
  }

  /** Opens the frame of the header just read; the reason it is malformed, if it is. */
  function openFrame(): string | undefined {
    const type = header[0];
    if (header[1] !== 0 || header[2] !== 0 || header[3] !== 0) return "a frame header has nonzero reserved bytes";
    if (type !== STDOUT && type !== STDERR) {
      return `a frame header names stream type ${type} (expected 1 stdout or 2 stderr)`;
    }
    const size = headerView.getUint32(4);
    if (size > maxFrameBytes) return `a frame declares ${size} bytes, above the ${maxFrameBytes}-byte frame limit`;
    target = type === STDOUT ? stdout : stderr;
    payloadRemaining = size;
    return undefined;
  }

  // The payload pieces of the chunk being split: where each starts, its length, its stream.
  const pieceStarts: number[] = [];
  const pieceLengths: number[] = [];
  const pieceChannels: Channel[] = [];

  /**
   * Splits one source chunk; returns `false` once faulted. First the chunk's frame headers
   * are read to find its payload pieces, then the pieces are handed on: as views of the
   * chunk (no copy) for a stream that gets at least half of the chunk's memory, else as
   * copies, so a few unread bytes never pin a whole chunk.
   */
  function consume(chunk: unknown): boolean {
    if (!(chunk instanceof Uint8Array)) {
      fault("framing", "the source produced a chunk that is not bytes");
      return false;
    }
    let offset = 0;
    let pieces = 0;
    let stdoutBytes = 0;
    let stderrBytes = 0;
    let malformed: string | undefined;
    const end = chunk.byteLength;
    while (offset < end) {
      if (payloadRemaining === 0) {
        while (headerFilled < FRAME_HEADER_BYTES && offset < end) header[headerFilled++] = chunk[offset++];
        if (headerFilled < FRAME_HEADER_BYTES) break;
        headerFilled = 0;
        malformed = openFrame();
        if (malformed !== undefined) break;
        continue;
      }
      const take = Math.min(payloadRemaining, end - offset);
      pieceStarts[pieces] = offset;
      pieceLengths[pieces] = take;
      pieceChannels[pieces] = target!;
      pieces += 1;
      if (target === stdout) stdoutBytes += take;
      else stderrBytes += take;
      offset += take;
      payloadRemaining -= take;
    }
    // What a view keeps alive is the chunk's whole buffer, not just the chunk.
    const retained = chunk.buffer.byteLength;
    for (let index = 0; index < pieces; index += 1) {
      const start = pieceStarts[index];
      const take = pieceLengths[index];
      const channel = pieceChannels[index];
      if (unread(stdout) + unread(stderr) + take > limit) {
        fault(
          "output_limit",
          `unread stdout and stderr would exceed ${limit} bytes (maxBufferedOutputBytes): ` +
            "read both streams as the output arrives (Promise.all over stdout and stderr), or raise maxBufferedOutputBytes (up to 1 GiB)",
        );
        return false;
      }
      const views = (channel === stdout ? stdoutBytes : stderrBytes) * 2 >= retained;
      channel.controller.enqueue(views ? chunk.subarray(start, start + take) : chunk.slice(start, start + take));
    }
    if (malformed !== undefined) {
      fault("framing", malformed);
      return false;
    }
    return true;
  }

  function end(): void {
    if (headerFilled !== 0) {
      fault("framing", `the stream ended inside a frame header (${headerFilled} of ${FRAME_HEADER_BYTES} bytes)`);
      return;
    }
    if (payloadRemaining !== 0) {
      fault("framing", `the stream ended inside a frame payload (${payloadRemaining} bytes missing)`);
      return;
    }
    state = "ended";
    reader.releaseLock();
    resolveDone();
    endOutputs([stdout.controller, stderr.controller], confirmEnd);
  }

  async function pump(): Promise<void> {
    while (state === "running") {
      let chunk: Uint8Array | null;
      try {
        chunk = await reader.read();
      } catch (cause) {
        fault("source_failed", "the attach stream failed", cause);
        return;
      }
      if (state !== "running") return;
      if (chunk === null) {
        end();
        return;
      }
      if (!consume(chunk)) return;
    }
  }
  pump().catch((cause: unknown) => {
    fault("source_failed", "demultiplexing failed unexpectedly", cause);
  });

  return { stdout: stdout.stream, stderr: stderr.stream, done };
}
