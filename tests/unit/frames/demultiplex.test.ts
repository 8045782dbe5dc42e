import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_MAX_FRAME_BYTES,
  demultiplex,
  type DemultiplexOptions,
} from "../../../lib/engine/frames/demultiplex.ts";
import { DockerEngineOutputError, type DockerEngineOutputErrorCode } from "../../../lib/engine/errors.ts";
import {
  bytesOf,
  chunkSource,
  chunksOf,
  concat,
  frame,
  pushSource,
  random,
  settle,
  textOf,
} from "./_frames.ts";

const MIB = 1024 * 1024;

/** Options with a recording fault callback. */
function recording(
  overrides: Partial<DemultiplexOptions> = {},
): { options: DemultiplexOptions; faults: DockerEngineOutputError[] } {
  const faults: DockerEngineOutputError[] = [];
  return {
    faults,
    options: {
      maxBufferedOutputBytes: 4 * MIB,
      onFault: (error) => {
        faults.push(error);
      },
      ...overrides,
    },
  };
}

/** Settles like `promise`, or rejects after `ms` milliseconds so a broken bound fails fast. */
async function within<T>(promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Asserts `promise` rejects with a `DockerEngineOutputError` carrying `code`. */
async function rejectsWith(promise: Promise<unknown>, code: DockerEngineOutputErrorCode): Promise<DockerEngineOutputError> {
  let caught: unknown;
  await assert.rejects(within(promise), (error) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DockerEngineOutputError, `expected DockerEngineOutputError, got ${String(caught)}`);
  assert.equal(caught.code, code);
  return caught;
}

test("demultiplex routes interleaved stdout and stderr frames in order", async () => {
  const { options, faults } = recording();
  const source = chunkSource([
    frame(1, "one "),
    concat([frame(2, "alpha "), frame(1, "two ")]),
    frame(2, "beta"),
    frame(1, "three"),
  ]);
  const { stdout, stderr, done } = demultiplex(source, options);
  const [out, err] = await Promise.all([textOf(stdout), textOf(stderr)]);
  await done;
  assert.equal(out, "one two three");
  assert.equal(err, "alpha beta");
  assert.deepEqual(faults, []);
});

test("demultiplex accepts a header split at every byte", async () => {
  const input = concat([
    frame(1, "ab"),
    frame(2, "xyz"),
    frame(1, ""),
    frame(2, ""),
    frame(1, "c"),
  ]);
  const splits: Uint8Array[][] = [];
  for (let cut = 1; cut < input.byteLength; cut += 1) {
    splits.push([input.subarray(0, cut), input.subarray(cut)]);
    for (let second = cut + 1; second < input.byteLength; second += 1) {
      splits.push([input.subarray(0, cut), input.subarray(cut, second), input.subarray(second)]);
    }
  }
  splits.push(Array.from(input, (byte) => Uint8Array.of(byte)));
  for (const chunks of splits) {
    const { options, faults } = recording();
    const { stdout, stderr, done } = demultiplex(chunkSource(chunks), options);
    const [out, err] = await Promise.all([textOf(stdout), textOf(stderr)]);
    await done;
    const lengths = chunks.map((chunk) => chunk.byteLength).join(",");
    assert.equal(out, "abc", `stdout for chunks ${lengths}`);
    assert.equal(err, "xyz", `stderr for chunks ${lengths}`);
    assert.deepEqual(faults, []);
  }
});

test("demultiplex accepts zero-length frames and emits no empty chunk", async () => {
  const { options, faults } = recording();
  const source = chunkSource([
    frame(1, ""),
    concat([frame(2, ""), frame(1, "x"), frame(1, ""), frame(2, "")]),
    frame(2, "y"),
    frame(1, ""),
  ]);
  const { stdout, stderr, done } = demultiplex(source, options);
  const [out, err] = await Promise.all([chunksOf(stdout), chunksOf(stderr)]);
  await done;
  assert.deepEqual(out.map((chunk) => [...chunk]), [[0x78]]);
  assert.deepEqual(err.map((chunk) => [...chunk]), [[0x79]]);
  assert.deepEqual(faults, []);
});

test("demultiplex closes both streams on an empty source", async () => {
  const { options, faults } = recording();
  const { stdout, stderr, done } = demultiplex(chunkSource([]), options);
  assert.deepEqual(await chunksOf(stdout), []);
  assert.deepEqual(await chunksOf(stderr), []);
  await done;
  assert.deepEqual(faults, []);
});

test("demultiplex rejects a frame above maxFrameBytes before keeping payload", async () => {
  const { options, faults } = recording();
  const source = pushSource();
  const { stdout, stderr, done } = demultiplex(source.stream, options);
  const reader = stdout.getReader();
  const pending = reader.read(); // any enqueued byte would fulfil this read
  const payloadStart = new Uint8Array(1000).fill(0x61);
  source.push(concat([frame(1, payloadStart, DEFAULT_MAX_FRAME_BYTES + 1)]));
  const error = await rejectsWith(pending, "framing");
  assert.match(error.message, /^Cannot demultiplex process output: .*1048577 bytes/);
  await rejectsWith(stderr.getReader().read(), "framing");
  await rejectsWith(done, "framing");
  assert.equal(faults.length, 1);
  assert.equal(faults[0], error);
  assert.equal(source.cancelled.called, true);
  assert.equal(source.cancelled.reason, error);
});

test("demultiplex accepts a frame of exactly maxFrameBytes", async () => {
  const { options, faults } = recording({ maxFrameBytes: 1000 });
  const payload = new Uint8Array(1000).fill(7);
  const { stdout, stderr, done } = demultiplex(chunkSource([frame(2, payload)]), options);
  const [out, err] = await Promise.all([bytesOf(stdout), bytesOf(stderr)]);
  await done;
  assert.equal(out.byteLength, 0);
  assert.deepEqual(err, payload);
  assert.deepEqual(faults, []);
});

test("demultiplex rejects stream types other than stdout and stderr", async () => {
  for (const type of [0, 3, 4, 255]) {
    const { options, faults } = recording();
    const { stdout, done } = demultiplex(chunkSource([frame(type, "x")]), options);
    const error = await rejectsWith(done, "framing");
    assert.match(error.message, new RegExp(`stream type ${type} `));
    await rejectsWith(stdout.getReader().read(), "framing");
    assert.equal(faults.length, 1);
  }
});

test("demultiplex rejects nonzero reserved header bytes", async () => {
  for (const index of [1, 2, 3]) {
    const { options, faults } = recording();
    const bad = frame(1, "x");
    bad[index] = 1;
    const { done } = demultiplex(chunkSource([bad]), options);
    const error = await rejectsWith(done, "framing");
    assert.match(error.message, /reserved/);
    assert.equal(faults.length, 1);
  }
});

test("demultiplex rejects an end inside a header", async () => {
  for (let length = 1; length < 8; length += 1) {
    const { options, faults } = recording();
    const input = concat([frame(1, "ok"), frame(2, "x").subarray(0, length)]);
    const { stdout, done } = demultiplex(chunkSource([input]), options);
    const error = await rejectsWith(done, "framing");
    assert.match(error.message, new RegExp(`inside a frame header \\(${length} of 8 bytes\\)`));
    await rejectsWith(stdout.getReader().read(), "framing");
    assert.equal(faults.length, 1);
  }
});

test("demultiplex rejects an end inside a payload", async () => {
  const { options, faults } = recording();
  const truncated = frame(2, "abcdef").subarray(0, 8 + 2);
  const { stderr, done } = demultiplex(chunkSource([truncated]), options);
  const error = await rejectsWith(done, "framing");
  assert.match(error.message, /inside a frame payload \(4 bytes missing\)/);
  await rejectsWith(stderr.getReader().read(), "framing");
  assert.equal(faults.length, 1);
});

test("demultiplex faults on overflow from a reader that never reads", async () => {
  const limit = 4 * MIB;
  const chunkBytes = 64 * 1024;
  const frameBytes = 8 + MIB;
  const total = 64 * MIB;
  let pulled = 0;
  let cancelReason: unknown;
  let cancelled = false;
  // Lazily serves 64 MiB of 1 MiB stdout frames, one 64 KiB chunk per pull.
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= total) {
        controller.close();
        return;
      }
      const chunk = new Uint8Array(Math.min(chunkBytes, total - pulled)).fill(0x5a);
      for (let index = 0; index < chunk.byteLength; index += 1) {
        const offset = (pulled + index) % frameBytes;
        if (offset === 0) chunk[index] = 1;
        else if (offset < 4) chunk[index] = 0;
        else if (offset < 8) chunk[index] = [0x00, 0x10, 0x00, 0x00][offset - 4]; // 1 MiB
      }
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
    cancel(reason) {
      cancelled = true;
      cancelReason = reason;
    },
  }, { highWaterMark: 0 });
  const { options, faults } = recording({ maxBufferedOutputBytes: limit });
  const { stdout, stderr, done } = demultiplex(source, options);
  const error = await rejectsWith(done, "output_limit");
  assert.equal(
    error.message,
    "Cannot demultiplex process output: unread stdout and stderr would exceed 4194304 bytes (maxBufferedOutputBytes): " +
      "read both streams as the output arrives (Promise.all over stdout and stderr), or raise maxBufferedOutputBytes (up to 1 GiB)",
  );
  assert.equal(faults.length, 1);
  assert.equal(faults[0], error);
  assert.equal(cancelled, true);
  assert.equal(cancelReason, error);
  const headers = 8 * Math.ceil(pulled / frameBytes);
  assert.ok(pulled <= limit + chunkBytes + headers, `read ${pulled} bytes from the source`);
  assert.ok(pulled >= limit, `read only ${pulled} bytes before the fault`);
  await settle();
  assert.ok(pulled <= limit + chunkBytes + headers, "the source was read after the fault");
  await rejectsWith(stdout.getReader().read(), "output_limit");
  await rejectsWith(stderr.getReader().read(), "output_limit");
});

