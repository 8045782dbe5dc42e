/**
 * Snapshot benchmark (issue 26), side by side in one run on one engine, rounds interleaved:
 *
 * - copy a workspace tree: `sandbox.snapshot()` (pause, copier container, resume; the
 *   removal of the snapshot is not timed), the same with a byte bound (`{ maxBytes }`: the
 *   copier's apparent-size scan before the copy), and `sandbox.snapshot()` + a fork's start + its first
 *   output (`cat` of one file), against the CLI-native copy `docker run --rm -v src:/s -v dst:/d
 *   busybox cp -a /s/. /d/` of the same volume (the destination volume is made and removed
 *   outside the timing);
 * - a pause → resume round trip: `sandbox.pause()` + `sandbox.resume()` against
 *   `docker pause C` + `docker unpause C`.
 *
 * The tree is made in the source sandbox once: `AGENTCELL_BENCH_SNAPSHOT_FILES` files
 * (default 500) holding `AGENTCELL_BENCH_SNAPSHOT_MIB` MiB in total (default 32). The
 * issue's case is `AGENTCELL_BENCH_SNAPSHOT_FILES=10000 AGENTCELL_BENCH_SNAPSHOT_MIB=1024`
 * (minutes; not in the test suite). `AGENTCELL_BENCH_ROUNDS` (default 3) measured rounds after
 * one warm-up. Wall time per variant and this process's CPU time (the CLI's work is in its
 * child: "in child"). Runs under Node, Deno and Bun (`node bench/snapshots.bench.ts`).
 *
 * @module
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, type DockerSandbox } from "../mod.ts";
import { BENCH_LABEL, BENCH_NAMESPACE, benchConfig, dockerCli, roundRobin, runtimeName, type TimedVariant, timed } from "./_setup.ts";
import { markdownTable, type RowResult, type VariantResult } from "./_stats.ts";
import { NO_RECORD, POLICY, USER } from "./_rows.ts";

const config = benchConfig();
const files = Number(process.env.AGENTCELL_BENCH_SNAPSHOT_FILES ?? 500);
const mib = Number(process.env.AGENTCELL_BENCH_SNAPSHOT_MIB ?? 32);
const rounds = Number(process.env.AGENTCELL_BENCH_ROUNDS ?? 3);

function results(samples: Map<string, { samples: number[]; cpu: number[]; error?: string }>, variants: readonly TimedVariant[]): VariantResult[] {
  return variants.map((variant) => {
    const measured = samples.get(variant.name)!;
    return { variant: variant.name, samplesMs: measured.samples, cpuMs: measured.cpu, child: variant.child, unavailable: measured.error };
  });
}

const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-snapshots-")));
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint: config.endpoint,
  namespace: BENCH_NAMESPACE,
  spillDirectory: spill,
  imageDigest: config.busyboxImage,
  user: USER,
});
const source: DockerSandbox = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
try {
  // The tree: `files` files in directories of 100, together `mib` MiB (at least 1 byte each).
  const perFile = Math.max(1, Math.floor((mib * 1024 * 1024) / files));
  const made = await source.run("/bin/sh", [
    "-c",
    `i=0; while [ $i -lt ${files} ]; do d=tree/$((i / 100)); mkdir -p $d; head -c ${perFile} /dev/urandom > $d/f$i; i=$((i + 1)); done; du -sk tree`,
  ], { timeoutMs: 3_600_000 });
  console.log(`tree: ${files} files, ${made.stdoutText.trim()} (KiB)`);

  const copyVariants: TimedVariant[] = [
    {
      name: "ours: sandbox.snapshot()",
      run: async () => {
        const { value: snapshot, timing } = await timed(() => source.snapshot());
        await backend.removeSnapshot(snapshot);
        return timing;
      },
    },
    {
      // The byte bound's cost: the copier's scan (find, stat, awk) before the same copy.
      name: "ours: sandbox.snapshot({ maxBytes }) (bounded: scan, then copy)",
      run: async () => {
        const { value: snapshot, timing } = await timed(() => source.snapshot({ maxBytes: Number.MAX_SAFE_INTEGER }));
        await backend.removeSnapshot(snapshot);
        return timing;
      },
    },
    {
      name: "ours: sandbox.snapshot() + fork start + first output",
      run: async () => {
        let fork: DockerSandbox | undefined;
        const { value: snapshot, timing } = await timed(async () => {
          const taken = await source.snapshot();
          fork = await backend.reserve({ policy: POLICY, workspace: { from: taken } }, NO_RECORD).start();
          const out = await fork.run("/bin/cat", ["tree/0/f0"]);
          if (out.stdout.length !== perFile) throw new Error(`fork read ${out.stdout.length} bytes, not ${perFile}`);
          return taken;
        });
        await fork?.destroy();
        await backend.removeSnapshot(snapshot);
        return timing;
      },
    },
    {
      name: "docker run --rm -v src:/s -v dst:/d busybox cp -a /s/. /d/ (CLI)",
      child: true,
      run: async () => {
        const volume = `agentcell-bench-copy-${crypto.randomUUID()}`;
        await dockerCli(config, ["volume", "create", "--label", `${BENCH_LABEL}=1`, volume], { discardStdout: true });
        try {
          const started = performance.now();
          await dockerCli(config, [
            "run", "--rm", "--network", "none", "-v", `${source.resources.volumeName}:/s:ro`, "-v", `${volume}:/d`, config.busyboxImage, "cp", "-a", "/s/work/.", "/d/",
          ], { discardStdout: true });
          return { wallMs: performance.now() - started, cpuMs: 0 };
        } finally {
          await dockerCli(config, ["volume", "rm", volume], { discardStdout: true });
        }
      },
    },
  ];
  const pauseVariants: TimedVariant[] = [
    { name: "ours: sandbox.pause() + sandbox.resume()", run: async () => void (await source.pause(), await source.resume()) },
    {
      name: "docker pause C + docker unpause C (CLI)",
      child: true,
      run: async () => {
        await dockerCli(config, ["pause", source.resources.keeperId], { discardStdout: true });
        await dockerCli(config, ["unpause", source.resources.keeperId], { discardStdout: true });
      },
    },
  ];
  const rows: RowResult[] = [
    { row: `copy ${files} files / ${mib} MiB`, variants: results(await roundRobin(copyVariants, rounds, 1), copyVariants) },
    { row: "pause → resume round trip", variants: results(await roundRobin(pauseVariants, rounds * 5, 1), pauseVariants) },
  ];
  console.log(markdownTable(runtimeName(), rows));
} finally {
  await source.destroy();
  await rm(spill, { recursive: true, force: true });
}
