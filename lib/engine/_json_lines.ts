/**
 * Newline-delimited records of a streamed Engine reply (`stats?stream=true`), each line
 * bounded in bytes and parsed as it is read.
 *
 * @module
 */
import { concatBytes } from "../streams/concat_bytes.ts";

/**
 * Split `body` at `\n` into lines of at most `maxLineBytes` bytes (UTF-8, the line break
 * excluded; empty lines skipped) and hand each to `parse`. Pull-driven (`highWaterMark` 0):
 * `body` is read only while the returned stream is read, and at most one line plus one
 * body chunk is held. Cancelling the returned stream cancels `body`; a `parse` that throws,
 * or a longer line (`tooLong()`), errors it and cancels `body`.
 *
 * @param body The reply body; locked.
 * @param maxLineBytes The line bound, bytes.
 * @param parse One line to its record; throws to reject it.
 * @param tooLong The error for a line past the bound.
 * @returns The records.
 */
export function jsonLines<T>(
  body: ReadableStream<Uint8Array>,
  maxLineBytes: number,
  parse: (line: string) => T,
  tooLong: () => Error,
): ReadableStream<T> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending: Uint8Array = new Uint8Array(0);
  const fail = async (controller: ReadableStreamDefaultController<T>, error: unknown) => {
    await reader.cancel(error).catch(() => {});
    controller.error(error);
  };
  return new ReadableStream<T>({
    async pull(controller) {
      for (;;) {
        const at = pending.indexOf(0x0a);
        if (at > maxLineBytes || (at === -1 && pending.byteLength > maxLineBytes)) return await fail(controller, tooLong());
        if (at !== -1) {
          const line = decoder.decode(pending.subarray(0, at)).trim();
          pending = pending.slice(at + 1);
          if (line === "") continue;
          let record: T;
          try {
            record = parse(line);
          } catch (error) {
            return await fail(controller, error);
          }
          controller.enqueue(record);
          return;
        }
        const { done, value } = await reader.read();
        if (done) {
          const rest = decoder.decode(pending).trim();
          pending = new Uint8Array(0);
          if (rest !== "") {
            try {
              controller.enqueue(parse(rest));
            } catch (error) {
              return controller.error(error);
            }
          }
          return controller.close();
        }
        pending = concatBytes([pending, value]);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
