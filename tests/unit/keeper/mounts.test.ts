// The one mount readback routine of workload containers, on readbacks recorded from Engine
// 28.5.2 (tests/fixtures/engine/keeper-datasets.inspect.json, accessor.inspect.json): what
// the Engine reports passes; an extra, missing or altered mount in either list is named;
// so is an altered ulimit, ShmSize, tmpfs inode bound or socket buffer sysctl.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { type ContainerInspect, containerInspectSchema } from "../../../lib/engine/containers.ts";
import { accessorSpec } from "../../../lib/docker/files/accessor.ts";
import { accessorMounts, keeperMounts, mountMismatches } from "../../../lib/docker/keeper/mounts.ts";
import { keeperCreateBody, verifyWorkload, type WorkloadSpec } from "../../../lib/docker/keeper/spec.ts";
import { normalizePolicy, type SandboxPolicyInput } from "../../../lib/sandbox/policy.ts";
import { SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const fixtures = new URL("../../fixtures/engine/", import.meta.url);

async function recorded(name: string): Promise<ContainerInspect> {
  return containerInspectSchema.parse(JSON.parse(await readFile(new URL(name, fixtures), "utf8")));
}

const volume = "agentcell-rec10-77c600663a104c0c464af3d47e66ed40-volume";
const foreign = "sha256:9e0bfe183be98871e73f873234b6dd0b59195dc50b895f55eb05e05269d51af2";
const reference = "sha256:6f02f2fa0adefc4d433cb2c7d1e60404b0edd5697f40faae31f716c94ac28653";
const datasets = [{ name: "foreign", imageDigest: foreign }, { name: "reference", imageDigest: reference, subpath: "corpus" }];
const keeper = keeperMounts(volume, datasets);

/** The recorded keeper with `change` applied to a deep copy. */
async function altered(change: (inspect: { HostConfig: { Mounts: Record<string, unknown>[] }; Mounts: Record<string, unknown>[] }) => void) {
  const inspect = structuredClone(await recorded("keeper-datasets.inspect.json"));
  change(inspect as never);
  return inspect;
}

test("mountMismatches accepts the recorded keeper with two datasets and the recorded accessor", async () => {
  assert.deepEqual(mountMismatches(await recorded("keeper-datasets.inspect.json"), keeper), []);
  assert.deepEqual(mountMismatches(await recorded("accessor.inspect.json"), accessorMounts(keeper)), []);
});

test("accessorMounts keeps only the workspace volume, read-only, and never a dataset", () => {
  assert.deepEqual(accessorMounts(keeper), [
    { Type: "volume", Source: volume, Target: "/workspace", ReadOnly: true, VolumeOptions: { NoCopy: true } },
  ]);
});

test("mountMismatches names a dataset mount in a container that must have none (the accessor's spec)", async () => {
  assert.deepEqual(mountMismatches(await recorded("keeper-datasets.inspect.json"), accessorMounts(keeper)), [
    'an unexpected mount is requested at "/datasets/foreign" ("image")',
    'an unexpected mount is requested at "/datasets/reference" ("image")',
    'an unexpected mount is effective at "/datasets/foreign" ("image")',
    'an unexpected mount is effective at "/datasets/reference" ("image")',
    `the mount at /workspace is requested as {"Type":"volume","Source":"${volume}","Target":"/workspace","VolumeOptions":{"NoCopy":true}}`,
    `the effective mount at /workspace is {"Type":"volume","Name":"${volume}","RW":true,"Driver":"local","Propagation":""}`,
  ]);
});

test("mountMismatches names a missing dataset mount and an extra one", async () => {
  const missing = await altered((inspect) => {
    inspect.HostConfig.Mounts = inspect.HostConfig.Mounts.filter((mount) => mount.Target !== "/datasets/reference");
    inspect.Mounts = inspect.Mounts.filter((mount) => mount.Destination !== "/datasets/reference");
  });
  assert.deepEqual(mountMismatches(missing, keeper), ["the mount at /datasets/reference is missing", "no mount is effective at /datasets/reference"]);
  const extra = await altered((inspect) => {
    inspect.HostConfig.Mounts.push({ Type: "bind", Source: "/etc", Target: "/host-etc", ReadOnly: true });
    inspect.Mounts.push({ Type: "bind", Source: "/etc", Destination: "/host-etc", RW: false, Propagation: "rprivate" });
  });
  assert.deepEqual(mountMismatches(extra, keeper), [
    'an unexpected mount is requested at "/host-etc" ("bind")',
    'an unexpected mount is effective at "/host-etc" ("bind")',
  ]);
});

test("mountMismatches names a dataset that is writable, has another subpath or source, or carries other options", async () => {
  const at = "/datasets/reference";
  const requested = (patch: Record<string, unknown>) =>
    altered((inspect) => Object.assign(inspect.HostConfig.Mounts.find((mount) => mount.Target === at)!, patch));
  for (const patch of [{ ReadOnly: false }, { ImageOptions: { Subpath: "corpus/docs" } }, { ImageOptions: undefined }, { Source: foreign }, { BindOptions: { Propagation: "shared" } }]) {
    const problems = mountMismatches(await requested(patch), keeper);
    assert.equal(problems.length, 1, JSON.stringify(patch));
    assert.match(problems[0], /^the mount at \/datasets\/reference is requested as \{"Type":"image",/u);
  }
  const effective = (patch: Record<string, unknown>) =>
    altered((inspect) => Object.assign(inspect.Mounts.find((mount) => mount.Destination === at)!, patch));
  for (const patch of [{ RW: true }, { Name: foreign }, { Driver: "local" }, { Propagation: "rshared" }, { Source: "relative/merged" }, { Type: "volume" }]) {
    const problems = mountMismatches(await effective(patch), keeper);
    assert.equal(problems.length, 1, JSON.stringify(patch));
    assert.match(problems[0], /^the effective mount at \/datasets\/reference is \{"Type":/u);
  }
});

test("mountMismatches names a workspace that is read-only in the keeper or is another volume", async () => {
  const readOnly = await altered((inspect) => {
    inspect.HostConfig.Mounts[0].ReadOnly = true;
    inspect.Mounts[0].RW = false;
  });
  const problems = mountMismatches(readOnly, keeper);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /^the mount at \/workspace is requested as .*"ReadOnly":true/u);
  assert.match(problems[1], /^the effective mount at \/workspace is .*"RW":false/u);
  assert.equal(mountMismatches(await recorded("keeper-datasets.inspect.json"), keeperMounts("someone-else", datasets)).length, 2);
});

/**
 * The recordings predate the tmpfs inode bounds, the `/dev/shm` tmpfs, `ShmSize`, `Ulimits`
 * and the socket buffer `Sysctls`: give them those fields as the Engine reads them back (measured on 28.5: exactly
 * as sent; every real-engine sandbox test checks that readback), so this test stays on mounts.
 */
function withLaterFields(inspect: ContainerInspect, spec: WorkloadSpec): ContainerInspect {
  const sent = keeperCreateBody(spec).HostConfig as {
    Tmpfs: Record<string, string>;
    ShmSize: number;
    Ulimits: ContainerInspect["HostConfig"]["Ulimits"];
    Sysctls: Record<string, string>;
  };
  return { ...inspect, HostConfig: { ...inspect.HostConfig, Tmpfs: sent.Tmpfs, ShmSize: sent.ShmSize, Ulimits: sent.Ulimits, Sysctls: sent.Sysctls } };
}

/** The spec the recorded keeper was started with, under `policy`. */
function recordedSpec(original: ContainerInspect, policy: SandboxPolicyInput): WorkloadSpec {
  return {
    imageDigest: original.Image,
    user: { uid: 65534, gid: 65534 },
    keeperUser: { uid: 65534, gid: 65534 }, // the recorded readback predates the keeper's own identity
    policy: normalizePolicy(policy),
    mounts: keeper,
    networkName: undefined,
    labels: original.Config.Labels ?? {},
    appArmorProfile: "",
    runtime: "runc",
  };
}

test("verifyWorkload and the accessor's readback fail with the mount mismatch named", async () => {
  const original = await recorded("keeper-datasets.inspect.json");
  const spec = recordedSpec(original, { resources: { cpus: 1, memoryBytes: 64 << 20, pids: 32 } });
  const inspect = withLaterFields(original, spec);
  verifyWorkload(inspect, spec, true);
  assert.throws(() => verifyWorkload(inspect, { ...spec, mounts: keeperMounts(volume, datasets.slice(1)) }, true), (error) =>
    error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
    error.message ===
      'Cannot start sandbox: the keeper container reads back differently: an unexpected mount is requested at "/datasets/foreign" ("image"); an unexpected mount is effective at "/datasets/foreign" ("image")');
  const accessor = withLaterFields(await recorded("accessor.inspect.json"), spec);
  verifyWorkload(accessor, accessorSpec(spec, accessor.Config.Labels ?? {}), false);
});

test("verifyWorkload names a ulimit, ShmSize, tmpfs inode bound or socket buffer sysctl that reads back differently", async () => {
  const original = await recorded("keeper-datasets.inspect.json");
  const spec = recordedSpec(original, { resources: { cpus: 1, memoryBytes: 64 << 20, pids: 32 }, ulimits: { nofile: 512 } });
  const good = withLaterFields(original, spec);
  verifyWorkload(good, spec, true);
  /** The one mismatch `verifyWorkload` names for `host` (asserting its class and code). */
  const mismatch = (host: Partial<ContainerInspect["HostConfig"]>): string => {
    let message = "";
    assert.throws(() => verifyWorkload({ ...good, HostConfig: { ...good.HostConfig, ...host } }, spec, true), (error) => {
      assert.ok(error instanceof SandboxUnsupportedError && error.code === "unsupported");
      message = error.message.replace("Cannot start sandbox: the keeper container reads back differently: ", "");
      return true;
    });
    return message;
  };
  const softer = good.HostConfig.Ulimits!.map((limit) => limit.Name === "nofile" ? { ...limit, Soft: 256 } : limit);
  assert.equal(mismatch({ Ulimits: softer }), `ulimits are ${JSON.stringify(softer)}`);
  assert.equal(mismatch({ Ulimits: null }), "ulimits are null");
  const withoutCore = good.HostConfig.Ulimits!.filter((limit) => limit.Name !== "core");
  assert.equal(mismatch({ Ulimits: withoutCore }), `ulimits are ${JSON.stringify(withoutCore)}`);
  assert.equal(mismatch({ ShmSize: 67_108_864 }), "HostConfig.ShmSize is 67108864");
  const unbounded = { ...good.HostConfig.Tmpfs, "/tmp": good.HostConfig.Tmpfs!["/tmp"].replace(/,nr_inodes=\d+/u, "") };
  assert.equal(mismatch({ Tmpfs: unbounded }), `tmpfs mounts are ${JSON.stringify(unbounded)}`);
  const noShm = { "/home/sandbox": good.HostConfig.Tmpfs!["/home/sandbox"], "/tmp": good.HostConfig.Tmpfs!["/tmp"] };
  assert.equal(mismatch({ Tmpfs: noShm }), `tmpfs mounts are ${JSON.stringify(noShm)}`);
  const hostWide = { ...good.HostConfig.Sysctls, "net.ipv4.tcp_rmem": "4096 131072 33554432" };
  assert.equal(mismatch({ Sysctls: hostWide }), `HostConfig.Sysctls is ${JSON.stringify(hostWide)}`);
  assert.equal(mismatch({ Sysctls: null }), "HostConfig.Sysctls is {}");
});