test("demultiplex bounds unread stdout and stderr together, to the byte", async () => {
  const { options, faults } = recording({ maxBufferedOutputBytes: 100 });
  const source = pushSource();
  const { stdout, stderr, done } = demultiplex(source.stream, options);
  source.push(frame(1, new Uint8Array(60)));
  source.push(frame(2, new Uint8Array(40))); // 100 unread: at the bound
  await settle();
  assert.deepEqual(faults, []);
  const out = stdout.getReader();
  assert.equal((await out.read()).value?.byteLength, 60); // 40 unread
  source.push(frame(1, new Uint8Array(60))); // 100 unread again
  await settle();
  assert.deepEqual(faults, []);
  source.push(frame(2, new Uint8Array(1))); // 101: overflow
  const error = await rejectsWith(done, "output_limit");
  assert.equal(faults.length, 1);
  assert.equal(source.cancelled.reason, error);
  await rejectsWith(out.read(), "output_limit");
  await rejectsWith(stderr.getReader().read(), "output_limit");
});

test("demultiplex keeps up with consumers that read promptly", async () => {
  const limit = 256 * 1024;
  const chunks: Uint8Array[] = [];
  for (let index = 0; index < 256; index += 1) {
    chunks.push(frame(1 + (index % 2), new Uint8Array(32 * 1024).fill(index)));
  }
  const { options, faults } = recording({ maxBufferedOutputBytes: limit });
  const { stdout, stderr, done } = demultiplex(chunkSource(chunks), options);
  const [out, err] = await Promise.all([bytesOf(stdout), bytesOf(stderr)]);
  await done;
  assert.equal(out.byteLength + err.byteLength, 256 * 32 * 1024);
  assert.deepEqual(faults, []);
});

