// Benchmark of @agentcell/docker against the docker CLI, the raw Engine API and dockerode,
// side by side in one run on the running runtime:
//
//   node bench/sandbox.bench.ts | deno run -A bench/sandbox.bench.ts | bun bench/sandbox.bench.ts
//   npm run bench   (all three)
//
// Rows: 1. sandbox start → /bin/true exit; 2. exec round trip of `true` in one keeper;
// 3. stdout throughput: 256 MiB × 4 runs after one warm-up round by default (BENCH_STREAM_MIB=1024
// BENCH_STREAM_RUNS=1 for one 1 GiB stream) from `dd if=/dev/zero bs=1M` in the guest
// (busybox `head -c` writes 4 KiB pieces and caps the Engine near 45 MB/s, hiding the
// clients), against a bare node:net socket and (on Deno and Bun) the runtime's native socket
// (on Deno also that socket with each read copied into a fresh buffer, and Deno's own
// conn.readable);
// 4. time to the first stdout byte: warm pool `take()`, cold `start()`, `docker run`;
// 5. `sandbox.run("/bin/true")` round trip in one running sandbox, with bare-socket floors
// (bench/_run_row.ts, bench/_exec_floor.ts).
// Variants run interleaved round robin. Each row prints median and p90 per variant, the
// ratio of its median time to ours and this process's CPU time; then where our time goes
// (traced Engine calls), a Markdown table and the goal ratios (BENCH_GOALS_JSON=<file>
// also writes them as JSON, for bench/goals.bench.ts).
//
// Environment: AGENTCELL_TEST_ENGINE (default unix:///run/agentcell-test-engine/docker.sock),
// AGENTCELL_TEST_BUSYBOX_IMAGE (default: scripts/guest-images.sh busybox), BENCH_STARTS (10),
// BENCH_EXECS (20), BENCH_PROCESS_STARTS (10), BENCH_STREAM_MIB (256), BENCH_STREAM_RUNS (4),
// BENCH_STREAM_PRODUCER (dd or head), BENCH_POOL_TAKES (10), BENCH_WARMUPS (2),
// BENCH_ROWS (start,exec,stream,pool,run,trace,synthetic),
// BENCH_ONLY (run only variants whose name contains this text, e.g. for node --cpu-prof),
// DOCKER_CLI (/usr/local/bin/docker).
import { rm } from "node:fs/promises";
import { loadavg } from "node:os";
import process from "node:process";
import type { DockerSandbox } from "../lib/docker/sandbox.ts";
import { DockerEngine } from "../lib/engine/client.ts";
import { LABELS } from "../lib/docker/names.ts";
import { type DockerodeClient, loadDockerode } from "./_dockerode.ts";
import { ourExec } from "./_exec_steps.ts";
import { execRow, NO_RECORD, ourStartTrue, POLICY, rawApiStartTrue, startRow, streamRow, USER } from "./_rows.ts";
import { type SyntheticResult, syntheticStdout } from "./_synthetic.ts";
import { BENCH_LABEL, BENCH_NAMESPACE, benchBackend, benchConfig, runtimeName } from "./_setup.ts";
import { runRow } from "./_run_row.ts";
import { markdownTable, type RowResult, summarize } from "./_stats.ts";
import { reportGoals, sandboxGoals } from "./_goals.ts";
import { poolRow } from "./_pool_row.ts";
import { breakdown, traceEngine, type TracedCall } from "./_trace.ts";
import { sweep } from "./_sweep.ts";

const config = benchConfig();
const runtime = runtimeName();
const rows = new Set((process.env.BENCH_ROWS ?? "start,exec,stream,pool,run,trace,synthetic").split(","));
const engine = new DockerEngine(config.endpoint);
const { backend, spillDirectory } = await benchBackend(config, BENCH_NAMESPACE);

function printRow(result: RowResult): void {
  console.log(`\n${result.row}`);
  const ours = result.variants[0].samplesMs.length > 0 ? summarize(result.variants[0].samplesMs).median : Number.NaN;
  for (const variant of result.variants) {
    if (variant.samplesMs.length === 0) {
      console.log(`  ${variant.variant.padEnd(74)} n/a (${variant.unavailable ?? "no samples"})`);
      continue;
    }
    const { median, p90 } = summarize(variant.samplesMs);
    const rate = variant.bytes === undefined ? "" : `  ${(variant.bytes / 1e6 / (median / 1000)).toFixed(0)} MB/s`;
    console.log(
      `  ${variant.variant.padEnd(74)} median ${median.toFixed(1).padStart(8)} ms  p90 ${p90.toFixed(1).padStart(8)} ms` +
        `  ×${(median / ours).toFixed(2)}${rate}`,
    );
  }
}

function syntheticTable(results: readonly SyntheticResult[], bytes: number, dockerodeMissing: string | undefined): string {
  const lines = [
    `#### stdout path without the Engine: ${bytes / 1024 / 1024} MiB of 32 KiB frames in fresh 64 KiB chunks, in process (median of runs)`,
    "",
    "| variant | runs | wall | MB/s | CPU |",
    "| --- | ---: | ---: | ---: | ---: |",
  ];
  for (const variant of [...new Set(results.map((result) => result.variant))]) {
    const mine = results.filter((result) => result.variant === variant);
    const wall = summarize(mine.map((result) => result.wallMs)).median;
    const cpu = summarize(mine.map((result) => result.cpuMs)).median;
    lines.push(`| ${variant} | ${mine.length} | ${wall.toFixed(0)} ms | ${(bytes / 1e6 / (wall / 1000)).toFixed(0)} | ${cpu.toFixed(0)} ms |`);
  }
  if (dockerodeMissing) lines.push(`| dockerode modem.demuxStream | 0 | n/a | n/a | n/a (${dockerodeMissing}) |`);
  return lines.join("\n");
}

