/**
 * Randomized crash-safety campaign against a real Engine (outside the default suite).
 *
 *   AGENTCELL_TEST_ENGINE=unix:///… AGENTCELL_TEST_BUSYBOX_IMAGE=sha256:… \
 *   AGENTCELL_CAMPAIGN_RUNS=100 AGENTCELL_CAMPAIGN_SEED=12345 node tests/campaign/recovery.campaign.ts
 *
 * (`deno run -A …` and `bun …` run it unchanged; `npm run campaign` runs it on all three.)
 *
 * Each run is one sandbox lifecycle with one fault drawn from the seeded generator:
 * - `kill`: a child host program (same runtime) dies by SIGKILL inside a recovery record
 *   write (its effect not dispatched), one macrotask after one (its effect in flight), while
 *   its process runs, during an export, while paused, while a snapshot is half made, or
 *   while a fork of a snapshot is half made; half of those sandboxes hold a controller lease
 *   (`controllerLoss: "stop"`), whose stop is awaited and timed before recovery (not for a
 *   paused keeper, which cannot act on it); records holding a copier are recovered first;
 * - `abort`: an in-process start aborted inside its k-th record write;
 * - `port`: an in-process start whose recovery port rejects its k-th record;
 * - `clean`: a whole lifecycle (import, process, stop, export, destroy) with no fault.
 * After each run, every record in the file store is recovered and cleaned up; a record with
 * an uncertain create stays, and later passes adopt a create that landed late. At the end
 * the campaign waits 5 s, recovers strictly once more, then settles what stayed absent that
 * long (`settleUncertainAfterMs: 5000`), and looks up the four resource names of every run:
 * any that answers, and any record left in the store, is a leftover.
 * Prints the seed (for replay) and `runs, faults injected, recovered, leftovers`, plus the
 * time from the host's death to the lease stopping its keeper. Exits 1 on any leftover.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createDockerSandboxBackend } from "../../lib/docker/backend.ts";
import { resourceNames } from "../../lib/docker/names.ts";
import { createFileRecoveryStore } from "../../lib/docker/recovery/store.ts";
import { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { runtimeCommand } from "../engine/_engine.ts";

const endpoint = process.env.AGENTCELL_TEST_ENGINE ?? "";
const image = process.env.AGENTCELL_TEST_BUSYBOX_IMAGE ?? "";
if (!endpoint || !image) throw new Error("Cannot run the campaign: set AGENTCELL_TEST_ENGINE and AGENTCELL_TEST_BUSYBOX_IMAGE");
const runs = Number(process.env.AGENTCELL_CAMPAIGN_RUNS ?? 100);
const seed = Number(process.env.AGENTCELL_CAMPAIGN_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CHILD = fileURLToPath(new URL("../engine/_controller_child.ts", import.meta.url));

/** mulberry32: a small seeded generator, so a seed replays the same campaign. */
function generator(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = generator(seed);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];

const engine = new DockerEngine(endpoint);
const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-campaign-")));
const spill = join(root, "spill");
await mkdir(spill);
const store = await createFileRecoveryStore(join(root, "records"));
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: "campaign",
  spillDirectory: spill,
  imageDigest: image,
  user: { uid: 65534, gid: 65534 },
});

const counts = { runs: 0, faults: 0, recovered: 0, uncertainSettled: 0, leftovers: 0, conflicts: 0 };
const byKind: Record<string, number> = {};
const leaseStopMs: number[] = [];

function policyOf(network: boolean, lease: boolean): SandboxPolicyInput {
  return {
    resources: { cpus: 0.5, memoryBytes: 64 * 1024 * 1024, pids: 32 },
    network: network ? "outbound" : "isolated",
    controllerLoss: lease ? "stop" : "continue",
  };
}

