/**
 * File transfer benchmark, side by side in one run on one engine:
 *
 * - export of a workspace with one 1 GiB file and 2,000 small files: `exportTree` (every
 *   header, body length, padding and path checked, every body read) against raw
 *   `curl --unix-socket … GET /containers/{accessor}/archive` into /dev/null and against
 *   dockerode's `getArchive` piped into a sink (neither validates anything);
 * - import of a 1 GiB file: `importTree(importDirectory(dir))` against `curl -T` of the same
 *   tree as a prepared tar and dockerode's `putArchive` of that tar.
 *
 * Rounds interleave the variants; medians are printed with ratios to curl. Every variant runs
 * in a fresh process: ours once under each of Node, Deno and Bun, dockerode under Node (it
 * is a Node library), each in a child of this script (`--child`) that reports its wall time
 * for the transfer alone, its RSS just before it and its peak RSS (VmHWM) after it; curl
 * under GNU time (`%M`, its peak RSS). The child runs the pipeline `exportTree` /
 * `importTree` run (transfer guard, Engine archive exchange, strict tar reader or our
 * writer) on the parent's accessor or keeper, without the sandbox object.
 *
 * Run the parent with Node (`npm run bench:files`); `deno` and `bun` must be on PATH (npm
 * scripts put node_modules/.bin there). The engine is `AGENTCELL_TEST_ENGINE` (default the
 * private test engine) and the guest `AGENTCELL_TEST_BUSYBOX_IMAGE` (default: made by
 * scripts/guest-images.sh), as in `bench/_setup.ts`.
 *
 * `AGENTCELL_BENCH_ROUNDS` (default 5) sets the rounds. Needs `curl` and `/usr/bin/time`.
 * Before every sample the host runs `sync`, so dirty pages of the previous import do not
 * slow the next variant down.
 *
 * @module
 */
import { execFile, execFileSync } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, open, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Docker from "dockerode";
import { fileURLToPath } from "node:url";
import { createDockerSandboxBackend, type DockerSandbox, importDirectory } from "../mod.ts";
import { DockerEngine } from "../lib/engine/mod.ts";
import { normalizeTransferOptions } from "../lib/sandbox/transfer_input.ts";
import { openExport } from "../lib/docker/files/export_tree.ts";
import { importTreeInto } from "../lib/docker/files/import_tree.ts";
import { TransferGuard } from "../lib/docker/files/_transfer_guard.ts";
import { benchConfig } from "./_setup.ts";
import { statusKiB } from "./_proc.ts";
import { type GoalReport, ratio, reportGoals } from "./_goals.ts";

// The engine and busybox guest as for the other benchmarks; children inherit them.
const config = benchConfig();
process.env.AGENTCELL_TEST_ENGINE = config.endpoint;
process.env.AGENTCELL_TEST_BUSYBOX_IMAGE = config.busyboxImage;
const { endpoint, socketPath, busyboxImage: imageDigest } = config;
const rounds = Number(process.env.AGENTCELL_BENCH_ROUNDS ?? 5);
const GIB = 1024 * 1024 * 1024;
const SMALL_FILES = 2000;

interface Sample {
  readonly ms: number;
  /** CPU time (user + system) of the process that did the transfer, during it, ms. */
  readonly cpuMs: number;
  /** Peak RSS of the process that did the transfer, MiB. */
  readonly peakMiB: number;
  /** Its RSS just before the transfer (0 for curl), MiB. */
  readonly beforeMiB: number;
}

/** A runtime a child may run under. */
type Runtime = "node" | "deno" | "bun";

/** What a child is asked to do. */
interface ChildTask {
  readonly variant: "export-ours" | "export-dockerode" | "import-ours" | "import-dockerode";
  /** The runtime of the child (dockerode variants run under Node). */
  readonly runtime: Runtime;
  /** Accessor (exports) or keeper (imports) container ID. */
  readonly containerId: string;
  /** Host directory (ours) or tar file (dockerode) to import. */
  readonly source?: string;
  readonly spillDirectory: string;
}

/** A dockerode client of the engine, loaded on first use. */
async function dockerode(): Promise<Docker> {
  const { default: Dockerode } = await import("dockerode");
  return new Dockerode({ socketPath });
}

function statusMiB(field: string): number {
  const kib = statusKiB(field);
  return Number.isNaN(kib) ? 0 : kib / 1024;
}

