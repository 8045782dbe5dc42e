// Many sandboxes on one machine: how cost grows with N concurrent sandboxes (issue 29).
//
//   node --expose-gc bench/scale.bench.ts [N …]     (npm run bench:scale; deno run -A --v8-flags=--expose-gc …, bun … alike)
//
// Per N (default 1 10 50 100) and per client, side by side in one run, the order rotating by
// one each N: N sandboxes are started at once (`reserve().start()`), then each runs
// `/bin/true` BENCH_SCALE_RUNS (10) times and one command writing 1 MiB to stdout (`dd`),
// all N at once, then all N are destroyed at once. The clients: ours with the default policy
// (no guard execs), ours with the controller lease and the guest deadline
// (`controllerLoss: "stop"`, `execution: { kind: "deadline" }`), dockerode and the docker
// CLI doing the same with a container of the same limits (bench/_scale_clients.ts), and, up
// to BENCH_SCALE_ALLOWLIST_MAX (10) sandboxes, ours with an allowlist network (a proxy
// container per sandbox; needs AGENTCELL_TEST_NODE_IMAGE for the proxy).
//
// Printed per N and client: start p50/p99, `run()` p50/p99 (the `/bin/true` runs) and the
// 1 MiB run's p50, aggregate runs per second over the run phase, destroy p50; with all N
// started and idle (after a garbage collection where the runtime offers one): this process's RSS, open descriptors and Engine connections per sandbox,
// dockerd + containerd RSS and the containerd shims' RSS per sandbox; CPU time per sandbox
// over the whole cycle of this process (with its reaped children: the CLI's processes) and of
// dockerd + containerd; then the ratios ours ÷ CLI and ours ÷ dockerode. A start or a run
// that fails is counted and its first error printed; N goes on.
//
// Environment: AGENTCELL_TEST_ENGINE (default unix:///run/agentcell-test-engine/docker.sock),
// AGENTCELL_TEST_BUSYBOX_IMAGE (default: scripts/guest-images.sh busybox),
// AGENTCELL_TEST_NODE_IMAGE (the proxy image; without it the allowlist client is left out),
// BENCH_SCALE_N (the N list, comma separated, when none is given on the command line),
// BENCH_SCALE_RUNS (10), BENCH_SCALE_ALLOWLIST_MAX (10), BENCH_SCALE_CLIENTS (ours, guards,
// dockerode, cli, allowlist; also `hardened`: dockerode with the keeper's HostConfig), BENCH_SCALE_TRACE (1: our start phase's Engine calls
// at the largest N, p50/p99 and time per sandbox), DOCKER_CLI (/usr/local/bin/docker).
import { rm } from "node:fs/promises";
import { cpus, loadavg, totalmem } from "node:os";
import process from "node:process";
import { LABELS } from "../lib/docker/names.ts";
import { DockerEngine } from "../lib/engine/client.ts";
import type { SandboxPolicyInput } from "../lib/sandbox/policy.ts";
import { collectGarbage, cpuMs, engineConnections, engineProcesses, openDescriptors, statusKiB } from "./_proc.ts";
import { POLICY } from "./_rows.ts";
import { cliClient, dockerodeClient, ourClient, SCALE_LABEL_VALUE, type ScaleClient, type ScaleHandle } from "./_scale_clients.ts";
import { BENCH_LABEL, benchBackend, benchConfig, runtimeName, sleep, withinTimeout } from "./_setup.ts";
import { quantile } from "./_stats.ts";
import { sweep } from "./_sweep.ts";
import { traceEngine, type TracedCall } from "./_trace.ts";

/** Namespace of this benchmark's sandboxes (its own, so its sweep touches nothing else). */
const SCALE_NAMESPACE = "bench-scale";
const ONE_MIB = ["/bin/dd", "if=/dev/zero", "bs=1048576", "count=1"];

function list(text: string, what: string): number[] {
  const values = text.split(/[ ,]+/u).filter(Boolean).map(Number);
  if (values.length === 0 || values.some((n) => !Number.isSafeInteger(n) || n < 1)) {
    throw new Error(`Cannot read ${what}: expected positive integers, got ${text}`);
  }
  return values;
}