test("demultiplex faults when a consumer cancels stdout", async () => {
  const { options, faults } = recording();
  const source = pushSource();
  const { stdout, stderr, done } = demultiplex(source.stream, options);
  source.push(frame(1, "unread"));
  await settle();
  await stdout.cancel("not interested");
  assert.equal(faults.length, 1);
  const error = faults[0];
  assert.ok(error instanceof DockerEngineOutputError);
  assert.equal(error.code, "abandoned");
  assert.equal(error.cause, "not interested");
  assert.match(error.message, /stdout/);
  assert.equal(source.cancelled.called, true);
  assert.equal(source.cancelled.reason, error);
  await rejectsWith(stderr.getReader().read(), "abandoned");
  await rejectsWith(done, "abandoned");
});

test("demultiplex faults when a consumer releases and cancels stderr mid-read", async () => {
  const { options, faults } = recording();
  const source = pushSource();
  const { stdout, stderr, done } = demultiplex(source.stream, options);
  const reader = stderr.getReader();
  source.push(frame(2, "first"));
  assert.equal(new TextDecoder().decode((await reader.read()).value), "first");
  await reader.cancel();
  assert.equal(faults.length, 1);
  assert.ok(faults[0] instanceof DockerEngineOutputError && faults[0].code === "abandoned");
  assert.match(faults[0].message, /stderr/);
  await rejectsWith(stdout.getReader().read(), "abandoned");
  await rejectsWith(done, "abandoned");
  assert.equal(source.cancelled.called, true);
});

