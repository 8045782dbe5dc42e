// A private Docker Engine a test starts beside the lane's engine, for states and faults the
// shared engine must never be put in: a daemon started with IPv4 forwarding off (in a network
// namespace of its own), a daemon the test kills and restarts, live-restore. It is
// scripts/test-engine.sh with AGENTCELL_ENGINE_BESIDE=1 (no iptables, its own subnets), its
// own home, run directory and socket, and the lane engine's unpacked packages.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { DockerEngine } from "../../lib/engine/client.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const INSTALL = process.env.AGENTCELL_ENGINE_HOME ?? "/var/lib/agentcell-test-engine";

/** How the private engine starts. */
export interface PrivateEngineOptions {
  /** Inside a network namespace of its own with `net.ipv4.ip_forward` 0 (a just-booted host). */
  readonly forwardingOff?: boolean;
  /** `"live-restore": true` in its daemon config. */
  readonly liveRestore?: boolean;
}

/** A running private engine. */
export interface PrivateEngine {
  /** `unix:///…` of its socket. */
  readonly endpoint: string;
  /** A client of it. */
  readonly engine: DockerEngine;
  /** The busybox guest's image ID on it. */
  readonly busyboxImage: string;
  /** Send `signal` to its dockerd and wait until that process is gone. */
  kill(signal: "SIGKILL" | "SIGTERM"): Promise<void>;
  /** Start it again after {@linkcode PrivateEngine.kill} (same data root, socket, config). */
  start(): Promise<void>;
}

function run(file: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(" ")} failed: ${error.message}\n${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

let counter = 0;

/**
 * Start a private engine, run `fn` with it, and stop it (its data, namespace and directories
 * removed) whether `fn` passed or failed.
 */
export async function withPrivateEngine(options: PrivateEngineOptions, fn: (engine: PrivateEngine) => Promise<void>): Promise<void> {
  const id = `${process.pid}-${counter++}`;
  const home = await mkdtemp(join(tmpdir(), "agentcell-private-engine-"));
  const runDir = `/run/agentcell-private-${id}`;
  const env: Record<string, string> = {
    AGENTCELL_ENGINE_HOME: home,
    AGENTCELL_ENGINE_RUN: runDir,
    AGENTCELL_ENGINE_INSTALL: INSTALL,
    AGENTCELL_ENGINE_BESIDE: "1",
    ...(options.forwardingOff ? { AGENTCELL_ENGINE_NETNS: `agentcell-${id}` } : {}),
    ...(options.liveRestore ? { AGENTCELL_ENGINE_LIVE_RESTORE: "1" } : {}),
  };
  // Never the lane's engine: the script uses AGENTCELL_TEST_ENGINE as is when it is set.
  const script = (command: string) => run("env", ["-u", "AGENTCELL_TEST_ENGINE", "bash", "scripts/test-engine.sh", command], env);
  try {
    const endpoint = (await script("start")).split("\n").at(-1)!;
    const busyboxImage = await run("bash", ["scripts/guest-images.sh", "busybox"], { AGENTCELL_TEST_ENGINE: endpoint, AGENTCELL_ENGINE_HOME: INSTALL });
    const pid = async () => Number((await readFile(join(runDir, "dockerd.pid"), "utf8")).trim());
    await fn({
      endpoint,
      engine: new DockerEngine(endpoint),
      busyboxImage,
      async kill(signal) {
        const target = await pid();
        process.kill(target, signal);
        // Gone, or a zombie nobody has reaped yet (its sockets and locks are released).
        const alive = async () => {
          const stat = await readFile(`/proc/${target}/stat`, "utf8").catch(() => "");
          return stat !== "" && !/^\d+ \(.*\) Z/su.test(stat);
        };
        while (await alive()) await new Promise((resolve) => setTimeout(resolve, 50));
      },
      async start() {
        await script("start");
      },
    });
  } finally {
    await script("stop").catch(() => {});
    // dockerd leaves its data root bind-mounted on itself (and network namespaces under its
    // exec root): unmounted first, or the directories could not be removed.
    const mounts = (await readFile("/proc/mounts", "utf8").catch(() => "")).split("\n").map((line) => line.split(" ")[1] ?? "");
    for (const mount of mounts.filter((path) => path.startsWith(`${home}/`) || path.startsWith(`${runDir}/`)).reverse()) {
      await run("umount", ["-l", mount], {}).catch(() => {});
    }
    await rm(home, { recursive: true, force: true }).catch(() => {});
    await rm(runDir, { recursive: true, force: true }).catch(() => {});
  }
}
