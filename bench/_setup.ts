// Configuration of the sandbox benchmark: engine endpoint, guest image, iteration counts,
// and the label every benchmark-made container carries so leftovers can be found.
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../lib/docker/config.ts";
import { fileURLToPath } from "node:url";
import { concatBytes } from "../lib/streams/concat_bytes.ts";

/** The guest user of every benchmark sandbox. */
export const USER = { uid: 65534, gid: 65534 } as const;
/** Label on every container the benchmark makes outside our library. */
export const BENCH_LABEL = "dev.agentcell.bench";
/** Namespace of the sandboxes the benchmark makes with our library (its own: the leftover sweep removes only this namespace). */
export const BENCH_NAMESPACE = "bench-sandbox";

/** What one benchmark run needs. */
export interface BenchConfig {
  /** `unix:///…` endpoint of the Engine. */
  readonly endpoint: string;
  /** Absolute path of its socket. */
  readonly socketPath: string;
  /** sha256: ID of the busybox guest. */
  readonly busyboxImage: string;
  /** Measured iterations of row 1 (sandbox start → /bin/true exit). */
  readonly starts: number;
  /** Measured iterations of row 2 (exec round trip). */
  readonly execs: number;
  /** Measured iterations of the full `process.start()` variant of row 2 (one sandbox each). */
  readonly processStarts: number;
  /** Measured iterations of row 4 (time to the first stdout byte: warm pool, cold start, CLI). */
  readonly poolTakes: number;
  /** Payload bytes of row 3 (a multiple of 1 MiB). */
  readonly streamBytes: number;
  /** Guest command of row 3: `dd` (`dd if=/dev/zero bs=1M count=…`, default) or `head` (`head -c … /dev/zero`). */
  readonly streamProducer: "dd" | "head";
  /** Measured iterations of row 3 per variant. */
  readonly streamRuns: number;
  /** Unmeasured iterations before each row, per variant. */
  readonly warmups: number;
  /** Path of the docker CLI. */
  readonly dockerCli: string;
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));

function integer(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`Cannot read ${name}: expected a non-negative integer, got ${text}`);
  return value;
}

function producer(): "dd" | "head" {
  const text = process.env.BENCH_STREAM_PRODUCER ?? "dd";
  if (text !== "dd" && text !== "head") throw new Error(`Cannot read BENCH_STREAM_PRODUCER: expected dd or head, got ${text}`);
  return text;
}

/**
 * Reads the configuration from the environment (`AGENTCELL_TEST_ENGINE`,
 * `AGENTCELL_TEST_BUSYBOX_IMAGE`, `BENCH_*`), asking `scripts/guest-images.sh` for the
 * busybox guest when its ID is not given.
 */
export function benchConfig(): BenchConfig {
  const endpoint = process.env.AGENTCELL_TEST_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
  if (!endpoint.startsWith("unix:///")) throw new Error(`Cannot use endpoint ${endpoint}: expected unix:///absolute/path`);
  let busyboxImage = process.env.AGENTCELL_TEST_BUSYBOX_IMAGE ?? "";
  if (busyboxImage === "") {
    const made = spawnSync("bash", ["scripts/guest-images.sh", "busybox"], {
      cwd: ROOT,
      env: { ...process.env, AGENTCELL_TEST_ENGINE: endpoint },
      encoding: "utf8",
    });
    if (made.status !== 0) throw new Error(`Cannot prepare the busybox guest: ${made.stderr}`);
    busyboxImage = made.stdout.trim().split("\n").at(-1) ?? "";
  }
  if (!/^sha256:[0-9a-f]{64}$/u.test(busyboxImage)) throw new Error(`Cannot use busybox guest ${busyboxImage}`);
  return {
    endpoint,
    socketPath: endpoint.slice("unix://".length),
    busyboxImage,
    starts: integer("BENCH_STARTS", 10),
    execs: integer("BENCH_EXECS", 20),
    processStarts: integer("BENCH_PROCESS_STARTS", 10),
    poolTakes: integer("BENCH_POOL_TAKES", 10),
    streamBytes: integer("BENCH_STREAM_MIB", 256) * 1024 * 1024,
    streamRuns: integer("BENCH_STREAM_RUNS", 4),
    streamProducer: producer(),
    warmups: integer("BENCH_WARMUPS", 2),
    dockerCli: process.env.DOCKER_CLI ?? "/usr/local/bin/docker",
  };
}

/** The running runtime and its version, e.g. "node 26.10.0". */
export function runtimeName(): string {
  const global = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (global.Deno) return `deno ${global.Deno.version.deno}`;
  if (global.Bun) return `bun ${global.Bun.version}`;
  return `node ${process.versions.node}`;
}

