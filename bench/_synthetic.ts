// The stdout path without the Engine: the same frame layout the Engine sends (32 KiB
// payload frames arriving in fresh 64 KiB chunks) generated in process, through our
// `demultiplex`, through no demultiplexer at all (Web Streams floor), and through dockerode's
// `modem.demuxStream`. Shows how much CPU the demultiplexer itself costs per GiB.
//
// Each chunk arrives in its own macrotask (`setImmediate`), as socket reads do: our
// `demultiplex` reads its source continuously without waiting for the stdout reader, so a
// source that delivers megabytes within one macrotask outruns even a draining reader and
// faults with `output_limit` once 4 MiB are unread.
import process from "node:process";
import { Readable, Writable } from "node:stream";
import { setImmediate } from "node:timers";
import { demultiplex } from "../lib/engine/frames/demultiplex.ts";
import { MAX_BUFFERED_OUTPUT_BYTES } from "./_exec_steps.ts";
import { drain } from "./_setup.ts";

const CHUNK_BYTES = 64 * 1024;
const FRAME_PAYLOAD_BYTES = 32 * 1024;
const FRAME_BYTES = 8 + FRAME_PAYLOAD_BYTES;

/** Fresh 64 KiB chunks carrying `payload` bytes as stdout frames of 32 KiB (zero payload). */
function* frameChunks(payload: number): Generator<Uint8Array> {
  const frames = Math.ceil(payload / FRAME_PAYLOAD_BYTES);
  const total = payload + frames * 8;
  for (let offset = 0; offset < total; offset += CHUNK_BYTES) {
    const chunk = new Uint8Array(Math.min(CHUNK_BYTES, total - offset));
    // Headers whose 8 bytes overlap [offset, offset + chunk.length).
    for (let frame = Math.floor(Math.max(0, offset - 8) / FRAME_BYTES); frame * FRAME_BYTES < offset + chunk.length; frame++) {
      if (frame >= frames) break;
      const size = Math.min(FRAME_PAYLOAD_BYTES, payload - frame * FRAME_PAYLOAD_BYTES);
      const header = [1, 0, 0, 0, size >>> 24, (size >>> 16) & 0xff, (size >>> 8) & 0xff, size & 0xff];
      for (let i = 0; i < 8; i++) {
        const at = frame * FRAME_BYTES + i - offset;
        if (at >= 0 && at < chunk.length) chunk[at] = header[i];
      }
    }
    yield chunk;
  }
}

const nextMacrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The chunks of `frameChunks`, each after a macrotask boundary. */
async function* arriving(payload: number): AsyncGenerator<Uint8Array> {
  for (const chunk of frameChunks(payload)) {
    await nextMacrotask();
    yield chunk;
  }
}

function webSource(payload: number): ReadableStream<Uint8Array> {
  const chunks = arriving(payload);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  }, { highWaterMark: 0 });
}

/** One synthetic measurement: wall and CPU milliseconds for `payload` bytes. */
export interface SyntheticResult {
  readonly variant: string;
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function measure(variant: string, payload: number, fn: () => Promise<number>, exact: boolean): Promise<SyntheticResult> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const bytes = await fn();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (exact ? bytes !== payload : bytes < payload) throw new Error(`Cannot measure ${variant}: counted ${bytes} of ${payload} bytes`);
  return { variant, wallMs, cpuMs: (used.user + used.system) / 1000 };
}

/** Runs the three synthetic variants on `payload` bytes, `runs` times each, interleaved. */
export async function syntheticStdout(payload: number, runs: number, demuxStream?: (source: unknown, out: Writable, err: Writable) => void): Promise<SyntheticResult[]> {
  const results: SyntheticResult[] = [];
  for (let run = 0; run < runs; run++) {
    results.push(
      await measure("ours: demultiplex → stdout reader", payload, async () => {
        const output = demultiplex(webSource(payload), { maxBufferedOutputBytes: MAX_BUFFERED_OUTPUT_BYTES, onFault: () => {} });
        const [bytes] = await Promise.all([drain(output.stdout), drain(output.stderr), output.done]);
        return bytes;
      }, true),
    );
    results.push(await measure("Web Streams floor: drain the framed source, no demux", payload, () => drain(webSource(payload)), false));
    if (demuxStream) {
      results.push(
        await measure("dockerode modem.demuxStream (Readable source)", payload, async () => {
          let bytes = 0;
          const source = Readable.from(arriving(payload), { objectMode: false });
          const ended = new Promise<void>((resolve, reject) => {
            source.once("end", resolve);
            source.once("error", reject);
          });
          const counter = (add: (n: number) => void) =>
            new Writable({
              write(chunk: Uint8Array, _encoding, callback) {
                add(chunk.byteLength);
                callback();
              },
            });
          demuxStream(source, counter((n) => bytes += n), counter(() => {}));
          await ended;
          return bytes;
        }, true),
      );
    }
  }
  return results;
}
