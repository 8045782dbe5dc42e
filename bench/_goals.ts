// The goal ratios of issue 15, one table per run: what each benchmark contributes (stdout
// against its floors, exec against dockerode, the warm pool's first byte; export and import
// against curl) and what `bench/goals.bench.ts` prints for all runtimes at once.
import { writeFileSync } from "node:fs";
import process from "node:process";
import { type RowResult, summarize, type VariantResult } from "./_stats.ts";

/** One goal measured on one runtime. */
export interface GoalValue {
  /** What is compared, e.g. "stdout ÷ bare node:net floor (MB/s)". */
  readonly goal: string;
  /** The aim, e.g. "≥ 0.90×". */
  readonly aim: string;
  /** The measured value, formatted ("0.94×", "41 ms"), or "n/a". */
  readonly value: string;
}

/** The goals one benchmark run measured on one runtime. */
export interface GoalReport {
  /** `node`, `deno` or `bun`. */
  readonly runtime: string;
  readonly goals: readonly GoalValue[];
}

function median(variant: VariantResult | undefined): number {
  return variant && variant.samplesMs.length > 0 ? summarize(variant.samplesMs).median : Number.NaN;
}

/** `numerator ÷ denominator` as "0.94×", or "n/a". */
export function ratio(numerator: number, denominator: number): string {
  const value = numerator / denominator;
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : "n/a";
}

/** Milliseconds as "41 ms", or "n/a". */
export function milliseconds(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(value >= 100 ? 0 : 1)} ms` : "n/a";
}

/** The variant of `row` whose name starts with `prefix`. */
function find(row: RowResult | undefined, prefix: string): VariantResult | undefined {
  return row?.variants.find((variant) => variant.variant.startsWith(prefix));
}

/**
 * The goals of the sandbox benchmark's rows: stdout throughput of our library (the stream
 * row's first variant) against the bare-socket floors and the CLI (time ratios inverted, so
 * higher is better), the exec round trip against dockerode, `sandbox.run()` against
 * dockerode and the CLI (issue 12), and the pool row's first-byte times.
 */
export function sandboxGoals(rows: readonly RowResult[]): GoalValue[] {
  const stream = rows.find((row) => row.row.startsWith("3."));
  const exec = rows.find((row) => row.row.startsWith("2."));
  const pool = rows.find((row) => row.row.startsWith("4."));
  const run = rows.find((row) => row.row.startsWith("5."));
  const ours = median(stream?.variants[0]);
  // The fastest of the run row's bare-socket floors (node:net or native, per call or kept
  // alive). Variants are found by name prefix, as below: this module imports no row module,
  // so the file benchmark's children load nothing of the sandbox benchmark.
  const fastestFloor = Math.min(
    ...(run?.variants.filter((variant) => variant.variant.startsWith("floor: bare")).map(median).filter(Number.isFinite) ?? []),
  );
  const speed = (prefix: string) => ratio(median(find(stream, prefix)), ours);
  return [
    { goal: "stdout ÷ bare node:net floor (throughput)", aim: "≥ 0.90×", value: speed("floor: bare node:net") },
    { goal: "stdout ÷ bare native floor, Deno.connect / Bun.connect (throughput)", aim: "≥ 0.90×", value: speed("floor: bare native") },
    { goal: "stdout ÷ docker exec CLI (throughput)", aim: "≥ 0.90×", value: speed("docker exec (CLI") },
    { goal: "stdout ÷ Deno.connect floor with owned chunks (throughput)", aim: "(reference)", value: speed("floor: bare Deno.connect, each read") },
    {
      goal: "Deno.connect with owned chunks ÷ bare Deno.connect (throughput: what handing out chunks costs)",
      aim: "(reference)",
      value: ratio(median(find(stream, "floor: bare native")), median(find(stream, "floor: bare Deno.connect, each read"))),
    },
    { goal: "stdout ÷ Deno's own conn.readable (throughput)", aim: "(reference)", value: speed("Deno's own conn.readable") },
    { goal: "exec round trip: ours ÷ dockerode (time)", aim: "≤ 1.00×", value: ratio(median(exec?.variants[0]), median(find(exec, "dockerode"))) },
    { goal: 'sandbox.run("/bin/true"): ours ÷ dockerode exec (time)', aim: "≤ 1.00×", value: ratio(median(run?.variants[0]), median(find(run, "dockerode"))) },
    { goal: 'sandbox.run("/bin/true"): ours ÷ docker exec CLI (time)', aim: "≤ 0.70×", value: ratio(median(run?.variants[0]), median(find(run, "docker exec"))) },
    { goal: 'sandbox.run("/bin/true"): ours ÷ dockerode running the same Cmd (time)', aim: "(reference)", value: ratio(median(run?.variants[0]), median(find(run, "dockerode exec of run()"))) },
    {
      goal: "fastest bare-socket exec of true (no client library) ÷ docker exec CLI (time: the least a client reaches)",
      aim: "(reference)",
      value: ratio(fastestFloor, median(find(run, "docker exec"))),
    },
    { goal: 'sandbox.run("/bin/true"): ours ÷ fastest bare-socket exec (time)', aim: "(reference)", value: ratio(median(run?.variants[0]), fastestFloor) },
    { goal: "warm pool: take() → first stdout byte", aim: "≤ 100 ms", value: milliseconds(median(pool?.variants[0])) },
    { goal: "cold reserve().start() → first stdout byte", aim: "(reference)", value: milliseconds(median(find(pool, "ours: cold"))) },
    { goal: "docker run → first stdout byte", aim: "(reference)", value: milliseconds(median(find(pool, "docker run"))) },
  ];
}

/** A Markdown table of goals by runtime (one column per report, in order). */
export function goalTable(reports: readonly GoalReport[]): string {
  const goals: { goal: string; aim: string }[] = [];
  for (const report of reports) {
    for (const { goal, aim } of report.goals) if (!goals.some((known) => known.goal === goal)) goals.push({ goal, aim });
  }
  const runtimes = [...new Set(reports.map((report) => report.runtime))];
  const lines = [`| goal | aim | ${runtimes.join(" | ")} |`, `| --- | --- |${" ---: |".repeat(runtimes.length)}`];
  for (const { goal, aim } of goals) {
    const cells = runtimes.map((runtime) =>
      reports.filter((report) => report.runtime === runtime).flatMap((report) => report.goals).find((value) => value.goal === goal)?.value ?? "—"
    );
    lines.push(`| ${goal} | ${aim} | ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

/** Prints the goals of this run and, with `BENCH_GOALS_JSON=<file>`, writes them there for `goals.bench.ts`. */
export function reportGoals(reports: readonly GoalReport[]): void {
  console.log(`\n#### goal ratios\n\n${goalTable(reports)}`);
  const file = process.env.BENCH_GOALS_JSON;
  if (file) writeFileSync(file, JSON.stringify(reports));
}
