// Where our library's time goes: wraps the Engine client's request methods (on the
// prototype, bench-only) and records each call's wall time, so a traced sandbox start or
// exec can be split into Engine round trips, waits on the guest, and the rest (time in the
// client). Phases of an iteration are recorded with `mark`.
import { DockerEngine } from "../lib/engine/client.ts";

/** One traced span, `performance.now()` milliseconds. */
export interface TracedCall {
  /** `engine`: an Engine request; `wait`: waiting on the guest (attach stream open until the process ended); `phase`: a step of the iteration. */
  readonly kind: "engine" | "wait" | "phase";
  readonly call: string;
  readonly start: number;
  readonly end: number;
}

type Method = "request" | "stream" | "upgrade" | "version";

let active: TracedCall[] | undefined;

/** Records a span into the running trace, if any. */
export function mark(kind: "wait" | "phase", call: string, start: number, end: number = performance.now()): void {
  active?.push({ kind, call, start, end });
}

function label(method: Method, args: unknown[]): string {
  if (method === "version") return "GET /version";
  const path = String(args[1])
    .replace(/[0-9a-f]{64}/gu, "{id}")
    .replace(/agentcell-[a-z0-9-]+-[0-9a-f]{32}-([a-z]+)/gu, "{$1}");
  return `${String(args[0])} ${path}${method === "upgrade" ? " (until 101)" : ""}`;
}

/**
 * Starts recording the calls of every `DockerEngine`. `stop()` restores the methods and
 * returns the spans in start order.
 */
export function traceEngine(): { stop(): TracedCall[] } {
  const calls: TracedCall[] = [];
  active = calls;
  const prototype = DockerEngine.prototype as unknown as Record<Method, (...args: unknown[]) => Promise<unknown>>;
  const originals = new Map<Method, (...args: unknown[]) => Promise<unknown>>();
  for (const method of ["request", "stream", "upgrade", "version"] as const) {
    const original = prototype[method];
    originals.set(method, original);
    prototype[method] = async function (this: unknown, ...args: unknown[]) {
      const start = performance.now();
      try {
        return await original.apply(this, args);
      } finally {
        calls.push({ kind: "engine", call: label(method, args), start, end: performance.now() });
      }
    };
  }
  return {
    stop() {
      for (const [method, original] of originals) prototype[method] = original;
      active = undefined;
      return calls.sort((a, b) => a.start - b.start);
    },
  };
}

/** Milliseconds of `[from, to]` covered by at least one span (overlaps counted once). */
export function coveredMs(calls: readonly TracedCall[], from: number, to: number): number {
  let covered = 0;
  let reach = from;
  for (const { start, end } of [...calls].sort((a, b) => a.start - b.start)) {
    const s = Math.max(start, reach);
    const e = Math.min(end, to);
    if (e > s) {
      covered += e - s;
      reach = e;
    }
  }
  return covered;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = (sorted.length - 1) / 2;
  return (sorted[Math.floor(mid)] + sorted[Math.ceil(mid)]) / 2;
}

/**
 * A Markdown breakdown of traced iterations: phases, then each Engine call and wait
 * (numbered when it repeats within an iteration) with its median wall time, and the median
 * time covered by neither an Engine call nor a wait.
 */
export function breakdown(title: string, iterations: readonly { calls: TracedCall[]; start: number; end: number }[]): string {
  const perCall = new Map<string, number[]>();
  const outside: number[] = [];
  const totals: number[] = [];
  for (const { calls, start, end } of iterations) {
    const seen = new Map<string, number>();
    for (const call of [...calls].sort((a, b) => (a.kind === "phase" ? 0 : 1) - (b.kind === "phase" ? 0 : 1) || a.start - b.start)) {
      const n = (seen.get(call.call) ?? 0) + 1;
      seen.set(call.call, n);
      const name = call.kind === "phase" ? `phase: ${call.call}` : call.kind === "wait" ? `wait: ${call.call}` : call.call;
      const key = n === 1 ? name : `${name} #${n}`;
      if (!perCall.has(key)) perCall.set(key, []);
      perCall.get(key)!.push(call.end - call.start);
    }
    totals.push(end - start);
    outside.push(end - start - coveredMs(calls.filter((call) => call.kind !== "phase"), start, end));
  }
  const lines = [`#### ${title} (${iterations.length} traced iterations, median ms)`, "", "| span | median ms |", "| --- | ---: |"];
  for (const [call, values] of perCall) lines.push(`| ${call} | ${median(values).toFixed(1)} |`);
  lines.push(`| *not in any Engine call or wait (client-side time)* | ${median(outside).toFixed(1)} |`);
  lines.push(`| **total** | ${median(totals).toFixed(1)} |`);
  return lines.join("\n");
}
