/**
 * Quick start: a hardened sandbox on a real Docker Engine, one process with binary
 * stdin/stdout/stderr as Web Streams, its exit receipt, and cleanup with zero leftovers.
 *
 * Run it with `npm run demo`, or directly (Deno, Bun or Node ≥ 23.6):
 *
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock \
 *   AGENTCELL_IMAGE=sha256:… node examples/quickstart.ts
 *
 * AGENTCELL_IMAGE must be an admissible local image (see examples/prepare-image.ts);
 * `npm run demo` prepares a busybox guest. The library itself reads no environment: the
 * example passes these values explicitly.
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, DockerEngine, type SandboxRecoveryRecord } from "../mod.ts";

const endpoint = process.env.AGENTCELL_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const imageDigest = process.env.AGENTCELL_IMAGE ?? "";
const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-quickstart-")));

const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs", // Linux x64, cgroupfs driver (cgroup v1 or v2), no LSM required
  endpoint,
  namespace: "quickstart",
  spillDirectory,
  imageDigest,
  user: { uid: 65534, gid: 65534 },
});

// The recovery port persists each record before the resource effect it announces.
const records: SandboxRecoveryRecord[] = [];
const reservation = backend.reserve(
  { policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 }, network: "isolated" } },
  { record: (record) => Promise.resolve(void records.push(record)) },
);

const sandbox = await reservation.start();
try {
  const agent = await sandbox.reserveProcess({
    executable: "/bin/sh",
    args: ["-c", 'while read -r line; do echo "stdout: $line"; echo "stderr: ${#line} bytes" >&2; done; echo "stdin closed; bye"'],
    env: { GREETING: "hello" },
  }).start();

  const writer = agent.stdin.getWriter();
  for (const line of ["hello from the host", "binary-safe streams", "half-close comes next"]) {
    await writer.write(new TextEncoder().encode(`${line}\n`));
  }
  await writer.close(); // half-close: the guest sees EOF, output still arrives

  const [stdout, stderr, receipt] = await Promise.all([
    new Response(agent.stdout).text(),
    new Response(agent.stderr).text(),
    agent.exit,
  ]);
  console.log("--- stdout\n" + stdout + "--- stderr\n" + stderr + "--- exit receipt");
  console.log(receipt);
} finally {
  await sandbox.destroy();
  await rm(spillDirectory, { recursive: true, force: true });
}

// Zero leftovers, checked by exact identity.
const engine = new DockerEngine(endpoint);
const { keeperId, volumeName, networkId } = sandbox.resources;
const leftovers: string[] = [];
for (const path of [`/containers/${keeperId}/json`, `/volumes/${volumeName}`, ...(networkId ? [`/networks/${networkId}`] : [])]) {
  const reply = await engine.request("GET", path, { expect: [200, 404] });
  if (reply.status !== 404) leftovers.push(path);
}
console.log(`--- cleanup\nstate ${sandbox.state}; ${records.length} recovery records written; leftovers: ${leftovers.length}`);
if (leftovers.length > 0) process.exit(1);
