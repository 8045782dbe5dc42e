/**
 * A sandbox's {@linkcode SandboxStats} from the keeper's one-shot Engine stats.
 *
 * @module
 */
import type { SandboxStats } from "../sandbox/stats.ts";
import type { ContainerStats } from "../engine/container_stats.ts";

/**
 * Turn a one-shot stats reply into a {@linkcode SandboxStats} (cgroup v1 and v2 fields).
 *
 * CPU: (Δ container CPU time / Δ host CPU time) × online CPUs is the CPUs used, as `docker
 * stats` computes it; divided by `cpus`. Working set: usage minus `total_inactive_file`
 * (cgroup v1) or `inactive_file` (v2), as `docker stats` shows it.
 *
 * @param stats The validated reply.
 * @param cpus The policy's `resources.cpus`.
 * @returns The frozen sample.
 */
export function sandboxStatsOf(stats: ContainerStats, cpus: number): SandboxStats {
  const now = stats.cpu_stats;
  const before = stats.precpu_stats;
  const cpuDelta = now.cpu_usage.total_usage - (before.cpu_usage?.total_usage ?? now.cpu_usage.total_usage);
  const systemDelta = (now.system_cpu_usage ?? 0) - (before.system_cpu_usage ?? now.system_cpu_usage ?? 0);
  const online = now.online_cpus ?? 1;
  const used = cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * online : 0;
  const memory = stats.memory_stats;
  const usage = memory.usage ?? 0;
  const inactive = memory.stats?.total_inactive_file ?? memory.stats?.inactive_file ?? 0;
  let rx = 0;
  let tx = 0;
  for (const network of Object.values(stats.networks ?? {})) {
    rx += network.rx_bytes;
    tx += network.tx_bytes;
  }
  let read = 0;
  let write = 0;
  for (const entry of stats.blkio_stats?.io_service_bytes_recursive ?? []) {
    const op = entry.op.toLowerCase();
    if (op === "read") read += entry.value;
    else if (op === "write") write += entry.value;
  }
  return Object.freeze({
    readAt: stats.read,
    cpu: Object.freeze({ fraction: used / cpus, cpus, totalNs: now.cpu_usage.total_usage }),
    memory: Object.freeze({ usageBytes: usage, limitBytes: memory.limit ?? 0, workingSetBytes: inactive < usage ? usage - inactive : usage }),
    pids: Object.freeze({ current: stats.pids_stats?.current ?? 0, limit: stats.pids_stats?.limit }),
    network: Object.freeze({ rxBytes: rx, txBytes: tx }),
    blockIo: Object.freeze({ readBytes: read, writeBytes: write }),
  });
}
