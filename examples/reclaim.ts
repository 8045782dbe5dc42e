/**
 * Reclaim after a crash: run this at the start of a host program (or from a cron job) with
 * the same backend configuration and record directory the crashed program used. It lists
 * the file recovery store, recovers cleanup ownership of each record, removes exactly the
 * resources the record names, and drops the records whose cleanup completed. Records whose
 * create outcome is still unknown stay for the next run.
 *
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock \
 *   AGENTCELL_IMAGE=sha256:… AGENTCELL_RECORDS=/var/lib/my-app/sandbox-records \
 *   AGENTCELL_SPILL=/var/lib/my-app/spill node examples/reclaim.ts
 *
 * Run it only while no other program uses that record directory: recovery assumes the
 * controller that wrote a record and its operations are over.
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
  try {
    const recovery = await backend.recover(entry.record, store);
    const report = await recovery.cleanup(); // persists each step through the store
    if (report.complete) {
      await store.remove(entry.reservationId);
      reclaimed += 1;
      console.log(`reclaimed ${entry.reservationId}: removed ${recovery.owned.map((o) => o.role).join(", ") || "nothing left"}`);
    } else {
      pending += 1;
      console.log(`kept ${entry.reservationId}: the outcome of creating ${report.uncertain.join(", ")} is still unknown`);
    }
  } catch (error) {
    // A conflict (another backend configuration or daemon, or a name someone else holds)
    // touched nothing: keep the record and look at it.
    if (!(error instanceof SandboxError)) throw error;
    refused += 1;
    console.error(`kept ${entry.reservationId}: [${error.code}] ${error.message}`);
  }
}
console.log(`${reclaimed} reclaimed, ${pending} pending, ${refused} refused`);