const config = benchConfig();
const ns = process.argv.slice(2).length > 0 ? list(process.argv.slice(2).join(","), "the N list") : list(process.env.BENCH_SCALE_N ?? "1,10,50,100", "BENCH_SCALE_N");
const runs = list(process.env.BENCH_SCALE_RUNS ?? "10", "BENCH_SCALE_RUNS")[0];
const allowlistMax = Number(process.env.BENCH_SCALE_ALLOWLIST_MAX ?? 10);
const wanted = new Set((process.env.BENCH_SCALE_CLIENTS ?? "ours,guards,dockerode,cli,allowlist").split(","));
const proxyImage = process.env.AGENTCELL_TEST_NODE_IMAGE;
const trace = process.env.BENCH_SCALE_TRACE === "1";
const engine = new DockerEngine(config.endpoint);
const { backend, spillDirectory } = await benchBackend(config, SCALE_NAMESPACE, proxyImage ? { proxyImageDigest: proxyImage } : {});
const resources = { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 };
const guarded: SandboxPolicyInput = { ...POLICY, controllerLoss: "stop", execution: { kind: "deadline", timeoutMs: 3_600_000 } };
// An allowlist whose host is never reached: the proxy container and its lease are the cost.
const allowlist: SandboxPolicyInput = { ...POLICY, network: { kind: "allowlist", hosts: ["example.invalid"] } };

const module = await import("dockerode");
const docker = new module.default({ socketPath: config.socketPath });
const clients: ScaleClient[] = [
  ourClient("ours", backend, POLICY),
  ourClient("ours, lease + guest deadline", backend, guarded),
  dockerodeClient(docker, config, resources),
  cliClient(config, resources),
  dockerodeClient(docker, config, resources, true),
  ...(proxyImage ? [ourClient("ours, allowlist (proxy per sandbox)", backend, allowlist, 2)] : []),
].filter((_, index) => wanted.has(["ours", "guards", "dockerode", "cli", "hardened", "allowlist"][index]));

/** What one client measured at one N. */
interface Measured {
  readonly client: string;
  readonly n: number;
  readonly startMs: number[];
  readonly runMs: number[];
  readonly bigRunMs: number[];
  readonly destroyMs: number[];
  readonly runsPerSecond: number;
  readonly failures: string[];
  /** Per sandbox, with all started and idle. */
  readonly rssKiB: number;
  readonly fds: number;
  readonly connections: number;
  /** Engine connections per sandbox once every sandbox has run its processes (all idle again). */
  readonly connectionsRun: number;
  readonly daemonsKiB: number;
  readonly shimsKiB: number;
  readonly shims: number;
  /** Per sandbox, the whole cycle. */
  readonly cpuMs: number;
  readonly daemonsCpuMs: number;
  /** Engine connections this process held after every destroy beyond those it held before. */
  readonly connectionsAfter: number;
}

/** Runs `fn` on every item at once, each bounded by 180 s; times the successes into `into`, the failures' reasons into `failures`. */
async function timedAll<T>(items: readonly T[], fn: (item: T) => Promise<unknown>, into: number[], failures: string[]): Promise<boolean[]> {
  return await Promise.all(items.map(async (item) => {
    const started = performance.now();
    try {
      await withinTimeout(fn(item), "one sandbox's step");
      into.push(performance.now() - started);
      return true;
    } catch (error) {
      failures.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      return false;
    }
  }));
}

/**
 * Waits (up to 10 s) until this process holds no Engine connection, so one client's idle
 * kept-alive connections (dockerode's agent keeps them for 5 s) do not count for the next.
 */
async function settled(): Promise<void> {
  for (let waited = 0; waited < 10_000 && engineConnections(config.socketPath) > 0; waited += 250) await sleep(250);
}

