/**
 * Reclaim after a crash: run this at the start of a host program (or from a cron job) with
 * the same backend configuration and record directory the crashed program used. It lists
 * the file recovery store, recovers cleanup ownership of each record, removes exactly the
 * resources the record names, and drops the records whose cleanup completed. Records whose
 * create outcome is still unknown, or one of whose names someone else holds, stay for the
 * next run.
 *
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock \
 *   AGENTCELL_IMAGE=sha256:… AGENTCELL_RECORDS=/var/lib/my-app/sandbox-records \
 *   AGENTCELL_SPILL=/var/lib/my-app/spill node examples/reclaim.ts
 *
 * A record whose controller still runs is `locked` (the store's controller lock names its
 * pid) and left alone: recovery assumes the controller that wrote a record is gone.
 */
import process from "node:process";
import { createDockerSandboxBackend, createFileRecoveryStore, SandboxError } from "../mod.ts";

const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint: process.env.AGENTCELL_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock",
  namespace: "quickstart",
  spillDirectory: process.env.AGENTCELL_SPILL ?? "/var/lib/my-app/spill",
  imageDigest: process.env.AGENTCELL_IMAGE ?? "",
  user: { uid: 65534, gid: 65534 },
});
const store = await createFileRecoveryStore(process.env.AGENTCELL_RECORDS ?? "/var/lib/my-app/sandbox-records");

let reclaimed = 0, pending = 0, refused = 0;
for (const entry of await store.list()) {
  if (entry.kind === "corrupt") {
    console.error(`skipping ${entry.file}: ${entry.error.message}`);
    refused += 1;
    continue;
  }
  if (entry.kind === "locked") {
    // Its controller (entry.owner.pid) still runs: stop it first, or recover with { force: true }.
    console.error(`kept ${entry.reservationId}: ${entry.error.message}`);
    refused += 1;
    continue;
  }
  try {
    const recovery = await backend.recover(entry.record, store);
    const report = await recovery.cleanup(); // persists each step through the store
    if (report.complete) {
      await store.remove(entry.reservationId);
      reclaimed += 1;
      console.log(`reclaimed ${entry.reservationId}: removed ${recovery.owned.map((o) => o.role).join(", ") || "nothing left"}`);
    } else {
      pending += 1;
      const why = [
        ...report.uncertain.map((role) => `the outcome of creating the ${role} is still unknown`),
        ...report.squatted.map((name) => `${name.name} is held by ${name.id}, which is not ours (${name.reason})`),
      ];
      console.log(`kept ${entry.reservationId}: ${why.join("; ")}`);
    }
  } catch (error) {
    // A conflict (another backend configuration or daemon, a controller that took the
    // record's lock meanwhile) touched nothing: keep the record and look at it.
    if (!(error instanceof SandboxError)) throw error;
    refused += 1;
    console.error(`kept ${entry.reservationId}: [${error.code}] ${error.message}`);
  }
}
console.log(`${reclaimed} reclaimed, ${pending} pending, ${refused} refused`);
