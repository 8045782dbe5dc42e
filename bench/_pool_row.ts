// Row 4 of the sandbox benchmark: time to the first byte of a process's stdout, from
// `pool.take()` of a warm pool, from a cold `reserve().start()`, and from `docker run`. Only
// that span is timed; the rest of each run (output drained, sandbox destroyed, pool refilled)
// happens outside it.
import { spawn } from "node:child_process";
import type { DockerSandboxBackend } from "../lib/docker/backend.ts";
import type { DockerSandbox } from "../lib/docker/sandbox.ts";
import { NO_RECORD, POLICY } from "./_rows.ts";
import { BENCH_LABEL, type BenchConfig, drain, roundRobin, sleep, type TimedVariant } from "./_setup.ts";
import type { RowResult } from "./_stats.ts";

/** Name of the warm-pool variant (the row's first). */
export const POOL_TAKE = "ours: pool.take() → process start → first stdout byte";

/** Starts `echo first` and resolves once its first stdout byte is read; the rest runs on. */
async function firstByte(sandbox: DockerSandbox): Promise<() => Promise<void>> {
  const process = await sandbox.reserveProcess({ executable: "/bin/echo", args: ["first"] }).start();
  const reader = process.stdout.getReader();
  const { value } = await reader.read();
  if (value === undefined || value.byteLength === 0) throw new Error("Cannot measure: echo wrote nothing");
  reader.releaseLock();
  return async () => {
    await Promise.all([drain(process.stdout), drain(process.stderr), process.stdin.close()]);
    const exit = await process.exit;
    if (exit.kind !== "exited" || exit.code !== 0) throw new Error(`echo ended with ${JSON.stringify(exit)}`);
  };
}

/** Resolves on the first stdout byte of `docker run --rm … echo first`; the child runs on. */
function cliFirstByte(config: BenchConfig): Promise<Promise<void>> {
  return new Promise((resolve, reject) => {
    const child = spawn(config.dockerCli, [
      "-H",
      config.endpoint,
      "run",
      "--rm",
      "--network",
      "none",
      "--label",
      `${BENCH_LABEL}=cli`,
      config.busyboxImage,
      "echo",
      "first",
    ], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<void>((done, failed) => {
      child.on("close", (code) => (code === 0 ? done() : failed(new Error(`docker run exited with ${code}`))));
    });
    exited.catch(() => {});
    child.on("error", reject);
    child.stdout.once("data", () => resolve(exited));
    child.stdout.resume();
    child.stderr.resume();
    exited.catch(reject);
  });
}

/** Waits (untimed) until the pool is full again, so each take measures the warm case. */
async function refilled(pool: { ready: number; size: number }): Promise<void> {
  for (let waited = 0; pool.ready < pool.size; waited += 20) {
    if (waited > 120_000) throw new Error("Cannot measure: the pool did not refill within 120 s");
    await sleep(20);
  }
}

/**
 * One warm take: waits (untimed) for the pool to be full, then times `take()` → the first
 * stdout byte of `echo`; the rest of the run and the destroy are not timed. Milliseconds.
 */
export async function timedTake(pool: { ready: number; size: number; take(): Promise<DockerSandbox> }): Promise<number> {
  await refilled(pool);
  const started = performance.now();
  const sandbox = await pool.take();
  const rest = await firstByte(sandbox);
  const wallMs = performance.now() - started;
  await rest().finally(() => sandbox.destroy());
  return wallMs;
}

/** Row 4: warm pool vs cold start vs `docker run`, to the first stdout byte. */
export async function poolRow(config: BenchConfig, backend: DockerSandboxBackend): Promise<RowResult> {
  const pool = backend.pool({ request: { policy: POLICY }, size: 1, recovery: NO_RECORD });
  try {
    const variants: TimedVariant[] = [
      {
        name: POOL_TAKE,
        run: async () => ({ wallMs: await timedTake(pool), cpuMs: Number.NaN }),
      },
      {
        name: "ours: cold reserve().start() → process start → first stdout byte",
        run: async () => {
          const started = performance.now();
          const sandbox = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
          const rest = await firstByte(sandbox);
          const wallMs = performance.now() - started;
          await rest().finally(() => sandbox.destroy());
          return { wallMs, cpuMs: Number.NaN };
        },
      },
      {
        name: "docker run --rm --network none (CLI) → first stdout byte",
        child: true,
        run: async () => {
          const started = performance.now();
          const exited = await cliFirstByte(config);
          const wallMs = performance.now() - started;
          await exited;
          return { wallMs, cpuMs: Number.NaN };
        },
      },
    ];
    const results = await roundRobin(variants, config.poolTakes, config.warmups);
    return {
      row: "4. time to first stdout byte (echo)",
      variants: variants.map((variant) => {
        const result = results.get(variant.name)!;
        return { variant: variant.name, samplesMs: result.samples, child: variant.child, unavailable: result.error };
      }),
    };
  } finally {
    await pool.close();
  }
}
