import { test } from "node:test";
import assert from "node:assert/strict";
import { containerStatsSchema } from "../../../lib/engine/container_stats.ts";
import { sandboxStatsOf } from "../../../lib/docker/stats.ts";

const cpu = (total: number, system: number) => ({ cpu_usage: { total_usage: total }, system_cpu_usage: system, online_cpus: 2 });

test("sandboxStatsOf computes CPU as docker stats does, over the policy's cpus, and the cgroup v1 working set", () => {
  const stats = sandboxStatsOf(containerStatsSchema.parse({
    read: "2026-12-02T01:47:24.1855731Z",
    // 0.5 s of CPU over 2 s of host time on 2 CPUs: 0.5 CPUs used, of a 0.25-CPU policy → 2
    cpu_stats: cpu(1_500_000_000, 12_000_000_000),
    precpu_stats: cpu(1_000_000_000, 10_000_000_000),
    memory_stats: { usage: 300, limit: 1000, stats: { total_inactive_file: 100, inactive_file: 7 } },
    pids_stats: { current: 5, limit: 128 },
    networks: { eth0: { rx_bytes: 10, tx_bytes: 20 }, eth1: { rx_bytes: 1, tx_bytes: 2 } },
    blkio_stats: { io_service_bytes_recursive: [{ op: "Read", value: 4096 }, { op: "Write", value: 512 }, { op: "read", value: 4 }, { op: "Total", value: 9 }] },
  }), 0.25);
  assert.deepEqual(stats, {
    readAt: "2026-12-02T01:47:24.1855731Z",
    cpu: { fraction: 2, cpus: 0.25, totalNs: 1_500_000_000 },
    memory: { usageBytes: 300, limitBytes: 1000, workingSetBytes: 200 },
    pids: { current: 5, limit: 128 },
    network: { rxBytes: 11, txBytes: 22 },
    blockIo: { readBytes: 4100, writeBytes: 512 },
  });
  assert.ok(Object.isFrozen(stats) && Object.isFrozen(stats.cpu));
});

test("sandboxStatsOf without a previous read, networks or blkio reports zeros; cgroup v2 inactive_file counts", () => {
  const stats = sandboxStatsOf(containerStatsSchema.parse({
    read: "2026-12-02T01:47:24Z",
    cpu_stats: cpu(5, 100),
    precpu_stats: {},
    memory_stats: { usage: 50, limit: 100, stats: { inactive_file: 10 } },
    pids_stats: { current: 1 },
    blkio_stats: { io_service_bytes_recursive: null },
  }), 1);
  assert.deepEqual(stats.cpu, { fraction: 0, cpus: 1, totalNs: 5 });
  assert.equal(stats.memory.workingSetBytes, 40);
  assert.equal(stats.pids.limit, undefined);
  assert.deepEqual(stats.network, { rxBytes: 0, txBytes: 0 });
  assert.deepEqual(stats.blockIo, { readBytes: 0, writeBytes: 0 });
});