function child(killAt: string, policy: SandboxPolicyInput): Promise<{ reservationId: string | undefined; diedAt: number }> {
  const [command, args] = runtimeCommand(CHILD);
  return new Promise((resolve, reject) => {
    execFile(command, args, {
      env: {
        ...process.env,
        AGENTCELL_TEST_BUSYBOX_IMAGE: image,
        AGENTCELL_CHILD_KILL_AT: killAt,
        AGENTCELL_CHILD_STORE: store.directory,
        AGENTCELL_CHILD_SPILL: spill,
        AGENTCELL_CHILD_POLICY: JSON.stringify(policy),
        AGENTCELL_CHILD_NAMESPACE: "campaign",
      },
      timeout: 120_000,
    }, (error, stdout, stderr) => {
      const diedAt = Date.now();
      if ((error as { signal?: string } | null)?.signal !== "SIGKILL") {
        reject(new Error(`the child did not die by SIGKILL at ${killAt}: ${error?.message}\n${stdout}\n${stderr}`));
        return;
      }
      resolve({ reservationId: /^ready ([0-9a-f]{32})$/m.exec(stdout)?.[1], diedAt });
    });
  });
}

/**
 * Recover every record of the store and clean up; drop the records whose cleanup completed.
 * Without `settleMs` an uncertain create stays (a late create is adopted by a later pass).
 */
/** Whether a record still names a copier (a half-made snapshot or fork): its copier holds other records' volumes. */
function holdsCopier(entry: object): boolean {
  const copier = (entry as { record?: { resources?: Record<string, { state?: string }> } }).record?.resources?.copier;
  return copier !== undefined && copier.state !== "planned" && copier.state !== "removed";
}

async function reclaim(settleMs?: number): Promise<void> {
  // Records with a copier first (a fork's, a snapshot's): until it is gone, the volumes it
  // mounts cannot be removed; snapshots (their volume mounted by a fork's copier) before sandboxes.
  const entries = (await store.list()).sort((a, b) => Number(!holdsCopier(a)) - Number(!holdsCopier(b)));
  for (const entry of entries) {
    if (entry.kind === "corrupt") throw entry.error;
    // The in-process runs are over before each reclaim (their port wraps the store, so a failed
    // start cannot release the lock through it): a record this process still locks is taken
    // over with force. Any other live controller's lock is a refusal (a leftover).
    const force = entry.kind === "locked" && entry.owner.pid === process.pid;
    try {
      const recovery = await backend.recover(entry.record, store, { settleUncertainAfterMs: settleMs, force });
      const report = await recovery.cleanup();
      if (report.complete) {
        await store.remove(entry.reservationId);
        counts.recovered += 1;
        if (settleMs !== undefined) counts.uncertainSettled += 1;
      }
    } catch (error) {
      counts.conflicts += 1;
      console.error(`run ${counts.runs}: recovery of ${entry.reservationId} failed: ${error}`);
    }
  }
}

async function leftoversOf(reservationId: string): Promise<string[]> {
  const names = resourceNames("campaign", reservationId);
  const paths = [`/containers/${names.keeper}/json`, `/containers/${names.accessor}/json`, `/containers/${names.copier}/json`, `/networks/${names.network}`, `/volumes/${names.volume}`];
  const left: string[] = [];
  for (const path of paths) {
    try {
      await engine.request("GET", path);
      left.push(path);
    } catch (error) {
      if (!(error instanceof DockerEngineError && error.code === "not_found")) throw error;
    }
  }
  return left;
}

async function inProcess(kind: "abort" | "port" | "clean", network: boolean): Promise<string> {
  const k = 1 + Math.floor(random() * 7);
  const controller = new AbortController();
  let written = 0;
  const reservation = backend.reserve({ policy: policyOf(network, false) }, {
    async record(record) {
      written += 1;
      if (kind === "port" && written === k) throw new Error("the store is full");
      await store.record(record);
      if (kind === "abort" && written === k) controller.abort(new Error("caller gave up"));
    },
  });
  try {
    const sandbox = await reservation.start({ signal: controller.signal });
    await sandbox.importTree([{ path: "in.txt", type: "file", mode: 0o644, size: 3, body: new Blob(["abc"]).stream() }]);
    const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "cat in.txt > out.txt"] }).start();
    await guest.stdin.close();
    await Promise.all([new Response(guest.stdout).text(), new Response(guest.stderr).text(), guest.exit]);
    await sandbox.stop();
    for await (const entry of await sandbox.exportTree({ kind: "file", path: "work/out.txt" })) await entry.body.cancel();
    await sandbox.destroy();
    await store.remove(reservation.id);
  } catch {
    // The fault surfaced as the start's error: what it created was removed, or is in the store.
  }
  return reservation.id;
}