test("demultiplex calls onFault exactly once across several faults", async () => {
  const { options, faults } = recording({ maxBufferedOutputBytes: 10 });
  const source = pushSource();
  const { stdout, stderr, done } = demultiplex(source.stream, options);
  source.push(frame(1, new Uint8Array(11)));
  await rejectsWith(done, "output_limit");
  await stdout.cancel().catch(() => {});
  await stderr.cancel().catch(() => {});
  await settle();
  assert.equal(faults.length, 1);
  assert.ok(faults[0] instanceof DockerEngineOutputError && faults[0].code === "output_limit");
});

test("demultiplex ignores a cancel after the clean end", async () => {
  const { options, faults } = recording();
  const { stdout, stderr, done } = demultiplex(chunkSource([frame(1, "left unread")]), options);
  await done;
  await stdout.cancel("done with it");
  await stderr.cancel();
  assert.deepEqual(faults, []);
});

test("demultiplex reports a failing source as source_failed with its error as cause", async () => {
  const { options, faults } = recording();
  const source = pushSource();
  const { stdout, done } = demultiplex(source.stream, options);
  source.push(frame(1, "partial"));
  const reset = new Error("connection reset");
  source.error(reset);
  const error = await rejectsWith(done, "source_failed");
  assert.equal(error.cause, reset);
  assert.equal(faults.length, 1);
  await rejectsWith(stdout.getReader().read(), "source_failed");
});

test("demultiplex rejects a chunk that is not bytes", async () => {
  const { options, faults } = recording();
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue("text" as unknown as Uint8Array);
    },
  });
  const { done } = demultiplex(source, options);
  await rejectsWith(done, "framing");
  assert.equal(faults.length, 1);
});

test("demultiplex leaves an unawaited done rejection handled", async () => {
  const { options, faults } = recording();
  demultiplex(chunkSource([frame(9, "x")]), options);
  await settle();
  assert.equal(faults.length, 1);
});

test("demultiplex preserves random bytes exactly", async () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const next = random(seed);
    const frames: Uint8Array[] = [];
    const expected: Uint8Array[][] = [[], []];
    for (let index = 0; index < 300; index += 1) {
      const type = 1 + next(2);
      const payload = new Uint8Array(next(4) === 0 ? 0 : next(5000));
      for (let byte = 0; byte < payload.byteLength; byte += 1) payload[byte] = next(256);
      frames.push(frame(type, payload));
      expected[type - 1].push(payload);
    }
    const input = concat(frames);
    const chunks: Uint8Array[] = [];
    for (let offset = 0; offset < input.byteLength;) {
      const size = 1 + next(seed % 2 === 0 ? 64 : 9000);
      chunks.push(input.slice(offset, offset + size));
      offset += size;
    }
    const { options, faults } = recording();
    const { stdout, stderr, done } = demultiplex(chunkSource(chunks), options);
    const [out, err] = await Promise.all([bytesOf(stdout), bytesOf(stderr)]);
    await done;
    assert.deepEqual(out, concat(expected[0]), `stdout differs for seed ${seed}`);
    assert.deepEqual(err, concat(expected[1]), `stderr differs for seed ${seed}`);
    assert.deepEqual(faults, []);
  }
});

