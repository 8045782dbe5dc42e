// The export accessor's create body: the keeper's hardening, read-only volume, no dataset, no network.
import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizePolicy } from "../../../lib/sandbox/policy.ts";
import { accessorCreateBody } from "../../../lib/docker/files/accessor.ts";
import { keeperMounts } from "../../../lib/docker/keeper/mounts.ts";
import { keeperCreateBody, type WorkloadSpec } from "../../../lib/docker/keeper/spec.ts";

const spec: WorkloadSpec = {
  imageDigest: `sha256:${"a".repeat(64)}`,
  user: { uid: 1000, gid: 1000 },
  keeperUser: { uid: 999, gid: 999 },
  policy: normalizePolicy({ resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 }, network: "outbound" }),
  mounts: keeperMounts("agentcell-test-x-volume", [{ name: "corpus", imageDigest: `sha256:${"d".repeat(64)}`, subpath: "docs" }]),
  networkName: "agentcell-test-x-network",
  labels: { "dev.agentcell.role": "keeper" },
  appArmorProfile: "",
  runtime: "runc",
};

test("accessorCreateBody keeps the keeper's hardening, mounts only the volume read-only (no dataset) and uses no network", () => {
  const labels = { "dev.agentcell.role": "accessor" };
  const body = accessorCreateBody(spec, labels) as { Labels: unknown; User: string; HostConfig: Record<string, unknown> };
  const keeper = keeperCreateBody(spec) as { HostConfig: Record<string, unknown> };
  assert.deepEqual(body.Labels, labels);
  assert.equal(body.User, "999:999", "the keeper's own identity, not the agent's");
  assert.equal(body.HostConfig.NetworkMode, "none");
  assert.deepEqual(body.HostConfig.Mounts, [
    { Type: "volume", Source: "agentcell-test-x-volume", Target: "/workspace", ReadOnly: true, VolumeOptions: { NoCopy: true } },
  ]);
  assert.deepEqual(keeper.HostConfig.Mounts, [
    { Type: "volume", Source: "agentcell-test-x-volume", Target: "/workspace", ReadOnly: false, VolumeOptions: { NoCopy: true } },
    { Type: "image", Source: `sha256:${"d".repeat(64)}`, Target: "/datasets/corpus", ReadOnly: true, ImageOptions: { Subpath: "docs" } },
  ]);
  for (const key of ["ReadonlyRootfs", "CapDrop", "CapAdd", "SecurityOpt", "IpcMode", "CgroupnsMode", "Privileged", "Memory", "MemorySwap", "NanoCpus", "PidsLimit", "Devices", "Binds", "PortBindings"]) {
    assert.deepEqual(body.HostConfig[key], keeper.HostConfig[key], key);
  }
});