/** How long an uncertain create must stay absent before the campaign settles it, ms. */
const SETTLE_MS = 5_000;
const reservations: string[] = [];
const started = Date.now();
console.log(`campaign seed ${seed}, ${runs} runs, runtime ${runtimeCommand(CHILD)[0]}`);
try {
  for (let run = 1; run <= runs; run++) {
    counts.runs = run;
    const kind = pick(["kill", "kill", "kill", "abort", "port", "clean"] as const);
    const network = random() < 0.3;
    let reservationId: string | undefined;
    if (kind === "kill") {
      const lease = random() < 0.5;
      const killAt = pick([
        `record:${1 + Math.floor(random() * 8)}`,
        `after-record:${1 + Math.floor(random() * 8)}`,
        "running",
        "exporting",
        "paused",
        "snapshot-copier",
        "fork-copier",
      ]);
      const result = await child(killAt, policyOf(network, lease));
      reservationId = result.reservationId;
      if (lease && reservationId) {
        const keeperId = (await store.list()).flatMap((e) => e.kind === "record" && e.reservationId === reservationId
          ? [(e.record.resources as Record<string, { id?: string; state: string }>).keeper]
          : [])[0];
        // A keeper paused when its host died (paused, or during a snapshot's copy) cannot act
        // on its lease's end: recovery removes it paused.
        const frozen = killAt === "paused" || killAt === "snapshot-copier";
        if (keeperId?.state === "created" && keeperId.id && killAt !== "exporting" && !frozen) {
          await engine.request("POST", `/containers/${keeperId.id}/wait`, { query: { condition: "not-running" }, timeoutMs: 60_000 });
          leaseStopMs.push(Date.now() - result.diedAt);
        }
      }
      byKind[`kill ${killAt.replace(/\d+$/u, "k")}${lease ? " lease" : ""}`] = (byKind[`kill ${killAt.replace(/\d+$/u, "k")}${lease ? " lease" : ""}`] ?? 0) + 1;
    } else {
      reservationId = await inProcess(kind, network);
      byKind[kind] = (byKind[kind] ?? 0) + 1;
    }
    if (kind !== "clean") counts.faults += 1;
    if (reservationId) reservations.push(reservationId);
    await reclaim();
  }
  // Records whose create outcome is still unknown: a create in flight when its host died
  // may land after the first look. Wait the settle time, look again strictly (a late create
  // is adopted), then settle what stayed absent that long.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  await reclaim();
  await reclaim(SETTLE_MS);
  for (const reservationId of reservations) {
    const left = await leftoversOf(reservationId);
    counts.leftovers += left.length;
    if (left.length > 0) console.error(`${reservationId}: leftovers ${left.join(", ")}`);
  }
  const remaining = await store.list();
  if (remaining.length > 0) console.error(`${remaining.length} records remain in the store`);
  counts.leftovers += remaining.length;
} finally {
  await rm(root, { recursive: true, force: true });
}
const sorted = [...leaseStopMs].sort((a, b) => a - b);
const quantile = (q: number) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
console.log(`faults by kind: ${JSON.stringify(byKind)}`);
console.log(`lease stop after host death: n=${sorted.length} median ${quantile(0.5)} ms, max ${sorted.at(-1) ?? NaN} ms`);
console.log(
  `runs ${counts.runs}, faults injected ${counts.faults}, recovered ${counts.recovered} (settled after ${SETTLE_MS} ms absent ${counts.uncertainSettled}), ` +
    `recovery refusals ${counts.conflicts}, leftovers ${counts.leftovers} — ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
if (counts.leftovers > 0 || counts.conflicts > 0) process.exit(1);
