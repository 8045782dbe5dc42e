/**
 * The output of an exec with a TTY: one raw byte stream, no frames.
 *
 * With `Tty: true` the Engine's attach stream (Docker Engine API, "Start an exec instance")
 * carries the terminal's bytes as they are: stdout and stderr both write to the terminal, so
 * there is nothing to split, and a frame parser would read text as a frame length. This reads
 * such a stream with the same bound, faults and end confirmation as {@linkcode demultiplex}.
 *
 * @module
 */
import { endOutputs } from "./_end.ts";
import { DockerEngineOutputError } from "../errors.ts";
import { chunkReader } from "../../streams/chunk_reader.ts";
import type { DemultiplexedOutput, DemultiplexOptions } from "./demultiplex.ts";

const ACTION = "Cannot read terminal output";

/** Options of {@linkcode terminalOutput}: those of `demultiplex` without a frame bound. */
export type TerminalOutputOptions = Omit<DemultiplexOptions, "maxFrameBytes">;

/**
 * Reads a TTY exec's attach stream into one bounded `stdout`; `stderr` is empty and closed.
 *
 * The source is read continuously, as `demultiplex` reads it: unread output never exceeds
 * `maxBufferedOutputBytes`, and a chunk that would take it above faults with
 * `output_limit` instead of being kept. A chunk is handed on as it came (no copy) when it is
 * at least half of its buffer, else copied. Faults (`output_limit`, `abandoned` when the
 * consumer cancels `stdout` before the end, `source_failed`, `framing` for a chunk that is
 * not bytes) call `onFault` once, error `stdout` with what it returned, cancel the source and
 * reject `done`. At the clean end, `confirmEnd` (when given) decides whether `stdout` closes
 * or errors.
 *
 * @param source The attach stream's output side; locked and owned from now.
 * @param options The output bound, the fault callback and the end confirmation.
 * @returns `stdout`, an empty closed `stderr`, and `done`.
 * @throws {TypeError} When `maxBufferedOutputBytes` is not an integer from 1 to 2^53 − 1, or
 *   `onFault` is not a function.
 *
 * @example
 * ```ts
 * import { terminalOutput } from "./terminal_output.ts";
 *
 * const source = ReadableStream.from([new TextEncoder().encode("$ ls\r\nREADME\r\n")]);
 * const { stdout, done } = terminalOutput(source, { maxBufferedOutputBytes: 1 << 20, onFault: () => {} });
 * console.log(await new Response(stdout).text()); // "$ ls\r\nREADME\r\n"
 * await done;
 * ```
 */
export function terminalOutput(source: ReadableStream<Uint8Array>, options: TerminalOutputOptions): DemultiplexedOutput {
  const limit = options.maxBufferedOutputBytes;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1) {
    throw new TypeError(`${ACTION}: options.maxBufferedOutputBytes must be an integer from 1 to ${Number.MAX_SAFE_INTEGER} bytes`);
  }
  const { onFault, confirmEnd } = options;
  if (typeof onFault !== "function") throw new TypeError(`${ACTION}: options.onFault must be a function`);
  const reader = chunkReader(source);
  let state: "running" | "ended" | "faulted" = "running";
  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => {});

  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stdout = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel(reason) {
      fault("abandoned", "the stdout reader was cancelled before the output ended", reason);
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: limit }));
  const stderr = new ReadableStream<Uint8Array>({
    start(c) {
      c.close();
    },
  });

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
    try {
      controller.error(failure);
    } catch {
      // Already closed by the consumer's cancel.
    }
    reader.cancel(failure).catch(() => {});
    rejectDone(failure);
  }

  function consume(chunk: unknown): boolean {
    if (!(chunk instanceof Uint8Array)) {
      fault("framing", "the source produced a chunk that is not bytes");
      return false;
    }
    if (chunk.byteLength === 0) return true;
    const unread = limit - (controller.desiredSize ?? limit);
    if (unread + chunk.byteLength > limit) {
      fault(
        "output_limit",
        `unread terminal output would exceed ${limit} bytes (maxBufferedOutputBytes): ` +
          "read stdout as the output arrives, or raise maxBufferedOutputBytes (up to 1 GiB)",
      );
      return false;
    }
    controller.enqueue(chunk.byteLength * 2 >= chunk.buffer.byteLength ? chunk : chunk.slice());
    return true;
  }

  function end(): void {
    state = "ended";
    reader.releaseLock();
    resolveDone();
    endOutputs([controller], confirmEnd);
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
      if (chunk === null) return end();
      if (!consume(chunk)) return;
    }
  }
  pump().catch((cause: unknown) => fault("source_failed", "reading failed unexpectedly", cause));

  return { stdout, stderr, done };
}
