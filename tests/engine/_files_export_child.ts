// Child process of the flat-memory export test: starts a sandbox, has the guest write a
// file of SIZE bytes with `head -c`, stops, exports that one file while discarding its
// bytes, destroys the sandbox, and prints one JSON line with the byte count and its own
// memory (VmRSS before the export, VmHWM after it, in KiB, from /proc/self/status; the
// peak is reset with /proc/self/clear_refs before the export when the kernel allows).
// Runs unchanged on Deno, Bun and Node; uses only the library and node: modules.
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend } from "../../lib/docker/backend.ts";
import { DockerEngine } from "../../lib/engine/client.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

const endpoint = process.env.AGENTCELL_TEST_ENGINE!;
const image = process.env.AGENTCELL_TEST_BUSYBOX_IMAGE!;
const size = Number(process.env.AGENTCELL_CHILD_EXPORT_BYTES);

function statusKiB(field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
  return match ? Number(match[1]) : -1;
}

const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-child-spill-")));
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: TEST_NAMESPACE,
  spillDirectory,
  imageDigest: image,
  user: { uid: 65534, gid: 65534 },
});
const sandbox = await backend.reserve(
  { policy: { resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 } } },
  { record: () => Promise.resolve() },
).start();
const result: Record<string, unknown> = {};
try {
  const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", `head -c ${size} /dev/zero > big`] }).start();
  await guest.stdin.close();
  await Promise.all([new Response(guest.stdout).arrayBuffer(), new Response(guest.stderr).arrayBuffer()]);
  result.exit = await guest.exit;
  await sandbox.stop();
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    result.peakReset = true;
  } catch {
    result.peakReset = false;
  }
  result.rssBeforeKiB = statusKiB("VmRSS");
  const started = Date.now();
  let bytes = 0;
  for await (const entry of await sandbox.exportTree({ kind: "file", path: "work/big" })) {
    for await (const chunk of entry.body) bytes += chunk.length;
  }
  result.exportMs = Date.now() - started;
  result.bytes = bytes;
  result.peakKiB = statusKiB("VmHWM");
} finally {
  await sandbox.destroy();
  await rm(spillDirectory, { recursive: true, force: true });
  const engine = new DockerEngine(endpoint);
  const { keeperId, volumeName, accessorId } = sandbox.resources;
  const paths = [`/containers/${keeperId}/json`, `/volumes/${volumeName}`, `/containers/${accessorId}/json`];
  const statuses = await Promise.all(paths.map(async (path) => (await engine.request("GET", path, { expect: [200, 404] })).status));
  result.gone = statuses.every((status) => status === 404);
  console.log(JSON.stringify(result));
}
