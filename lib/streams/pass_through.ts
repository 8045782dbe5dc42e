/**
 * The one pass-through byte stream of the project: hands a source's chunks on unchanged,
 * one per read, telling a hook of each (to count it) and mapping a failure to the error its
 * layer raises. Pull-based with a high-water mark of 0, so it never reads ahead: a
 * `TransformStream` would queue a chunk on each side.
 *
 * @module
 */
import { chunkReader } from "./chunk_reader.ts";

/** What {@linkcode passThrough} does besides handing chunks on. */
export interface PassThroughHooks {
  /**
   * Told of each chunk before it is handed on. What it throws errors the stream (through
   * `mapError`) and cancels the source; the chunk is not handed on.
   *
   * @default undefined (chunks are not observed)
   */
  readonly onChunk?: (chunk: Uint8Array) => void;
  /**
   * Turns a failure (the source's error, or what `onChunk` threw) into the error the stream
   * errors with.
   *
   * @default undefined (the failure as is)
   */
  readonly mapError?: (error: unknown) => unknown;
}

/**
 * Wraps `source` in a stream that reads it only while its own reader reads, one chunk per
 * read. Cancelling the result cancels the source with the same reason.
 *
 * @param source The bytes to hand on; locked from now on.
 * @param hooks The chunk observer and the error mapping.
 * @returns The pass-through stream (high-water mark 0).
 * @throws {TypeError} When `source` is already locked.
 *
 * @example Count the bytes that pass
 * ```ts
 * import { passThrough } from "./pass_through.ts";
 *
 * let bytes = 0;
 * const counted = passThrough(ReadableStream.from([new Uint8Array(3), new Uint8Array(4)]), {
 *   onChunk: (chunk) => bytes += chunk.byteLength,
 * });
 * await new Response(counted).arrayBuffer();
 * console.log(bytes); // 7
 * ```
 */
export function passThrough(source: ReadableStream<Uint8Array>, hooks: PassThroughHooks = {}): ReadableStream<Uint8Array> {
  // Direct reads where the source offers them (a tar entry's body): no second queue hop.
  const reader = chunkReader(source);
  const { onChunk, mapError } = hooks;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Uint8Array | null;
      try {
        chunk = await reader.read();
      } catch (error) {
        controller.error(mapError === undefined ? error : mapError(error));
        return;
      }
      if (chunk === null) {
        controller.close();
        return;
      }
      try {
        onChunk?.(chunk);
      } catch (error) {
        const failure = mapError === undefined ? error : mapError(error);
        controller.error(failure);
        await reader.cancel(failure).catch(() => {});
        return;
      }
      controller.enqueue(chunk);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