async function measure(client: ScaleClient, n: number): Promise<Measured> {
  await settled();
  collectGarbage();
  const failures: string[] = [];
  const startMs: number[] = [];
  const runMs: number[] = [];
  const bigRunMs: number[] = [];
  const destroyMs: number[] = [];
  const baseRss = statusKiB("VmRSS");
  const baseFds = openDescriptors();
  const baseDaemons = engineProcesses(config.socketPath);
  const baseCpu = cpuMs();
  const baseConnections = engineConnections(config.socketPath);
  const handles: ScaleHandle[] = [];
  const tracer = trace && client.name.startsWith("ours") ? traceEngine() : undefined;
  await timedAll(Array.from({ length: n }, (_, i) => i), async () => handles.push(await client.start()), startMs, failures);
  if (tracer) traces.push({ client: client.name, n, calls: tracer.stop() });
  // All started, idle: what N sandboxes hold.
  collectGarbage();
  const rssKiB = (statusKiB("VmRSS") - baseRss) / n;
  const fds = (openDescriptors() - baseFds) / n;
  const connections = (engineConnections(config.socketPath) - baseConnections) / n;
  const held = engineProcesses(config.socketPath);
  const runsStarted = performance.now();
  await timedAll(handles, async (handle) => {
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const result = await handle.run(["/bin/true"]);
      if (result.code !== 0) throw new Error(`/bin/true exited with ${result.code}`);
      runMs.push(performance.now() - started);
    }
    const started = performance.now();
    const big = await handle.run(ONE_MIB);
    if (big.code !== 0 || big.stdoutBytes !== 1024 * 1024) throw new Error(`dd exited with ${big.code} after ${big.stdoutBytes} bytes`);
    bigRunMs.push(performance.now() - started);
  }, [], failures);
  const runsPerSecond = (runMs.length + bigRunMs.length) / ((performance.now() - runsStarted) / 1000);
  // All N have run a process (an execution deadline arms at the first): what they hold now.
  const connectionsRun = (engineConnections(config.socketPath) - baseConnections) / n;
  await timedAll(handles, (handle) => handle.destroy(), destroyMs, failures);
  const cpu = cpuMs();
  const after = engineProcesses(config.socketPath);
  return {
    client: client.name,
    n,
    startMs,
    runMs,
    bigRunMs,
    destroyMs,
    runsPerSecond,
    failures,
    rssKiB,
    fds,
    connections,
    connectionsRun,
    daemonsKiB: (held.daemonsKiB - baseDaemons.daemonsKiB) / n,
    shimsKiB: (held.shimsKiB - baseDaemons.shimsKiB) / n,
    shims: (held.shims - baseDaemons.shims) / n,
    cpuMs: (cpu.own + cpu.children - baseCpu.own - baseCpu.children) / n,
    daemonsCpuMs: (after.daemonsCpuMs - baseDaemons.daemonsCpuMs) / n,
    connectionsAfter: engineConnections(config.socketPath) - baseConnections,
  };
}

const p = (samples: readonly number[], q: number) => quantile([...samples].sort((a, b) => a - b), q);
const msText = (value: number) => (Number.isFinite(value) ? (value >= 100 ? value.toFixed(0) : value.toFixed(1)) : "n/a");
const kibText = (value: number) => (Number.isFinite(value) ? (value / 1024).toFixed(2) : "n/a");

