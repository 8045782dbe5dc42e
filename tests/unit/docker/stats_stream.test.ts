// sandboxStatsStream against a scripted fake engine (how many samples the Engine sends, and
// when, is the script's): the interval thins samples, the newest one wins over a backlog, a
// line past MAX_STATS_LINE_BYTES or off the schema errors the stream, cancel and the
// sandbox's stop close the connection, the Engine's end closes the stream; and the
// interval's validation.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { MAX_STATS_LINE_BYTES } from "../../../lib/engine/container_stats.ts";
import {
  DEFAULT_STATS_INTERVAL_MS,
  MAX_STATS_INTERVAL_MS,
  MIN_STATS_INTERVAL_MS,
  sandboxStatsStream,
  statsIntervalOf,
} from "../../../lib/docker/stats_stream.ts";
import { SandboxConfigurationError, SandboxEngineError } from "../../../lib/sandbox/errors.ts";
import type { SandboxStats } from "../../../lib/sandbox/stats.ts";
import { type FakeConnection, startVersionedFakeEngine } from "../_fake_engine.ts";

const KEEPER = "a".repeat(64);

/** One Engine sample read at `second` seconds past a fixed minute, `total` ns of CPU so far. */
function sample(second: number, total = second * 1_000): string {
  const read = new Date(Date.UTC(2026, 11, 2, 12, 0, 0) + second * 1_000).toISOString();
  return JSON.stringify({
    read,
    cpu_stats: { cpu_usage: { total_usage: total }, system_cpu_usage: second * 10_000, online_cpus: 1 },
    precpu_stats: {},
    memory_stats: { usage: 100 + second, limit: 1_000 },
    pids_stats: { current: 1, limit: 10 },
  }) + "\n";
}

function chunk(text: string): string {
  return `${new TextEncoder().encode(text).byteLength.toString(16)}\r\n${text}\r\n`;
}

const HEAD = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

async function withStream(
  script: (connection: FakeConnection, head: string) => Promise<void>,
  fn: (open: (intervalMs: number, stopping?: AbortSignal) => ReadableStream<SandboxStats>, heads: () => string[]) => Promise<void>,
): Promise<void> {
  const engine = await startVersionedFakeEngine(script);
  try {
    const client = new DockerEngine(`unix://${engine.socketPath}`);
    await fn(
      (intervalMs, stopping = new AbortController().signal) =>
        sandboxStatsStream({ engine: client, keeperId: KEEPER, cpus: 1, stopping, openTimeoutMs: 5_000 }, intervalMs),
      () => engine.requests.map((request) => request.head),
    );
    assert.deepEqual(engine.scriptErrors, []);
  } finally {
    await engine.close();
  }
}

async function all(stream: ReadableStream<SandboxStats>): Promise<SandboxStats[]> {
  const seen: SandboxStats[] = [];
  for await (const stats of stream) seen.push(stats);
  return seen;
}

test("sandboxStatsStream asks for stream=true once, hands out one sample per interval and closes when the Engine ends the reply", async () => {
  await withStream(async (connection) => {
    await connection.write(HEAD);
    for (const second of [0, 1, 2, 3, 4, 5, 6]) await connection.write(chunk(sample(second)));
    await connection.write("0\r\n\r\n");
    await connection.end();
  }, async (open, heads) => {
    const seen = await all(open(3_000));
    const stream = heads().filter((head) => head.includes("/stats"));
    assert.equal(stream.length, 1);
    assert.match(stream[0]!, new RegExp(`^GET /v1\\.51/containers/${KEEPER}/stats\\?stream=true HTTP/1\\.1`));
    // Engine samples at 0…6 s, 3 s apart at least (less the slack): 0, 3, 6; what the script
    // sent before a read may overtake the older ones, never a sample closer than the interval.
    for (let at = 1; at < seen.length; at++) {
      assert.ok(Date.parse(seen[at]!.readAt) - Date.parse(seen[at - 1]!.readAt) >= 3_000 - 250);
    }
    assert.ok(seen.length >= 1 && seen.length <= 3, `${seen.length} samples`);
    assert.equal(seen.at(-1)!.readAt, "2026-12-02T12:00:06.000Z", "the newest sample is not dropped at the end");
    assert.equal(seen[0]!.memory.limitBytes, 1_000);
  });
});

