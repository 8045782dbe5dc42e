// What a process costs the host, read from Linux's /proc (and `ss` for the peers of Unix
// sockets): resident memory, CPU time, open file descriptors, the controller's connections
// to the Engine socket, and the Engine's own processes (dockerd, its containerd, the
// containerd shims of its containers). Hand-written: `pidusage` (the usual npm package) reads
// only CPU and memory, not descriptors or socket peers, and the few fields here are plain
// text; node:fs and node:child_process run the same on Node, Deno and Bun.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import process from "node:process";

/** Clock ticks per second of /proc/<pid>/stat's times (`getconf CLK_TCK`: 100 on Linux x86-64). */
const CLOCK_TICKS = 100;

/** A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`, …); `NaN` when unreadable. */
export function statusKiB(field: string, pid: number | "self" = "self"): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time of a process from `/proc/<pid>/stat`, milliseconds: its own (user + system, all
 * threads) and that of its children it has waited for (`cutime + cstime`: the docker CLI
 * children of this process once they exited); `NaN` when unreadable.
 */
export function cpuMs(pid: number | "self" = "self"): { own: number; children: number } {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (the command) is parenthesised and may hold spaces: fields 3… follow the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number);
    // Fields 14–17 (utime, stime, cutime, cstime) are at 11–14 counted from field 3.
    return { own: (fields[11] + fields[12]) * 1000 / CLOCK_TICKS, children: (fields[13] + fields[14]) * 1000 / CLOCK_TICKS };
  } catch {
    return { own: Number.NaN, children: Number.NaN };
  }
}

/** Socket inodes of this process's open descriptors, and their count with every other kind. */
function ownDescriptors(): { fds: number; sockets: Set<string> } {
  const sockets = new Set<string>();
  let fds = 0;
  for (const name of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${name}`);
    } catch {
      continue; // closed between the listing and the read (the listing's own descriptor)
    }
    fds++;
    const socket = /^socket:\[(\d+)\]$/u.exec(target);
    if (socket) sockets.add(socket[1]);
  }
  return { fds, sockets };
}

/** Open file descriptors of this process. */
export function openDescriptors(): number {
  return ownDescriptors().fds;
}

/**
 * Connections of this process to the Engine socket at `socketPath`: the Engine's ends of
 * its accepted connections carry the socket's path in `ss -x` and name the client's inode as
 * their peer; those peers that are descriptors of this process are counted.
 */
export function engineConnections(socketPath: string): number {
  const listed = spawnSync("ss", ["-x", "-n", "-H"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (listed.status !== 0) return Number.NaN;
  const peers = new Set<string>();
  for (const line of listed.stdout.split("\n")) {
    // Netid State Recv-Q Send-Q Local-Address Local-Port Peer-Address Peer-Port
    const fields = line.trim().split(/\s+/u);
    if (fields.length >= 8 && fields[4] === socketPath) peers.add(fields[7]);
  }
  let count = 0;
  for (const inode of ownDescriptors().sockets) if (peers.has(inode)) count++;
  return count;
}

/** A snapshot of the Engine's processes: dockerd, its containerd, and the shims of its containers. */
export interface EngineProcesses {
  /** dockerd's pid, or `undefined` when its pid file is unreadable. */
  readonly dockerdPid: number | undefined;
  /** Resident memory of dockerd and its containerd, KiB. */
  readonly daemonsKiB: number;
  /** CPU time of dockerd and its containerd (own + reaped children), milliseconds. */
  readonly daemonsCpuMs: number;
  /** Running containerd shims of this Engine (one per running container with runc). */
  readonly shims: number;
  /** Their resident memory, KiB. */
  readonly shimsKiB: number;
}

/** Children of `pid`: each thread lists the children it forked (`/proc/<pid>/task/<tid>/children`). */
function children(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8");
      found.push(...text.trim().split(/\s+/u).filter(Boolean).map(Number));
    }
  } catch {
    // gone, or not ours to read: no children counted
  }
  return found;
}

/**
 * The Engine serving `socketPath`: dockerd from the pid file beside its socket (as
 * `scripts/test-engine.sh` writes it), its containerd (a child of dockerd), and the shims
 * whose command line names that containerd's socket (a shim's parent is init, not containerd).
 */
export function engineProcesses(socketPath: string): EngineProcesses {
  let dockerdPid: number | undefined;
  try {
    dockerdPid = Number(readFileSync(`${dirname(socketPath)}/dockerd.pid`, "utf8").trim());
  } catch {
    dockerdPid = undefined;
  }
  if (dockerdPid === undefined || !Number.isSafeInteger(dockerdPid)) {
    return { dockerdPid: undefined, daemonsKiB: Number.NaN, daemonsCpuMs: Number.NaN, shims: Number.NaN, shimsKiB: Number.NaN };
  }
  // dockerd and its containerd only: a passing child (another one that exits) would take its
  // CPU time out of the sum when it goes.
  const daemons = [dockerdPid];
  let containerdSocket: string | undefined;
  for (const pid of children(dockerdPid)) {
    const config = /^containerd\0--config\0([^\0]+)containerd\.toml/u.exec(readCommandLine(pid));
    if (!config) continue;
    daemons.push(pid);
    containerdSocket = `${config[1]}containerd.sock`;
  }
  let daemonsKiB = 0;
  let daemonsCpuMs = 0;
  for (const pid of daemons) {
    daemonsKiB += statusKiB("VmRSS", pid);
    const cpu = cpuMs(pid);
    daemonsCpuMs += cpu.own + cpu.children;
  }
  let shims = 0;
  let shimsKiB = 0;
  if (containerdSocket !== undefined) {
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/u.test(name)) continue;
      const line = readCommandLine(Number(name));
      if (!line.includes("containerd-shim") || !line.includes(`-address\0${containerdSocket}`)) continue;
      shims++;
      shimsKiB += statusKiB("VmRSS", Number(name));
    }
  }
  return { dockerdPid, daemonsKiB, daemonsCpuMs, shims, shimsKiB };
}

function readCommandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/**
 * Active handles and timers of the running runtime where it can tell
 * (`process.getActiveResourcesInfo()`), counted by kind; `undefined` where it cannot. Node
 * lists its handles and timers; Deno its timers and `node:` handles (not `Deno.connect`
 * sockets); Bun 1.4 has the function but returns an empty list even with a timer and a
 * server open (tried 2026-12-02), so it counts as unable to tell.
 */
export function activeResources(): Record<string, number> | undefined {
  const info = (process as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo;
  if (typeof info !== "function" || (globalThis as { Bun?: unknown }).Bun !== undefined) return undefined;
  const counts: Record<string, number> = {};
  for (const kind of info.call(process)) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/**
 * A full garbage collection where the runtime offers one on demand (`Bun.gc(true)`; Node's
 * and Deno's `gc()` with `--expose-gc` / `--v8-flags=--expose-gc`), so resident memory and
 * heap show what is still reachable; returns whether one ran.
 */
export function collectGarbage(): boolean {
  const global = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (global.Bun) global.Bun.gc(true);
  else if (typeof global.gc === "function") global.gc();
  else return false;
  return true;
}