console.log(`# @agentcell/docker benchmark on ${runtime}`);
const version = await engine.version();
console.log(
  `engine ${version.Version} (API ${await engine.apiVersion()}), busybox guest ${config.busyboxImage.slice(0, 19)}…, ` +
    `${config.starts} starts, ${config.execs} execs, ${config.processStarts} process starts, ` +
    `${config.streamRuns} × ${config.streamBytes / 1024 / 1024} MiB (${config.streamProducer}), ${config.warmups} warm-ups`,
);

const load = () => loadavg().map((value) => value.toFixed(2)).join(" ");
const loadBefore = load();
console.log(`load average before: ${loadBefore}`);

const results: RowResult[] = [];
const traces: string[] = [];
const benchStarted = performance.now();
let keeper: DockerSandbox | undefined;
try {
  if (rows.has("start")) {
    const row = await startRow(config, backend, engine);
    printRow(row);
    results.push(row);
  }
  if (rows.has("exec") || rows.has("stream") || rows.has("run") || rows.has("trace") || rows.has("synthetic")) {
    keeper = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
    const keeperId = keeper.resources.keeperId;
    const dockerode: DockerodeClient = await loadDockerode(config.socketPath, keeperId, `${USER.uid}:${USER.gid}`);
    if (dockerode.error) console.log(`dockerode: n/a on ${runtime} (${dockerode.error})`);
    if (rows.has("exec")) {
      const row = await execRow(config, backend, engine, keeper, dockerode);
      printRow(row);
      results.push(row);
    }
    if (rows.has("stream")) {
      const row = await streamRow(config, backend, engine, keeper, dockerode);
      printRow(row);
      results.push(row);
    }
    if (rows.has("run")) {
      const row = await runRow(config, keeper, dockerode, await engine.apiVersion());
      printRow(row);
      results.push(row);
    }
    if (rows.has("trace")) {
      // Where the time goes: a few extra, traced iterations (not part of the rows above).
      const starts: { calls: TracedCall[]; start: number; end: number }[] = [];
      const rawStarts: { calls: TracedCall[]; start: number; end: number }[] = [];
      const execs: { calls: TracedCall[]; start: number; end: number }[] = [];
      for (let i = 0; i < 3; i++) {
        const tracer = traceEngine();
        const start = performance.now();
        await ourStartTrue(backend);
        starts.push({ start, end: performance.now(), calls: tracer.stop() });
        const rawTracer = traceEngine();
        const rawStart = performance.now();
        await rawApiStartTrue(engine, config.busyboxImage);
        rawStarts.push({ start: rawStart, end: performance.now(), calls: rawTracer.stop() });
      }
      for (let i = 0; i < 5; i++) {
        const tracer = traceEngine();
        const start = performance.now();
        await ourExec(engine, keeperId, ["true"], USER);
        execs.push({ start, end: performance.now(), calls: tracer.stop() });
      }
      traces.push(breakdown("ours: sandbox start → /bin/true exit → destroy", starts));
      traces.push(breakdown("raw Engine API: create/start/wait/remove of `true`", rawStarts));
      traces.push(breakdown("ours: exec round trip (createExec+startExec+demultiplex+inspectExec)", execs));
    }
    if (rows.has("synthetic")) {
      const syntheticBytes = 1024 * 1024 * 1024;
      const modem = dockerode.docker?.modem as { demuxStream(source: unknown, out: unknown, err: unknown): void } | undefined;
      const synthetic = await syntheticStdout(syntheticBytes, 2, modem ? (source, out, err) => modem.demuxStream(source, out, err) : undefined);
      traces.push(syntheticTable(synthetic, syntheticBytes, modem ? undefined : dockerode.error));
    }
    for (const trace of traces) console.log(`\n${trace}`);
  }
  if (rows.has("pool")) {
    const row = await poolRow(config, backend);
    printRow(row);
    results.push(row);
  }
} finally {
  await keeper?.destroy();
  const leftovers = await sweep(engine, [BENCH_LABEL, `${LABELS.namespace}=${BENCH_NAMESPACE}`]);
  await rm(spillDirectory, { recursive: true, force: true });
  console.log(`\nleftovers: ${leftovers.length === 0 ? "none" : `${leftovers.join(", ")} (removed)`}`);
}

const summary = `finished in ${((performance.now() - benchStarted) / 1000).toFixed(1)} s; load average before ${loadBefore}, after ${load()}`;
console.log(`\n${summary}\n`);
console.log(markdownTable(runtime, results));
console.log(`\n_${summary}; engine ${version.Version}; ${config.streamRuns} × ${config.streamBytes / 1024 / 1024} MiB via ${config.streamProducer}_`);
if (traces.length > 0) console.log(`\n${traces.join("\n\n")}`);
reportGoals([{ runtime: runtime.split(" ")[0], goals: sandboxGoals(results) }]);