test("demultiplex copies payloads out of the source chunk", async () => {
  const { options } = recording();
  const chunk = frame(1, "abc");
  const { stdout, done } = demultiplex(chunkSource([chunk]), options);
  const [piece] = await chunksOf(stdout);
  await done;
  chunk.fill(0); // a source reusing its buffer must not change delivered output
  assert.equal(new TextDecoder().decode(piece), "abc");
  assert.equal(piece.buffer.byteLength, 3);
});

test("demultiplex hands a stream's pieces on as views of a chunk it gets most of", async () => {
  const { options } = recording();
  const chunk = concat([frame(1, new Uint8Array(1000).fill(7)), frame(1, new Uint8Array(900).fill(8))]);
  const { stdout, done } = demultiplex(chunkSource([chunk]), options);
  const pieces = await chunksOf(stdout);
  await done;
  assert.deepEqual(pieces.map((piece) => piece.byteLength), [1000, 900]);
  for (const piece of pieces) assert.equal(piece.buffer, chunk.buffer, "a view of the source chunk, not a copy");
});

test("demultiplex copies the pieces of a stream that gets little of a chunk", async () => {
  const { options } = recording();
  const chunk = concat([frame(1, "tiny"), frame(2, new Uint8Array(1000))]);
  const { stdout, stderr, done } = demultiplex(chunkSource([chunk]), options);
  const [[out], [err]] = await Promise.all([chunksOf(stdout), chunksOf(stderr)]);
  await done;
  assert.equal(out.buffer.byteLength, 4, "4 bytes must not pin the 1,016-byte chunk");
  assert.equal(err.buffer, chunk.buffer);
});

test("demultiplex measures a chunk by its whole buffer when it is a view of a larger one", async () => {
  const { options } = recording();
  const backing = new Uint8Array(64 * 1024);
  const framed = frame(1, new Uint8Array(1000).fill(9));
  backing.set(framed);
  const { stdout, done } = demultiplex(chunkSource([backing.subarray(0, framed.byteLength)]), options);
  const [piece] = await chunksOf(stdout);
  await done;
  assert.equal(piece.byteLength, 1000);
  assert.equal(piece.buffer.byteLength, 1000, "1,000 bytes must not pin a 64 KiB buffer");
});

test("demultiplex rejects invalid options", () => {
  const valid = recording().options;
  const cases: [Partial<Record<keyof DemultiplexOptions, unknown>>, string][] = [
    [{ maxBufferedOutputBytes: 0 }, "options.maxBufferedOutputBytes"],
    [{ maxBufferedOutputBytes: 1.5 }, "options.maxBufferedOutputBytes"],
    [{ maxBufferedOutputBytes: Number.NaN }, "options.maxBufferedOutputBytes"],
    [{ maxFrameBytes: -1 }, "options.maxFrameBytes"],
    [{ maxFrameBytes: 2 ** 32 }, "options.maxFrameBytes"],
    [{ onFault: undefined }, "options.onFault"],
  ];
  for (const [override, field] of cases) {
    const source = chunkSource([]);
    assert.throws(
      () => demultiplex(source, { ...valid, ...override } as DemultiplexOptions),
      (error: unknown) =>
        error instanceof TypeError && error.message.startsWith("Cannot demultiplex process output: ") &&
        error.message.includes(field),
    );
    assert.equal(source.locked, false, "the source is untouched on invalid options");
  }
});

test("demultiplex fails the outputs with the error onFault returns", async () => {
  const cause = new Error("the sandbox stopped");
  const mapped = new Error("Cannot continue process: the sandbox stopped");
  const faults: DockerEngineOutputError[] = [];
  const output = demultiplex(new ReadableStream({ pull(controller) { controller.error(cause); } }), {
    maxBufferedOutputBytes: 1024,
    onFault: (error) => {
      faults.push(error);
      return mapped;
    },
  });
  await assert.rejects(output.done, (error) => error === mapped);
  await assert.rejects(new Response(output.stdout).text(), (error) => error === mapped);
  await assert.rejects(new Response(output.stderr).text(), (error) => error === mapped);
  assert.equal(faults.length, 1);
  assert.equal(faults[0].code, "source_failed");
  assert.equal(faults[0].cause, cause);
  assert.equal(faults[0].message, "Cannot demultiplex process output: the attach stream failed");
});