const load = () => loadavg().map((value) => value.toFixed(2)).join(" ");
const version = await engine.version();
const daemons = engineProcesses(config.socketPath);
console.log(`# scale benchmark on ${runtimeName()}, ${new Date().toISOString()}`);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; engine ${version.Version} at ${config.endpoint} ` +
    `(dockerd pid ${daemons.dockerdPid ?? "unknown"}); N = ${ns.join(", ")}; ${runs} runs of /bin/true + one 1 MiB run each; ` +
    `allowlist up to N = ${allowlistMax}${proxyImage ? "" : " (left out: no AGENTCELL_TEST_NODE_IMAGE)"}`,
);
const loadBefore = load();
console.log(`load average before: ${loadBefore}`);

const results: Measured[] = [];
const traces: { client: string; n: number; calls: TracedCall[] }[] = [];
const started = performance.now();
try {
  // One unmeasured sandbox per client: modules loaded, code compiled, first connections made.
  for (const client of clients) await measure(client, 1);
  for (const [index, n] of ns.entries()) {
    const here = clients.filter((client) => client.containers === 1 || n <= allowlistMax);
    for (let turn = 0; turn < here.length; turn++) {
      const client = here[(index + turn) % here.length];
      const result = await measure(client, n);
      results.push(result);
      const failed = result.failures.length === 0 ? "" : `; ${result.failures.length} failed, first: ${result.failures[0]}`;
      console.log(
        `N=${n} ${client.name}: start p50 ${msText(p(result.startMs, 0.5))} ms, p99 ${msText(p(result.startMs, 0.99))} ms; ` +
          `run p50 ${msText(p(result.runMs, 0.5))} ms, p99 ${msText(p(result.runMs, 0.99))} ms; ${result.runsPerSecond.toFixed(1)} runs/s; ` +
          `load ${load()}${failed}`,
      );
    }
  }
} finally {
  const leftovers = await sweep(engine, [`${BENCH_LABEL}=${SCALE_LABEL_VALUE}`, `${LABELS.namespace}=${SCALE_NAMESPACE}`]);
  await rm(spillDirectory, { recursive: true, force: true });
  console.log(`leftovers: ${leftovers.length === 0 ? "none" : `${leftovers.join(", ")} (removed)`}`);
}

console.log(`\nfinished in ${((performance.now() - started) / 1000).toFixed(0)} s; load average before ${loadBefore}, after ${load()}\n`);
console.log(
  "| N | client | ok | start p50 / p99 ms | run p50 / p99 ms | 1 MiB run p50 ms | runs/s | destroy p50 ms | " +
    "controller RSS MiB / sandbox | fds / sandbox | Engine conns / sandbox: started / after runs | dockerd+containerd RSS MiB / sandbox | shim RSS MiB / sandbox | " +
    "controller CPU ms / sandbox | dockerd+containerd CPU ms / sandbox | conns after |",
);
console.log("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of results) {
  console.log(
    `| ${r.n} | ${r.client} | ${r.startMs.length}/${r.n} | ${msText(p(r.startMs, 0.5))} / ${msText(p(r.startMs, 0.99))} | ` +
      `${msText(p(r.runMs, 0.5))} / ${msText(p(r.runMs, 0.99))} | ${msText(p(r.bigRunMs, 0.5))} | ${r.runsPerSecond.toFixed(1)} | ` +
      `${msText(p(r.destroyMs, 0.5))} | ${kibText(r.rssKiB)} | ${r.fds.toFixed(1)} | ${r.connections.toFixed(2)} / ${r.connectionsRun.toFixed(2)} | ${kibText(r.daemonsKiB)} | ` +
      `${kibText(r.shimsKiB)} (${r.shims.toFixed(1)} shims) | ${r.cpuMs.toFixed(1)}${clients.find((c) => c.name === r.client)?.child ? " (with its CLI children)" : ""} | ` +
      `${r.daemonsCpuMs.toFixed(1)} | ${r.connectionsAfter} |`,
  );
}

console.log("\nratios of medians (time: lower is better for ours; runs/s: higher is better for ours)\n");
console.log("| N | ours ÷ | start p50 | start p99 | run p50 | run p99 | runs/s | controller CPU | dockerd CPU |");
console.log("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const n of ns) {
  for (const ours of results.filter((r) => r.n === n && r.client.startsWith("ours"))) {
    for (const other of results.filter((r) => r.n === n && !r.client.startsWith("ours"))) {
      const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "n/a");
      console.log(
        `| ${n} | ${ours.client} ÷ ${other.client} | ${ratio(p(ours.startMs, 0.5), p(other.startMs, 0.5))} | ${ratio(p(ours.startMs, 0.99), p(other.startMs, 0.99))} | ` +
          `${ratio(p(ours.runMs, 0.5), p(other.runMs, 0.5))} | ${ratio(p(ours.runMs, 0.99), p(other.runMs, 0.99))} | ${ratio(ours.runsPerSecond, other.runsPerSecond)} | ` +
          `${ratio(ours.cpuMs, other.cpuMs)} | ${ratio(ours.daemonsCpuMs, other.daemonsCpuMs)} |`,
      );
    }
  }
}
for (const r of results.filter((r) => r.failures.length > 0)) {
  console.log(`\nN=${r.n} ${r.client}: ${r.failures.length} failures; first: ${r.failures[0]}`);
}

// BENCH_SCALE_TRACE=1: where the start phase's time went, per Engine call (all N at once).
for (const { client, n, calls } of traces.filter((t) => t.n === Math.max(...ns))) {
  const byCall = new Map<string, number[]>();
  for (const call of calls) byCall.set(call.call, [...(byCall.get(call.call) ?? []), call.end - call.start]);
  console.log(`\nN=${n} ${client}: Engine calls of the start phase\n`);
  console.log("| call | per sandbox | p50 ms | p99 ms | ms per sandbox (sum ÷ N) |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  const rows = [...byCall].sort((a, b) => b[1].reduce((x, y) => x + y, 0) - a[1].reduce((x, y) => x + y, 0));
  for (const [call, spans] of rows.slice(0, 15)) {
    console.log(`| ${call} | ${(spans.length / n).toFixed(1)} | ${msText(p(spans, 0.5))} | ${msText(p(spans, 0.99))} | ${msText(spans.reduce((x, y) => x + y, 0) / n)} |`);
  }
}
