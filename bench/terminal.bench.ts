/**
 * Keystroke round trip through a terminal, side by side in one run on one engine and one
 * sandbox (busybox guest): write one byte, read its echo (the guest's terminal echoes it),
 * `BENCH_KEYSTROKES` times (default 200) per round, rounds interleaved
 * (`BENCH_TERMINAL_ROUNDS`, default 3):
 *
 * - ours: a terminal process (`reserveProcess({ tty })`) running `/bin/cat` in the keeper;
 * - the docker CLI: `docker exec -it <keeper> /bin/cat` under `script` (util-linux), which
 *   gives the CLI the terminal it insists on; this process writes to `script`'s stdin and
 *   reads its stdout. Its CPU (the CLI's and `script`'s, GNU time) is printed beside ours.
 *
 * Prints the median and p90 per keystroke, the ratio to ours, and CPU per keystroke. Run with
 * any runtime (`npm run bench:terminal` runs Node). The engine is `AGENTCELL_TEST_ENGINE`
 * (default the private test engine), the guest `AGENTCELL_TEST_BUSYBOX_IMAGE` (required), the
 * CLI `DOCKER_CLI` (default `/usr/local/bin/docker`).
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend } from "../mod.ts";
import { runtimeName } from "./_setup.ts";
import { summarize } from "./_stats.ts";

const endpoint = process.env.AGENTCELL_TEST_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const image = process.env.AGENTCELL_TEST_BUSYBOX_IMAGE ?? "";
if (!/^sha256:[0-9a-f]{64}$/u.test(image)) throw new Error("Cannot run the terminal benchmark: set AGENTCELL_TEST_BUSYBOX_IMAGE to the busybox guest's image ID");
const dockerCli = process.env.DOCKER_CLI ?? "/usr/local/bin/docker";
const keystrokes = Number(process.env.BENCH_KEYSTROKES ?? 200);
const rounds = Number(process.env.BENCH_TERMINAL_ROUNDS ?? 3);
const KEY = new Uint8Array([0x61]); // "a": echoed as itself

/**
 * Write one byte, wait for one byte back, `keystrokes` times; per-keystroke wall ms. Then
 * checks that exactly one byte came back per keystroke (an extra one would let a later wait
 * end early and flatter the figures).
 */
async function typeAll(write: (bytes: Uint8Array) => Promise<void>, counter: ReturnType<typeof byteCounter>): Promise<number[]> {
  const samples: number[] = [];
  for (let at = 0; at < keystrokes; at++) {
    const started = performance.now();
    await write(KEY);
    await counter.next();
    samples.push(performance.now() - started);
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (counter.extra() !== 0) throw new Error(`Cannot trust the keystroke figures: ${counter.extra()} bytes more came back than were typed`);
  return samples;
}

/** A byte-at-a-time waiter over a stream of chunks: resolves once per byte received. */
function byteCounter(): { feed: (chunk: Uint8Array) => void; next: () => Promise<void>; reset: () => void; extra: () => number } {
  let available = 0;
  let waiting: (() => void) | undefined;
  return {
    feed(chunk) {
      available += chunk.byteLength;
      if (waiting && available > 0) {
        available--;
        const wake = waiting;
        waiting = undefined;
        wake();
      }
    },
    next() {
      if (available > 0) {
        available--;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => (waiting = resolve));
    },
    reset() {
      available = 0;
    },
    extra() {
      return available;
    },
  };
}

const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-spill-")));
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: "bench",
  spillDirectory,
  imageDigest: image,
  user: { uid: 65534, gid: 65534 },
});
const sandbox = await backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 } } }, { record: () => Promise.resolve() }).start();

async function ours(): Promise<{ samples: number[]; cpuMs: number }> {
  const cat = await sandbox.reserveProcess({ executable: "/bin/cat", tty: { columns: 80, rows: 24 } }).start();
  const counter = byteCounter();
  const reading = (async () => {
    for await (const chunk of cat.stdout) counter.feed(chunk);
  })();
  const writer = cat.stdin.getWriter();
  const cpu = process.cpuUsage();
  const samples = await typeAll((bytes) => writer.write(bytes), counter);
  const used = process.cpuUsage(cpu);
  await cat.kill();
  await cat.exit;
  await reading.catch(() => {});
  return { samples, cpuMs: (used.user + used.system) / 1000 };
}

async function cli(): Promise<{ samples: number[]; cpuMs: number; childCpuMs: number }> {
  const keeper = sandbox.resources.keeperId;
  const command = `${dockerCli} -H ${endpoint} exec -it -u 65534:65534 ${keeper} /bin/cat`;
  const child = spawn("/usr/bin/time", ["-f", "%U %S", "script", "-q", "-f", "-c", command, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
  const counter = byteCounter();
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // Wait until the CLI's terminal is up: one warm-up keystroke and its echo.
  child.stdout.on("data", (chunk: Buffer) => counter.feed(chunk));
  const write = (bytes: Uint8Array) => new Promise<void>((resolve, reject) => child.stdin.write(bytes, (error) => (error ? reject(error) : resolve())));
  // (A key typed before the CLI made its terminal raw is echoed twice: by script's terminal
  // and by the guest's. Settle, then count from zero.)
  await write(KEY);
  await counter.next();
  await new Promise((resolve) => setTimeout(resolve, 500));
  counter.reset();
  const cpu = process.cpuUsage();
  const samples = await typeAll(write, counter);
  const used = process.cpuUsage(cpu);
  // Ctrl-D twice: the first hands cat the typed line, the second (on an empty line) is end of input.
  child.stdin.end(new Uint8Array([0x04, 0x04]));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const times = stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
  if (code !== 0 || times.length !== 2) throw new Error(`Cannot run docker exec -it under script: exit ${code}: ${stderr}`);
  return { samples, cpuMs: (used.user + used.system) / 1000, childCpuMs: (times[0]! + times[1]!) * 1000 };
}

try {
  const results = { ours: [] as number[], cli: [] as number[], oursCpu: 0, cliCpu: 0, cliChildCpu: 0 };
  await ours(); // warm-up: the first exec of a keeper
  for (let round = 0; round < rounds; round++) {
    const a = await ours();
    results.ours.push(...a.samples);
    results.oursCpu += a.cpuMs;
    const b = await cli();
    results.cli.push(...b.samples);
    results.cliCpu += b.cpuMs;
    results.cliChildCpu += b.childCpuMs;
  }
  const total = rounds * keystrokes;
  const a = summarize(results.ours);
  const b = summarize(results.cli);
  console.log(`terminal keystroke round trip on ${runtimeName()}, ${rounds} × ${keystrokes} keystrokes`);
  console.log(`  ours (tty process, /bin/cat)          median ${a.median.toFixed(3)} ms  p90 ${a.p90.toFixed(3)} ms  ×1.00  CPU ${(results.oursCpu / total).toFixed(3)} ms/key`);
  console.log(
    `  docker exec -it under script           median ${b.median.toFixed(3)} ms  p90 ${b.p90.toFixed(3)} ms  ×${(b.median / a.median).toFixed(2)}  ` +
      `CPU ${(results.cliCpu / total).toFixed(3)} ms/key here + ${(results.cliChildCpu / (total + rounds)).toFixed(3)} ms/key CLI and script (whole run incl. start)`,
  );
  console.log(`  ours ÷ CLI (median time): ${(a.median / b.median).toFixed(2)}×`);
} finally {
  await sandbox.destroy();
  await rm(spillDirectory, { recursive: true, force: true });
}