/** Runs in a child: one transfer, then one JSON line with its Sample. */
async function child(task: ChildTask): Promise<void> {
  const engine = new DockerEngine(endpoint);
  await engine.apiVersion(); // negotiated before the clock starts, as dockerode's is
  // dockerode only in its own variants: loaded into our variants' children, its module graph
  // made their heaps larger and the collector later, and their export RSS growth measured
  // that (2026-12-01, same code, 3 interleaved rounds: Node 58–71 → 28 MiB, Deno 62–69 →
  // 43–53 MiB, Bun 72–93 → 47–52 MiB without it).
  const docker = task.variant.endsWith("-dockerode") ? await dockerode() : undefined;
  const run: Record<ChildTask["variant"], () => Promise<void>> = {
    "export-ours": async () => {
      const options = normalizeTransferOptions({}, "export files", true);
      const guard = new TransferGuard("export files", options, []);
      const host = { engine, accessorId: task.containerId, spillDirectory: task.spillDirectory, timeoutMs: 30_000, release: () => {} };
      let bytes = 0;
      for await (const entry of await openExport(host, { kind: "workspace" }, options, guard)) {
        for await (const chunk of entry.body) bytes += chunk.length;
      }
      if (bytes < GIB) throw new Error(`short export: ${bytes}`);
    },
    "export-dockerode": async () => {
      await pipeline(await docker!.getContainer(task.containerId).getArchive({ path: "/workspace" }), sink());
    },
    "import-ours": async () => {
      const host = { engine, keeperId: task.containerId, user: { uid: 65534, gid: 65534 }, stopping: new AbortController().signal };
      const receipt = await importTreeInto(host, importDirectory(task.source!), {});
      if (receipt.bytes !== GIB) throw new Error(`short import: ${receipt.bytes}`);
    },
    "import-dockerode": async () => {
      await docker!.getContainer(task.containerId).putArchive(createReadStream(task.source!), { path: "/workspace/work" });
    },
  };
  const beforeMiB = statusMiB("VmRSS");
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run[task.variant]();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, beforeMiB, peakMiB: statusMiB("VmHWM") } satisfies Sample));
}

/** Flushes dirty pages first, so one variant's writes do not slow the next one down. */
function settle(): void {
  execFileSync("sync");
}

/** The command line that runs this script under `runtime`. */
function command(runtime: Runtime, args: string[]): [string, string[]] {
  const script = fileURLToPath(import.meta.url);
  if (runtime === "deno") return ["deno", ["run", "-A", script, ...args]];
  if (runtime === "bun") return ["bun", [script, ...args]];
  return [process.execPath, [script, ...args]];
}

/** Runs one transfer in a fresh child of this script. */
function inChild(task: ChildTask): Promise<Sample> {
  settle();
  const [file, args] = command(task.runtime, ["--child", JSON.stringify(task)]);
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`child ${task.variant} on ${task.runtime} failed: ${stderr}`));
      resolve(JSON.parse(stdout.trim().split("\n").at(-1)!));
    });
  });
}

/** Runs curl under GNU time; wall time, curl's CPU time and its peak RSS. */
function curl(args: string[]): Promise<Sample> {
  settle();
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile("/usr/bin/time", ["-f", "%M %U %S", "curl", "-sS", "--fail", "--unix-socket", socketPath, ...args], (error, _stdout, stderr) => {
      if (error) return reject(new Error(`curl failed: ${stderr}`));
      const [kib, user, system] = stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
      resolve({ ms: performance.now() - started, cpuMs: (user + system) * 1000, peakMiB: kib / 1024, beforeMiB: 0 });
    });
  });
}

/** Runtimes our variants run under, in this order each round. */
const RUNTIMES: readonly Runtime[] = ["node", "deno", "bun"];

function oursSamples(): Record<Runtime, Sample[]> {
  return { node: [], deno: [], bun: [] };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function sink(): Writable {
  return new Writable({ write: (_chunk, _encoding, done) => done() });
}

async function startSandbox(spillDirectory: string): Promise<DockerSandbox> {
  const backend = createDockerSandboxBackend({
    profile: "linux-x64-cgroupfs",
    endpoint,
    namespace: "bench",
    spillDirectory,
    imageDigest,
    user: { uid: 65534, gid: 65534 },
  });
  return await backend.reserve(
    { policy: { resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 } } },
    { record: () => Promise.resolve() },
  ).start();
}

async function guest(sandbox: DockerSandbox, script: string): Promise<void> {
  const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
  await process.stdin.close();
  const [, err, exit] = await Promise.all([new Response(process.stdout).text(), new Response(process.stderr).text(), process.exit]);
  if (exit.kind !== "exited" || exit.code !== 0) throw new Error(`guest script failed: ${err}`);
}

function row(name: string, samples: Sample[], curlMs: number): string {
  const ms = median(samples.map((s) => s.ms));
  const peak = median(samples.map((s) => s.peakMiB));
  const growth = median(samples.map((s) => s.peakMiB - s.beforeMiB));
  const cpu = median(samples.map((s) => s.cpuMs));
  const memory = samples[0].beforeMiB === 0 ? `peak ${peak.toFixed(0)} MiB` : `peak ${peak.toFixed(0)} MiB, +${growth.toFixed(1)} MiB`;
  return `${name.padEnd(42)} ${(ms / 1000).toFixed(2).padStart(6)} s ${(ms / curlMs).toFixed(2).padStart(5)}x  cpu ${(cpu / 1000).toFixed(2)} s  ${memory}`;
}

if (process.argv[2] === "--child") {
  await child(JSON.parse(process.argv[3]) as ChildTask);
  process.exit(0);
}

const scratch = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-files-")));
const spillDirectory = join(scratch, "spill");
await mkdir(spillDirectory);
const apiVersion = (await (await dockerode()).version()).ApiVersion;
const lines: string[] = [];
const goals: Record<Runtime, GoalReport["goals"][number][]> = { node: [], deno: [], bun: [] };