/**
 * Runs the docker CLI against the benchmark engine and resolves with its stdout; rejects on
 * a nonzero exit. Spawned with `node:child_process`, which all three runtimes provide.
 */
export function dockerCli(config: BenchConfig, args: readonly string[], options: { discardStdout?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(config.dockerCli, ["-H", config.endpoint, ...args], {
      stdio: ["ignore", options.discardStdout ? "ignore" : "pipe", "pipe"],
    });
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    child.stdout?.on("data", (chunk: Uint8Array) => out.push(chunk));
    child.stderr?.on("data", (chunk: Uint8Array) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const text = (parts: Uint8Array[]) => new TextDecoder().decode(concatBytes(parts));
      if (code === 0) resolve(text(out));
      else reject(new Error(`docker ${args.join(" ")} exited with ${code}: ${text(err).trim()}`));
    });
  });
}

/** What a variant that times itself measured (its setup excluded). */
export interface OwnTiming {
  /** Wall time, milliseconds. */
  readonly wallMs: number;
  /** CPU time of this process (user + system), milliseconds. */
  readonly cpuMs: number;
}

/** Times `fn` (wall and this process's CPU). */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; timing: OwnTiming }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await fn();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { value, timing: { wallMs, cpuMs: (used.user + used.system) / 1000 } };
}

/** A variant of a row: `run` resolves with its own timing (setup excluded) or with nothing (then the whole call is timed). */
export interface TimedVariant {
  readonly name: string;
  readonly run: () => Promise<OwnTiming | void>;
  /** The work happens in a child process (the docker CLI), so this process's CPU time does not count it. */
  readonly child?: boolean;
}

/** Measured samples of one variant. */
export interface Samples {
  /** Wall time per iteration, milliseconds. */
  readonly samples: number[];
  /** CPU time (user + system, all threads) of this process per iteration, milliseconds. */
  readonly cpu: number[];
  /** Why the variant stopped, if it failed. */
  error?: string;
}

/** Most time one iteration may take before the variant is dropped, milliseconds. */
const ITERATION_TIMEOUT_MS = 180_000;

/** `promise`, or a rejection naming `what` once {@linkcode ITERATION_TIMEOUT_MS} (180 s) passed first. */
export function withinTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ITERATION_TIMEOUT_MS} ms`)), ITERATION_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs each variant `warmups + iterations` times, interleaved round robin (so drift and a
 * busy neighbour hit every variant alike), the order rotating by one each round: variants
 * share the process, and each pays for garbage the one before it left (a review measured
 * stdout ratios moving by about 10 % with a fixed order), so no variant always follows the
 * same one. Returns each variant's measured times in milliseconds. A variant that throws is
 * dropped, its error kept as the reason.
 */
export async function roundRobin(
  variants: readonly TimedVariant[],
  iterations: number,
  warmups: number,
): Promise<Map<string, Samples>> {
  const results = new Map<string, Samples>();
  for (const variant of variants) results.set(variant.name, { samples: [], cpu: [] });
  // BENCH_ONLY=<text>: run only variants whose name contains it (for profiling one variant).
  const only = process.env.BENCH_ONLY;
  if (only) {
    for (const variant of variants) if (!variant.name.includes(only)) results.get(variant.name)!.error = `skipped (BENCH_ONLY=${only})`;
  }
  for (let round = 0; round < warmups + iterations; round++) {
    for (let turn = 0; turn < variants.length; turn++) {
      const variant = variants[(round + turn) % variants.length];
      const result = results.get(variant.name)!;
      if (result.error !== undefined) continue;
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      let own: OwnTiming | void;
      try {
        own = await withinTimeout(variant.run(), variant.name);
      } catch (error) {
        result.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        result.samples.length = 0;
        continue;
      }
      const elapsed = own ? own.wallMs : performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      if (round >= warmups) {
        result.samples.push(elapsed);
        result.cpu.push(own ? own.cpuMs : (cpu.user + cpu.system) / 1000);
      }
    }
  }
  return results;
}

/** Reads a byte stream to its end; resolves with the number of bytes. */
export async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The backend every benchmark runs (`linux-x64-cgroupfs`, the busybox guest, uid/gid 65534)
 * in `namespace`, with a fresh spill directory the caller removes when it is done;
 * `overrides` replace fields of its config (a helper image, say).
 */
export async function benchBackend(
  config: BenchConfig,
  namespace: string,
  overrides: Partial<DockerSandboxBackendConfig> = {},
): Promise<{ backend: DockerSandboxBackend; spillDirectory: string }> {
  const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-spill-")));
  const backend = createDockerSandboxBackend({
    profile: "linux-x64-cgroupfs",
    endpoint: config.endpoint,
    namespace,
    spillDirectory,
    imageDigest: config.busyboxImage,
    user: USER,
    ...overrides,
  });
  return { backend, spillDirectory };
}
