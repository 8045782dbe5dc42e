// The goal table of issue 15 for every runtime in one run: the sandbox benchmark under
// Node, Deno and Bun (stdout against its floors and the CLI, exec against dockerode, the
// warm pool's first byte), then the file benchmark (export and import against curl, export
// RSS growth; ours under each runtime), each printing its own report as it goes, and at the
// end one Markdown table of the goal ratios with the date, the machine and the load.
//
//   node bench/goals.bench.ts     (npm run bench:goals)
//
// Environment: as for bench/sandbox.bench.ts and bench/files.bench.ts (their BENCH_* and
// AGENTCELL_* variables pass through); BENCH_GOALS_ROWS (start,exec,stream,pool,run) narrows the
// sandbox rows, BENCH_GOALS_FILES=0 leaves the file benchmark out. The stdout row takes 8
// runs of 256 MiB per variant here (BENCH_STREAM_RUNS, 4 in the sandbox benchmark alone):
// with 4, a ratio moved by up to 25 % between runs of the same code. The exec and run() rows
// take 60 rounds (BENCH_EXECS, 20 alone): with 20, a floor came out slower than what it bounds.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type GoalReport, goalTable } from "./_goals.ts";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentcell-bench-goals-"));
const load = () => loadavg().map((value) => value.toFixed(2)).join(" ");
const runs: [string, string, string[]][] = [
  ["node", process.execPath, [here("sandbox.bench.ts")]],
  ["deno", "deno", ["run", "-A", here("sandbox.bench.ts")]],
  ["bun", "bun", [here("sandbox.bench.ts")]],
];
if (process.env.BENCH_GOALS_FILES !== "0") runs.push(["files", process.execPath, [here("files.bench.ts")]]);

const reports: GoalReport[] = [];
const loadBefore = load();
const started = new Date();
try {
  for (const [name, command, args] of runs) {
    const file = join(scratch, `${name}.json`);
    const env = {
      ...process.env,
      BENCH_GOALS_JSON: file,
      BENCH_ROWS: process.env.BENCH_GOALS_ROWS ?? "start,exec,stream,pool,run",
      BENCH_STREAM_RUNS: process.env.BENCH_STREAM_RUNS ?? "8",
      BENCH_EXECS: process.env.BENCH_EXECS ?? "60",
    };
    const result = spawnSync(command, args, { stdio: ["ignore", "inherit", "inherit"], env });
    if (result.status !== 0) throw new Error(`Cannot collect the goals: ${name} benchmark exited with ${result.status ?? result.signal}`);
    reports.push(...JSON.parse(readFileSync(file, "utf8")) as GoalReport[]);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const versions = ["node --version", "deno --version", "bun --version"].map((line) => {
  const [command, ...args] = line.split(" ");
  return `${command} ${spawnSync(command === "node" ? process.execPath : command, args, { encoding: "utf8" }).stdout.split("\n")[0].replace(/^v|^deno /u, "").split(" (")[0]}`;
});
console.log(`\n## Goal ratios (issue 15)\n\n${goalTable(reports)}\n`);
console.log(
  `_${started.toISOString().slice(0, 10)}, ${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${versions.join(", ")}; ` +
    `load average before ${loadBefore}, after ${load()}; ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} min_`,
);
