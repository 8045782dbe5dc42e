// Sample statistics and the Markdown report of the sandbox benchmark.

/** Samples of one variant of one benchmark row. */
export interface VariantResult {
  /** Variant label, e.g. "docker run (CLI)". */
  readonly variant: string;
  /** Wall times of the measured iterations, milliseconds; empty when not available. */
  readonly samplesMs: readonly number[];
  /** Why the variant did not run (printed as "n/a"), else undefined. */
  readonly unavailable?: string;
  /** Payload bytes moved per iteration, for throughput rows. */
  readonly bytes?: number;
  /** CPU time of this process per iteration, milliseconds (wall-clock setup excluded only where the variant times itself). */
  readonly cpuMs?: readonly number[];
  /** The work runs in a child process whose CPU time is not counted. */
  readonly child?: boolean;
  /** Free-form note printed under the table. */
  readonly note?: string;
}

/** One benchmark row: several variants, the first is our library. */
export interface RowResult {
  readonly row: string;
  readonly variants: readonly VariantResult[];
}

/** Linear-interpolation quantile of sorted samples (q in 0…1). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

/** Median and p90 of samples, milliseconds. */
export function summarize(samples: readonly number[]): { median: number; p90: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) };
}

function ms(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  return value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`;
}

/** Throughput in MB/s (10^6 bytes per second). */
export function mbPerSecond(bytes: number, milliseconds: number): number {
  return bytes / 1e6 / (milliseconds / 1000);
}

/** The median client CPU time of a variant, or why there is none. */
export function cpuText(variant: VariantResult): string {
  if (variant.child) return "in child";
  if (!variant.cpuMs || variant.cpuMs.length === 0) return "n/a";
  return ms(summarize(variant.cpuMs).median);
}

/**
 * The Markdown table of one runtime: median and p90 per variant, MB/s for throughput rows,
 * and the ratio of the variant's median time to our library's (the row's first variant).
 */
export function markdownTable(runtime: string, rows: readonly RowResult[]): string {
  const lines = [
    `### ${runtime}`,
    "",
    "| benchmark | variant | n | median | p90 | MB/s (median) | time ÷ ours | client CPU (median) |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const notes: string[] = [];
  for (const { row, variants } of rows) {
    const ours = variants[0]?.samplesMs.length ? summarize(variants[0].samplesMs).median : Number.NaN;
    for (const variant of variants) {
      if (variant.unavailable !== undefined || variant.samplesMs.length === 0) {
        lines.push(`| ${row} | ${variant.variant} | 0 | n/a | n/a | n/a | n/a | n/a |`);
        notes.push(`${variant.variant}: n/a — ${variant.unavailable ?? "no samples"}`);
        continue;
      }
      const { median, p90 } = summarize(variant.samplesMs);
      const rate = variant.bytes === undefined ? "" : mbPerSecond(variant.bytes, median).toFixed(0);
      const ratio = Number.isFinite(ours) ? `${(median / ours).toFixed(2)}×` : "n/a";
      lines.push(`| ${row} | ${variant.variant} | ${variant.samplesMs.length} | ${ms(median)} | ${ms(p90)} | ${rate} | ${ratio} | ${cpuText(variant)} |`);
      if (variant.note) notes.push(`${variant.variant}: ${variant.note}`);
    }
  }
  if (notes.length > 0) lines.push("", ...notes.map((note) => `- ${note}`));
  return lines.join("\n");
}
