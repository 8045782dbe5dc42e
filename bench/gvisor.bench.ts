// Cold start under gVisor beside runc, on one engine that registers runsc:
//
//   node bench/gvisor.bench.ts     (npm run bench:gvisor)
//
// Each iteration: `reserve().start()` of a fresh sandbox, then `sandbox.run("/bin/true")`,
// then `destroy()`, once under profile linux-x64-cgroupfs (runc) and once under
// linux-x64-gvisor (runsc), interleaved. Prints median and p90 of start, first run and the
// whole cycle per profile, and the gVisor/runc ratio of the medians. Then, per profile, a
// warm pool of one: `pool.take()` → a process's first stdout byte (echo), BENCH_POOL_TAKES
// (10) takes, each after the pool has refilled (the refill is not timed).
//
// Environment: AGENTCELL_TEST_ENGINE (default unix:///run/agentcell-test-engine/docker.sock),
// AGENTCELL_TEST_BUSYBOX_IMAGE (default: scripts/guest-images.sh busybox), BENCH_STARTS (10).
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend } from "../lib/docker/backend.ts";
import type { DockerSandboxProfile } from "../lib/docker/profiles.ts";
import { timedTake } from "./_pool_row.ts";
import { NO_RECORD, USER } from "./_rows.ts";
import { BENCH_NAMESPACE, benchConfig, runtimeName } from "./_setup.ts";
import { summarize } from "./_stats.ts";

const config = benchConfig();
const starts = Number(process.env.BENCH_STARTS ?? 10);
const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-spill-")));
// The gVisor profile's minimum PID limit, used for both so only the runtime differs.
const policy = { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 256 } };
const profiles: DockerSandboxProfile[] = ["linux-x64-cgroupfs", "linux-x64-gvisor"];
const backends = profiles.map((profile) =>
  createDockerSandboxBackend({ profile, endpoint: config.endpoint, namespace: BENCH_NAMESPACE, spillDirectory, imageDigest: config.busyboxImage, user: USER })
);
const samples = profiles.map(() => ({ start: [] as number[], run: [] as number[], cycle: [] as number[], take: [] as number[] }));
const takes = Number(process.env.BENCH_POOL_TAKES ?? 10);

try {
  for (let i = -1; i < starts; i++) { // i = -1: one warm-up per profile, not counted
    for (const [index, backend] of backends.entries()) {
      const t0 = performance.now();
      const sandbox = await backend.reserve({ policy }, NO_RECORD).start();
      const t1 = performance.now();
      const result = await sandbox.run("/bin/true");
      const t2 = performance.now();
      await sandbox.destroy();
      const t3 = performance.now();
      if (result.exit.kind !== "exited" || result.exit.code !== 0) throw new Error(`Cannot benchmark: /bin/true ended ${JSON.stringify(result.exit)}`);
      if (i < 0) continue;
      samples[index].start.push(t1 - t0);
      samples[index].run.push(t2 - t1);
      samples[index].cycle.push(t3 - t0);
    }
  }
  for (const [index, backend] of backends.entries()) {
    const pool = backend.pool({ request: { policy }, size: 1, recovery: NO_RECORD });
    try {
      for (let i = -1; i < takes; i++) { // i = -1: one warm-up, not counted
        const elapsed = await timedTake(pool);
        if (i >= 0) samples[index].take.push(elapsed);
      }
    } finally {
      await pool.close();
    }
  }
} finally {
  await rm(spillDirectory, { recursive: true, force: true });
}

const ms = (value: number) => `${value.toFixed(0)} ms`;
console.log(`cold start under gVisor (${runtimeName()}, ${starts} iterations each, ${config.endpoint})`);
console.log("| profile | start() median / p90 | first run(\"/bin/true\") median / p90 | start + run + destroy median / p90 |");
console.log("| --- | --- | --- | --- |");
for (const [index, profile] of profiles.entries()) {
  const cells = (["start", "run", "cycle"] as const).map((key) => {
    const { median, p90 } = summarize(samples[index][key]);
    return `${ms(median)} / ${ms(p90)}`;
  });
  console.log(`| ${profile} | ${cells.join(" | ")} |`);
}
console.log("| profile | warm pool: take() → first stdout byte, median / p90 |");
console.log("| --- | --- |");
for (const [index, profile] of profiles.entries()) {
  const { median, p90 } = summarize(samples[index].take);
  console.log(`| ${profile} | ${ms(median)} / ${ms(p90)} |`);
}
const ratio = (key: "start" | "run" | "cycle" | "take") => (summarize(samples[1][key]).median / summarize(samples[0][key]).median).toFixed(2);
console.log(`gVisor / runc, medians: start ${ratio("start")}×, first run ${ratio("run")}×, cycle ${ratio("cycle")}×, pool take ${ratio("take")}×`);
