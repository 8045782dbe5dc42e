/**
 * Reading a process's output live, line by line: {@linkcode lines} turns a byte stream into a
 * stream of its UTF-8 lines, bounded.
 *
 * The Deno standard library's `TextLineStream` does the splitting part, but JSR packages
 * cannot be installed on the project's build machines (they reach the npm registry and
 * Debian only) and it has no line bound, which
 * output from a guest needs; this is our own, with the same line rules.
 *
 * @module
 */
import { SandboxConfigurationError, SandboxOutputLimitError } from "./errors.ts";

/**
 * Default of {@linkcode LinesOptions.maxLineLength}: 1,048,576 UTF-16 code units.
 */
export const DEFAULT_MAX_LINE_LENGTH = 1024 * 1024;

/**
 * Options of {@linkcode lines}.
 *
 * @example
 * ```ts
 * import type { LinesOptions } from "./lines.ts";
 *
 * const options: LinesOptions = { maxLineLength: 64 * 1024 };
 * ```
 */
export interface LinesOptions {
  /**
   * Longest line accepted, in UTF-16 code units (JavaScript string length, without its line
   * break): an integer from 1 to 2^30. A longer line errors the stream with
   * `SandboxOutputLimitError` (and cancels the source) instead of growing without bound.
   *
   * @default {1048576}
   */
  readonly maxLineLength?: number;
}

/**
 * Splits a byte stream into its lines: decoded as UTF-8 (malformed bytes become U+FFFD),
 * split at `\n` with one `\r` before it removed, line breaks not included. Text after the
 * last line break is the last line; an empty stream gives no line, and a stream that ends
 * with a line break gives no empty line after it.
 *
 * Reads `source` as the lines are read (backpressure holds); cancelling the returned stream
 * cancels `source`. A process's stdout cancelled before its end is abandoned output, which
 * ends that process: read to the end, or cancel knowingly.
 *
 * @param source The bytes, e.g. `process.stdout`; `lines` locks it.
 * @param options The line bound.
 * @returns The lines.
 * @throws {SandboxConfigurationError} When `maxLineLength` is out of range.
 *
 * @example
 * ```ts
 * import { lines } from "./lines.ts";
 *
 * const bytes = new TextEncoder().encode("first\r\nsecond\nlast");
 * const seen: string[] = [];
 * for await (const line of lines(new Blob([bytes]).stream())) seen.push(line);
 * console.log(seen); // ["first", "second", "last"]
 * ```
 */
export function lines(source: ReadableStream<Uint8Array>, options: LinesOptions = {}): ReadableStream<string> {
  const max = options.maxLineLength ?? DEFAULT_MAX_LINE_LENGTH;
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1 || max > 2 ** 30) {
    throw new SandboxConfigurationError("Cannot split lines: options.maxLineLength must be an integer from 1 to 1073741824");
  }
  const reader = source.pipeThrough(new TextDecoderStream()).getReader();
  // Decoded text not yet handed out is `pending` from `start` on (an index, so many short
  // lines in one chunk cost one pass, not one copy each).
  let pending = "";
  let start = 0;
  let ended = false;
  const fail = async (controller: ReadableStreamDefaultController<string>) => {
    const error = new SandboxOutputLimitError(
      `Cannot split lines: a line is longer than ${max} characters (maxLineLength); raise options.maxLineLength or read the bytes directly`,
    );
    await reader.cancel(error).catch(() => {});
    controller.error(error);
  };
  return new ReadableStream<string>({
    async pull(controller) {
      for (;;) {
        const at = pending.indexOf("\n", start);
        if (at !== -1 || (ended && start < pending.length)) {
          const end = at === -1 ? pending.length : at;
          const line = pending.slice(start, end > start && pending[end - 1] === "\r" && at !== -1 ? end - 1 : end);
          start = at === -1 ? pending.length : at + 1;
          if (line.length > max) return await fail(controller);
          controller.enqueue(line);
          return;
        }
        if (ended) return controller.close();
        if (pending.length - start > max + 1) return await fail(controller);
        const { done, value } = await reader.read();
        if (done) ended = true;
        else {
          pending = pending.slice(start) + value;
          start = 0;
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
