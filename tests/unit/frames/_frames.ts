/**
 * Test helpers for the attach-stream demultiplexer: frame encoding, controllable sources and
 * stream collection.
 *
 * @module
 */
import { concatBytes } from "../../../lib/streams/concat_bytes.ts";

/**
 * Encodes one attach-stream frame.
 *
 * @param type Stream type byte (1 stdout, 2 stderr).
 * @param payload Payload bytes or text.
 * @param declared Length written in the header; defaults to the payload's.
 */
export function frame(
  type: number,
  payload: Uint8Array | string,
  declared?: number,
): Uint8Array {
  const bytes = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  const out = new Uint8Array(8 + bytes.byteLength);
  out[0] = type;
  new DataView(out.buffer).setUint32(4, declared ?? bytes.byteLength);
  out.set(bytes, 8);
  return out;
}

/** Concatenates byte arrays (the library's own helper). */
export const concat: (parts: readonly Uint8Array[]) => Uint8Array = concatBytes;

/** A source the test feeds by hand, recording whether and why it was cancelled. */
export interface PushSource {
  readonly stream: ReadableStream<Uint8Array>;
  push(chunk: Uint8Array): void;
  close(): void;
  error(reason: unknown): void;
  readonly cancelled: { called: boolean; reason: unknown };
}

/** Creates a {@linkcode PushSource}. */
export function pushSource(): PushSource {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const cancelled = { called: false, reason: undefined as unknown };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel(reason) {
      cancelled.called = true;
      cancelled.reason = reason;
    },
  });
  return {
    stream,
    push: (chunk) => controller.enqueue(chunk),
    close: () => controller.close(),
    error: (reason) => controller.error(reason),
    cancelled,
  };
}

/** A source that serves the given chunks one per pull, then closes. */
export function chunkSource(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let index = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (index < chunks.length) controller.enqueue(chunks[index++]);
      else controller.close();
    },
  }, { highWaterMark: 0 });
}

/** Reads a stream to its end; returns its chunks. */
export async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** Reads a stream to its end; returns its bytes. */
export async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return concat(await chunksOf(stream));
}

/** Decodes a stream's bytes as UTF-8. */
export async function textOf(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new TextDecoder().decode(await bytesOf(stream));
}

/** A deterministic pseudo-random generator (xorshift32). */
export function random(seed: number): (bound: number) => number {
  let state = seed >>> 0 || 1;
  return (bound) => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % bound;
  };
}

/** Lets pending promise jobs and stream steps run. */
export async function settle(rounds = 10): Promise<void> {
  for (let round = 0; round < rounds; round += 1) {
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
  }
}
