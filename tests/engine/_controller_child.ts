// Child process of the controller-death tests: a host program that starts a sandbox with a
// file recovery store and then dies by SIGKILL (sent to itself, so the moment is an event
// of the lifecycle, not a time) at the point AGENTCELL_CHILD_KILL_AT names:
//   planned         right after the planned record is durable (before any create)
//   keeper-creating right after "keeper creating" is durable (the create is not dispatched)
//   record:<k>      right after the k-th record is durable (its effect not dispatched)
//   after-record:<k> one macrotask after the k-th record resolved (its effect in flight)
//   running         while its process runs (`sleep 600`)
//   paused          while its process runs and the sandbox is paused (`sandbox.pause()`)
//   snapshot-copier during `sandbox.snapshot()`, right after its copier's "created" is durable
//                   (the snapshot's volume exists, the copier was never started, the keeper is paused)
//   fork-copier     after a complete snapshot, during a fork's start, right after the fork's
//                   copier's "created" is durable (the fork's volume and keeper exist, unstarted)
//   exporting       during an export, after the first entry arrived
//   connected       after its first connect() created the port relay (needs AGENTCELL_CHILD_PROXY_IMAGE)
//   hold            never: it prints "running <pid>" while its process runs and lives on until
//                   the test kills it (a live controller)
// Other settings: AGENTCELL_CHILD_STORE (the store directory), AGENTCELL_CHILD_SPILL (spill
// directory), AGENTCELL_CHILD_POLICY (JSON policy), AGENTCELL_CHILD_NAMESPACE (default
// the lane's, tests/engine/_lane.ts), AGENTCELL_CHILD_PROXY_IMAGE (config.proxyImageDigest, for allowlist policies). It prints "ready <reservationId>" lines.
// Runs unchanged on Deno, Bun and Node.
import process from "node:process";
import { createDockerSandboxBackend } from "../../lib/docker/backend.ts";
import { createFileRecoveryStore } from "../../lib/docker/recovery/store.ts";
import type { SandboxRecoveryRecord } from "../../lib/sandbox/backend.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

const killAt = process.env.AGENTCELL_CHILD_KILL_AT!;
const store = await createFileRecoveryStore(process.env.AGENTCELL_CHILD_STORE!);
const die = (): never => {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
};

const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint: process.env.AGENTCELL_TEST_ENGINE!,
  namespace: process.env.AGENTCELL_CHILD_NAMESPACE ?? TEST_NAMESPACE,
  spillDirectory: process.env.AGENTCELL_CHILD_SPILL!,
  imageDigest: process.env.AGENTCELL_TEST_BUSYBOX_IMAGE!,
  user: { uid: 65534, gid: 65534 },
  proxyImageDigest: process.env.AGENTCELL_CHILD_PROXY_IMAGE,
});
let records = 0;
const policy = JSON.parse(process.env.AGENTCELL_CHILD_POLICY!);
const port = {
  async record(record: SandboxRecoveryRecord) {
    await store.record(record);
    records += 1;
    const keeper = (record.resources as Record<string, { state: string }>).keeper;
    if (killAt === "planned" && records === 1) die();
    if (killAt === "keeper-creating" && keeper?.state === "creating") die();
    if (killAt === `record:${records}`) die();
    if (killAt === `after-record:${records}`) setTimeout(die, 0);
    const copier = (record.resources as Record<string, { state: string }>).copier;
    const snapshotRecord = (record as { identity?: { snapshot?: unknown } }).identity?.snapshot !== undefined;
    if (killAt === "snapshot-copier" && snapshotRecord && copier?.state === "created") die();
    if (killAt === "fork-copier" && !snapshotRecord && copier?.state === "created") die();
  },
};
const reservation = backend.reserve({ policy }, port);
console.log(`ready ${reservation.id}`);
const sandbox = await reservation.start();
if (killAt === "connected") {
  // Nothing listens on port 1: the connect is refused, but the relay exists and is recorded.
  await sandbox.connect(1).catch(() => {});
  die();
}
if (killAt === "exporting") {
  const writer = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "mkdir out && for i in 1 2 3; do echo $i > out/f$i; done"] }).start();
  await writer.stdin.close();
  await writer.exit;
  await sandbox.stop();
  const reader = (await sandbox.exportTree({ kind: "subtree", path: "work/out" })).getReader();
  await reader.read();
  die();
}
const process_ = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
void process_;
console.log(`running ${process.pid}`);
if (killAt === "snapshot-copier") {
  await sandbox.snapshot();
  throw new Error("the snapshot finished before its kill point");
}
if (killAt === "fork-copier") {
  const snapshot = await sandbox.snapshot();
  await backend.reserve({ policy, workspace: { from: snapshot } }, port).start();
  throw new Error("the fork started before its kill point");
}
if (killAt === "paused") {
  await sandbox.pause();
  die();
}
if (killAt === "hold") {
  // A live controller: its sandbox and process run until the test kills this program.
  setInterval(() => {}, 1 << 30);
} else {
  // Every other mode ends here at the latest: a kill point past the last startup record is
  // a kill while the process runs.
  die();
}