test("sandboxStatsStream gives a slow reader the newest sample, not a backlog", async () => {
  let release!: () => void;
  const sent = new Promise<void>((resolve) => release = resolve);
  await withStream(async (connection) => {
    await connection.write(HEAD);
    for (let second = 0; second < 50; second++) await connection.write(chunk(sample(second)));
    release();
    await connection.closed;
  }, async (open) => {
    const reader = open(MIN_STATS_INTERVAL_MS).getReader();
    await sent;
    // Let the stream take in what was sent (it keeps only the newest sample).
    for (let turns = 0; turns < 50; turns++) await new Promise((resolve) => setTimeout(resolve, 10));
    const { value } = await reader.read();
    assert.equal(value!.readAt, "2026-12-02T12:00:49.000Z");
    await reader.cancel();
  });
});

test("sandboxStatsStream cancel() closes the Engine connection; so does the sandbox's stop, which closes the stream", async () => {
  const closed: Promise<void>[] = [];
  await withStream(async (connection) => {
    closed.push(connection.closed);
    await connection.write(HEAD);
    await connection.write(chunk(sample(0)));
    await connection.closed;
  }, async (open) => {
    const reader = open(1_000).getReader();
    assert.equal((await reader.read()).done, false);
    const next = reader.read();
    await reader.cancel();
    assert.equal((await next).done, true);
    await closed[0];

    const stopping = new AbortController();
    const stopped = open(1_000, stopping.signal).getReader();
    assert.equal((await stopped.read()).done, false);
    const pending = stopped.read();
    stopping.abort();
    assert.equal((await pending).done, true);
    await closed[1];

    const already = open(1_000, stopping.signal);
    assert.deepEqual(await all(already), [], "a stream of a stopped sandbox closes without a connection");
    assert.equal(closed.length, 2);
  });
});

test(`sandboxStatsStream errors with a SandboxEngineError on a line past ${MAX_STATS_LINE_BYTES} bytes, off the schema, or a 404`, async () => {
  let connection = 0;
  await withStream(async (fake) => {
    connection++;
    if (connection === 3) {
      const body = JSON.stringify({ message: "No such container: x" });
      await fake.write(`HTTP/1.1 404 Not Found\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await fake.end();
      return;
    }
    await fake.write(HEAD);
    if (connection === 1) await fake.write(chunk(`{"read":"${"x".repeat(MAX_STATS_LINE_BYTES)}"`));
    else await fake.write(chunk(`{"read":"2026-12-02T12:00:00Z"}\n`));
    await fake.closed;
  }, async (open) => {
    await assert.rejects(all(open(1_000)), (error) =>
      error instanceof SandboxEngineError &&
      error.message.includes(`a line is longer than ${MAX_STATS_LINE_BYTES} bytes`));
    await assert.rejects(all(open(1_000)), (error) =>
      error instanceof SandboxEngineError && /a sample does not match its schema at cpu_stats/.test(error.message));
    await assert.rejects(all(open(1_000)), (error) => error instanceof SandboxEngineError && error.status === 404);
  });
});

test("statsIntervalOf defaults to 1000 ms and refuses an interval out of range or an unknown option, naming the field", () => {
  assert.equal(statsIntervalOf({}), DEFAULT_STATS_INTERVAL_MS);
  assert.equal(statsIntervalOf(undefined), 1_000);
  assert.equal(statsIntervalOf({ intervalMs: MIN_STATS_INTERVAL_MS }), 1_000);
  assert.equal(statsIntervalOf({ intervalMs: MAX_STATS_INTERVAL_MS }), 3_600_000);
  for (const intervalMs of [999, 3_600_001, 1_500.5, Number.NaN, Number.POSITIVE_INFINITY, "1000", null]) {
    assert.throws(() => statsIntervalOf({ intervalMs }), (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === "Cannot stream sandbox stats: options.intervalMs must be an integer from 1000 to 3600000 milliseconds");
  }
  assert.throws(() => statsIntervalOf({ interval: 5 }), (error) =>
    error instanceof SandboxConfigurationError && error.message.startsWith("Cannot stream sandbox stats: options.interval"));
});
