/**
 * Quick start: a hardened sandbox on a real Docker Engine. A small project tree goes in
 * (`importTree`), one process with binary stdin/stdout/stderr as Web Streams works on it
 * and writes `artifacts/`, compute stops, the artifacts come out (`exportTree`), and
 * cleanup leaves nothing behind.
 *
 * Run it with `npm run demo`, or directly (Deno, Bun or Node ≥ 23.6):
 *
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock \
 *   AGENTCELL_IMAGE=sha256:… node examples/quickstart.ts
 *
 * AGENTCELL_IMAGE must be an admissible local image (see examples/prepare-image.ts);
 * `npm run demo` prepares a busybox guest. The library itself reads no environment: the
 * example passes these values explicitly.
 *
 * Paths: imports land in `/workspace/work` (the process's working directory), so the
 * imported `notes/todo.txt` is `/workspace/work/notes/todo.txt`. Export selections are
 * relative to `/workspace`, so the process's `artifacts/` is `work/artifacts`.
 */
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import {
  createDockerSandboxBackend,
  type DockerSandbox,
  exportToDirectory,
  importDirectory,
  type SandboxRecoveryRecord,
} from "../mod.ts";
import { DockerEngine } from "../lib/engine/mod.ts";

const endpoint = process.env.AGENTCELL_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const imageDigest = process.env.AGENTCELL_IMAGE ?? "";
if (imageDigest === "") {
  console.error("Cannot run the quick start: set AGENTCELL_IMAGE to a local image ID (sha256:…); examples/prepare-image.ts makes one");
  process.exit(2);
}

// Everything this program makes on the host lives in `scratch`, removed however it ends.
const scratch = await realpath(await mkdtemp(join(tmpdir(), "agentcell-quickstart-")));
const records: SandboxRecoveryRecord[] = [];
let sandbox: DockerSandbox | undefined;
try {
  const spillDirectory = join(scratch, "spill");
  await mkdir(spillDirectory);

  // A small project on the host to hand to the agent.
  const project = join(scratch, "project");
  await mkdir(join(project, "notes"), { recursive: true });
  await writeFile(join(project, "README.md"), "# demo project\n");
  await writeFile(join(project, "notes/todo.txt"), "write the report\nship it\n");

  const backend = createDockerSandboxBackend({
    profile: "linux-x64-cgroupfs", // Linux x64, cgroupfs driver (cgroup v1 or v2), no LSM required
    endpoint,
    namespace: "quickstart",
    spillDirectory,
    imageDigest,
    user: { uid: 65534, gid: 65534 },
  });

  // The recovery port persists each record before the resource effect it announces.
  const reservation = backend.reserve(
    { policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 }, network: "isolated" } },
    { record: (record) => Promise.resolve(void records.push(record)) },
  );

  sandbox = await reservation.start();

  // Trees go in between processes; they belong to the sandbox user.
  const imported = await sandbox.importTree(importDirectory(project), {
    quota: { bytes: 1024 * 1024, files: 100 },
    deadlineAt: Date.now() + 30_000,
  });
  console.log(`--- imported ${imported.files} entries, ${imported.bytes} bytes`);

  const agent = await sandbox.reserveProcess({
    executable: "/bin/sh",
    args: [
      "-c",
      [
        "mkdir -p artifacts",
        'while read -r line; do echo "stdout: $line"; echo "stderr: ${#line} bytes" >&2; echo "$line" >> artifacts/lines.txt; done',
        'echo "$(wc -l < notes/todo.txt) todo items; greeting $GREETING" > artifacts/report.txt',
        'echo "stdin closed; bye"',
      ].join("; "),
    ],
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

  // The short path: one command, its exit and its output (many may run in one sandbox).
  const listing = await sandbox.run("/bin/ls", ["artifacts"]);
  console.log(`--- run /bin/ls artifacts: exit ${listing.exit.code}\n${listing.stdoutText}`);
  // Single files while compute runs go through the guest, as the sandbox user.
  await sandbox.writeFile("work/artifacts/from-host.txt", "written while it runs\n");
  const report = new TextDecoder().decode(await sandbox.readFile("work/artifacts/report.txt"));
  console.log(`--- readFile work/artifacts/report.txt: ${JSON.stringify(report)}`);

  // Files come out after compute stopped, through a never-started read-only accessor.
  await sandbox.stop();
  console.log("--- exported work/artifacts");
  for await (const entry of await sandbox.exportTree({ kind: "subtree", path: "work/artifacts" })) {
    const content = entry.type === "file" ? JSON.stringify(await new Response(entry.body).text()) : "";
    console.log(`${entry.type.padEnd(9)} ${entry.mode.toString(8)} ${entry.path} ${content}`);
  }

  // Or straight into a new host directory, all or nothing.
  const target = join(scratch, "artifacts");
  await exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work/artifacts" }), target, { base: "work/artifacts" });
  console.log(`--- written to the host: ${(await readdir(target)).sort().join(", ")}`);
  console.log((await readFile(join(target, "report.txt"), "utf8")).trim());
} catch (error) {
  // A typed error names the field and the fix: print it without a stack trace.
  const code = (error as { code?: unknown }).code;
  console.error(`${(error as Error).name}${code ? ` [${code}]` : ""}: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await sandbox?.destroy();
  await rm(scratch, { recursive: true, force: true });
}
if (!sandbox || process.exitCode) process.exit();

// Zero leftovers, checked by exact identity.
const engine = new DockerEngine(endpoint);
const { keeperId, volumeName, networkId, accessorId } = sandbox.resources;
const leftovers: string[] = [];
const paths = [
  `/containers/${keeperId}/json`,
  `/volumes/${volumeName}`,
  ...(networkId ? [`/networks/${networkId}`] : []),
  ...(accessorId ? [`/containers/${accessorId}/json`] : []),
];
for (const path of paths) {
  const reply = await engine.request("GET", path, { expect: [200, 404] });
  if (reply.status !== 404) leftovers.push(path);
}
console.log(`--- cleanup\nstate ${sandbox.state}; ${records.length} recovery records written; leftovers: ${leftovers.length}`);
if (leftovers.length > 0) process.exit(1);