// ---- export: 1 GiB + 2,000 files
{
  const sandbox = await startSandbox(spillDirectory);
  try {
    await guest(sandbox, `head -c ${GIB} /dev/urandom > big.bin && mkdir small && i=0; while [ $i -lt ${SMALL_FILES} ]; do head -c 1000 /dev/urandom > small/f$i; i=$((i+1)); done`);
    await sandbox.stop();
    // Create the accessor and warm the page cache.
    for await (const entry of await sandbox.exportTree({ kind: "workspace" })) await new Response(entry.body).arrayBuffer();
    const accessor = sandbox.resources.accessorId!;
    const url = `http://docker/v${apiVersion}/containers/${accessor}/archive?path=%2Fworkspace`;
    const samples = { ours: oursSamples(), curl: [] as Sample[], dockerode: [] as Sample[] };
    for (let round = 0; round < rounds; round++) {
      samples.curl.push(await curl(["-o", "/dev/null", url]));
      for (const runtime of RUNTIMES) {
        samples.ours[runtime].push(await inChild({ variant: "export-ours", runtime, containerId: accessor, spillDirectory }));
      }
      samples.dockerode.push(await inChild({ variant: "export-dockerode", runtime: "node", containerId: accessor, spillDirectory }));
    }
    const curlMs = median(samples.curl.map((s) => s.ms));
    lines.push(`export 1 GiB + ${SMALL_FILES} files (${rounds} rounds, medians)`);
    lines.push(row("curl GET archive (no checks)", samples.curl, curlMs));
    for (const runtime of RUNTIMES) {
      lines.push(row(`exportTree on ${runtime} (validated, bodies read)`, samples.ours[runtime], curlMs));
      const mine = samples.ours[runtime];
      goals[runtime].push(
        { goal: "export 1 GiB + 2,000 files: ours ÷ curl (time)", aim: "≤ 1.10×", value: ratio(median(mine.map((s) => s.ms)), curlMs) },
        { goal: "export RSS growth", aim: "≤ 64 MiB", value: `${median(mine.map((s) => s.peakMiB - s.beforeMiB)).toFixed(0)} MiB` },
      );
    }
    lines.push(row("dockerode getArchive on node (no checks)", samples.dockerode, curlMs));
  } finally {
    await sandbox.destroy();
  }
}

// ---- import: 1 GiB
{
  const source = join(scratch, "source");
  await mkdir(source);
  const handle = await open(join(source, "big.bin"), "w");
  const block = new Uint8Array(4 * 1024 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = (i * 2654435761) >>> 24;
  for (let written = 0; written < GIB; written += block.length) await handle.write(block);
  await handle.close();
  const tarFile = join(scratch, "source.tar");
  await new Promise<void>((resolve, reject) =>
    execFile("tar", ["-C", source, "--owner=65534", "--group=65534", "--numeric-owner", "-cf", tarFile, "big.bin"], (error) => (error ? reject(error) : resolve()))
  );
  const sandbox = await startSandbox(spillDirectory);
  try {
    const keeper = sandbox.resources.keeperId;
    const url = `http://docker/v${apiVersion}/containers/${keeper}/archive?path=%2Fworkspace%2Fwork`;
    await sandbox.importTree(importDirectory(source)); // warm-up
    const samples = { ours: oursSamples(), curl: [] as Sample[], dockerode: [] as Sample[] };
    for (let round = 0; round < rounds; round++) {
      samples.curl.push(await curl(["-X", "PUT", "-H", "Content-Type: application/x-tar", "-T", tarFile, "-o", "/dev/null", url]));
      for (const runtime of RUNTIMES) {
        samples.ours[runtime].push(await inChild({ variant: "import-ours", runtime, containerId: keeper, source, spillDirectory }));
      }
      samples.dockerode.push(await inChild({ variant: "import-dockerode", runtime: "node", containerId: keeper, source: tarFile, spillDirectory }));
    }
    const curlMs = median(samples.curl.map((s) => s.ms));
    lines.push("");
    lines.push(`import 1 GiB (${rounds} rounds, medians)`);
    lines.push(row("curl PUT archive (prepared tar)", samples.curl, curlMs));
    for (const runtime of RUNTIMES) {
      lines.push(row(`importTree(importDirectory) on ${runtime}`, samples.ours[runtime], curlMs));
      goals[runtime].push({ goal: "import 1 GiB: ours ÷ curl (time)", aim: "≤ 1.10×", value: ratio(median(samples.ours[runtime].map((s) => s.ms)), curlMs) });
    }
    lines.push(row("dockerode putArchive on node (tar file)", samples.dockerode, curlMs));
  } finally {
    await sandbox.destroy();
  }
}

await rm(scratch, { recursive: true, force: true });
console.log(`${"variant".padEnd(42)} ${"time".padStart(8)} ${"ratio".padStart(6)}  cpu (of that process)  memory (peak RSS of the process; +growth during the transfer)`);
for (const line of lines) console.log(line);
reportGoals(RUNTIMES.map((runtime) => ({ runtime, goals: goals[runtime] })));
