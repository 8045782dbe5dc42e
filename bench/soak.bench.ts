// The soak: sandboxes started and destroyed one after another, to show that what one
// sandbox leaves in the controller is nothing (issue 29).
//
//   node --expose-gc bench/soak.bench.ts [COUNT]     (npm run bench:soak; deno run -A …, bun … alike)
//
// COUNT (default BENCH_SOAK_COUNT or 1000) times: `reserve().start()`, one
// `run("/bin/true")`, `destroy()`, under a policy with the controller lease and the guest
// deadline on (`controllerLoss: "stop"`, `execution: { kind: "deadline" }`: every per-sandbox
// connection, timer and listener the library has; BENCH_SOAK_GUARDS=0 for the default policy).
// Every BENCH_SOAK_EVERY (100) sandboxes, after a garbage collection where the runtime offers
// one (Node with --expose-gc, Deno with --v8-flags=--expose-gc, Bun), it prints this process's RSS and heap, open descriptors,
// active handles and timers by kind (`process.getActiveResourcesInfo()`), Engine connections
// and the cycle's p50; at the end the growth over the second half per 100 sandboxes, and the
// leftovers: containers, volumes and networks with this benchmark's namespace label (must be
// 0), then removed.
//
// Environment: AGENTCELL_TEST_ENGINE (default unix:///run/agentcell-test-engine/docker.sock),
// AGENTCELL_TEST_BUSYBOX_IMAGE (default: scripts/guest-images.sh busybox), BENCH_SOAK_COUNT
// (1000), BENCH_SOAK_EVERY (100), BENCH_SOAK_GUARDS (1).
import { rm } from "node:fs/promises";
import { loadavg } from "node:os";
import process from "node:process";
import { LABELS } from "../lib/docker/names.ts";
import { DockerEngine } from "../lib/engine/client.ts";
import type { SandboxPolicyInput } from "../lib/sandbox/policy.ts";
import { activeResources, collectGarbage, engineConnections, openDescriptors, statusKiB } from "./_proc.ts";
import { NO_RECORD, POLICY } from "./_rows.ts";
import { benchBackend, benchConfig, runtimeName } from "./_setup.ts";
import { quantile } from "./_stats.ts";
import { sweep } from "./_sweep.ts";

/** Namespace of this benchmark's sandboxes (its own, so its leftover count and sweep touch nothing else). */
const SOAK_NAMESPACE = "bench-soak";

function count(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`Cannot read ${what}: expected a positive integer, got ${text}`);
  return value;
}

const config = benchConfig();
const total = count(process.argv[2] ?? process.env.BENCH_SOAK_COUNT, 1000, "the sandbox count");
const every = count(process.env.BENCH_SOAK_EVERY, 100, "BENCH_SOAK_EVERY");
const guards = process.env.BENCH_SOAK_GUARDS !== "0";
const policy: SandboxPolicyInput = guards ? { ...POLICY, controllerLoss: "stop", execution: { kind: "deadline", timeoutMs: 3_600_000 } } : POLICY;
const engine = new DockerEngine(config.endpoint);
const { backend, spillDirectory } = await benchBackend(config, SOAK_NAMESPACE);

interface Sample {
  readonly sandboxes: number;
  readonly rssKiB: number;
  readonly heapKiB: number;
  readonly fds: number;
  readonly connections: number;
  readonly resources: Record<string, number> | undefined;
  readonly cycleP50: number;
}

function sample(sandboxes: number, cycles: readonly number[]): Sample {
  collectGarbage();
  return {
    sandboxes,
    rssKiB: statusKiB("VmRSS"),
    heapKiB: process.memoryUsage().heapUsed / 1024,
    fds: openDescriptors(),
    connections: engineConnections(config.socketPath),
    resources: activeResources(),
    cycleP50: quantile([...cycles].sort((a, b) => a - b), 0.5),
  };
}

const resourcesText = (resources: Record<string, number> | undefined) =>
  resources === undefined ? "n/a" : Object.entries(resources).sort().map(([kind, n]) => `${kind} ${n}`).join(", ") || "none";

const line = (s: Sample) =>
  `| ${s.sandboxes} | ${(s.rssKiB / 1024).toFixed(1)} | ${(s.heapKiB / 1024).toFixed(1)} | ${s.fds} | ${resourcesText(s.resources)} | ${s.connections} | ` +
  `${Number.isFinite(s.cycleP50) ? s.cycleP50.toFixed(0) : "n/a"} |`;

console.log(`# soak on ${runtimeName()}, ${new Date().toISOString()}: ${total} sandboxes in sequence, ${guards ? "lease + guest deadline on" : "default policy"}`);
const collector = collectGarbage();
console.log(`engine ${(await engine.version()).Version} at ${config.endpoint}; load average ${loadavg().map((v) => v.toFixed(2)).join(" ")}; ${collector ? "collected before each sample" : "no collection on demand (samples include garbage)"}`);
console.log("| sandboxes | RSS MiB | heap MiB | fds | active handles and timers | Engine conns | cycle p50 ms |");
console.log("| ---: | ---: | ---: | ---: | --- | ---: | ---: |");
const samples: Sample[] = [sample(0, [])];
console.log(line(samples[0]));
let cycles: number[] = [];
const started = performance.now();
let leftovers: string[] = [];
try {
  for (let i = 1; i <= total; i++) {
    const t0 = performance.now();
    const sandbox = await backend.reserve({ policy }, NO_RECORD).start();
    try {
      const result = await sandbox.run("/bin/true");
      if (result.exit.code !== 0) throw new Error(`Cannot soak: /bin/true exited with ${result.exit.code}`);
    } finally {
      await sandbox.destroy();
    }
    cycles.push(performance.now() - t0);
    if (i % every === 0 || i === total) {
      samples.push(sample(i, cycles));
      console.log(line(samples.at(-1)!));
      cycles = [];
    }
  }
} finally {
  const labels = [`${LABELS.namespace}=${SOAK_NAMESPACE}`];
  leftovers = await sweep(engine, labels);
  await rm(spillDirectory, { recursive: true, force: true });
}

const half = samples.find((s) => s.sandboxes >= total / 2) ?? samples[0];
const last = samples.at(-1)!;
const per100 = (a: number, b: number) => ((b - a) / Math.max(1, last.sandboxes - half.sandboxes) * 100);
console.log(
  `\n${total} sandboxes in ${((performance.now() - started) / 1000).toFixed(0)} s. Growth per 100 sandboxes over the second half ` +
    `(${half.sandboxes} → ${last.sandboxes}): RSS ${(per100(half.rssKiB, last.rssKiB) / 1024).toFixed(2)} MiB, heap ${(per100(half.heapKiB, last.heapKiB) / 1024).toFixed(2)} MiB, ` +
    `fds ${per100(half.fds, last.fds).toFixed(1)}, Engine connections ${per100(half.connections, last.connections).toFixed(1)}, ` +
    `active handles and timers ${per100(Object.values(half.resources ?? {}).reduce((a, b) => a + b, 0), Object.values(last.resources ?? {}).reduce((a, b) => a + b, 0)).toFixed(1)}`,
);
console.log(`leftovers (containers, volumes, networks labelled ${LABELS.namespace}=${SOAK_NAMESPACE}): ${leftovers.length}${leftovers.length ? ` — ${leftovers.join(", ")} (removed)` : ""}`);
if (leftovers.length > 0) process.exitCode = 1;
