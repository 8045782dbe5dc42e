// The egress proxy container's readback and the allowlist's admission, without an engine:
// an inspect built from the create body passes, and each hardening field changed after the
// fact is named; an Engine below API 1.48 and a missing or foreign proxy image are refused.
import assert from "node:assert/strict";
import { test } from "node:test";
import { admitEgress } from "../../../lib/docker/egress/admission.ts";
import { proxyCreateBody, proxyMismatches, type ProxySpec, verifyProxy } from "../../../lib/docker/egress/proxy_container.ts";
import { DOCKER_SANDBOX_PROFILES } from "../../../lib/docker/profiles.ts";
import type { ContainerInspect } from "../../../lib/engine/containers.ts";
import type { ImageInspect } from "../../../lib/engine/images.ts";
import type { EngineVersion } from "../../../lib/engine/system.ts";
import { SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const image = `sha256:${"d".repeat(64)}`;
const spec: ProxySpec = {
  imageDigest: image,
  user: { uid: 65533, gid: 65533 },
  program: "console.log('proxy')",
  config: { port: 3128, hosts: ["a.test"], addresses: [], hostAddresses: [], resolve: {}, maxConnections: 8, headersTimeoutMs: 1000, idleTimeoutMs: 1000, maxBytesPerConnection: 0, routes: [], upstreamCaCertificates: [] },
  internalNetwork: "n-internal",
  egressNetwork: "n-egress",
  labels: { a: "b" },
};

/** The parts of an inspect the cases change. */
interface Inspect {
  HostConfig: Record<string, unknown>;
  Config: Record<string, unknown>;
  State: Record<string, unknown>;
  NetworkSettings: { Networks: Record<string, unknown> };
}

/** An inspect as the Engine answers for the body (absent lists read back as null). */
function inspectOf(change: (inspect: Inspect) => void = () => {}): ContainerInspect {
  const body = proxyCreateBody(spec) as { Env: string[]; HostConfig: Record<string, unknown> };
  const inspect: Inspect & Record<string, unknown> = {
    Id: "e".repeat(64),
    Name: "/proxy",
    Image: image,
    State: { Status: "running", Running: true, Pid: 1, ExitCode: 0 },
    Config: { ...body, Env: ["HOSTNAME=x", ...body.Env], Image: image, WorkingDir: "/", ExposedPorts: null },
    HostConfig: { ...body.HostConfig, CapAdd: null, Tmpfs: null, Mounts: null, Binds: null, Devices: null },
    Mounts: [],
    NetworkSettings: { Networks: { "n-internal": { IPAddress: "172.18.0.2", NetworkID: "1" }, "n-egress": { IPAddress: "172.19.0.2", NetworkID: "2" } } },
  };
  change(inspect);
  return inspect as unknown as ContainerInspect;
}

test("proxyMismatches accepts the readback of its own create body and names every changed field", () => {
  assert.deepEqual(proxyMismatches(inspectOf(), spec, true), []);
  assert.deepEqual((proxyCreateBody(spec).HostConfig as { Ulimits: unknown }).Ulimits, [{ Name: "core", Soft: 0, Hard: 0 }, { Name: "nofile", Soft: 4096, Hard: 4096 }]);
  assert.equal((proxyCreateBody(spec).HostConfig as { Runtime: unknown }).Runtime, "runc");
  assert.deepEqual((proxyCreateBody(spec).HostConfig as { Sysctls: unknown }).Sysctls, { "net.ipv4.tcp_rmem": "4096 131072 1048576", "net.ipv4.tcp_wmem": "4096 16384 1048576" });
  const cases: [(inspect: Inspect) => void, string][] = [
    [(i) => (i.HostConfig.ReadonlyRootfs = false), "HostConfig.ReadonlyRootfs is false"],
    [(i) => (i.HostConfig.CapAdd = ["NET_ADMIN"]), 'HostConfig.CapAdd is ["NET_ADMIN"]'],
    [(i) => (i.HostConfig.SecurityOpt = []), "HostConfig.SecurityOpt is []"],
    [(i) => (i.HostConfig.Memory = 0), "HostConfig.Memory is 0"],
    [(i) => (i.HostConfig.PidsLimit = null), "HostConfig.PidsLimit is null"],
    [(i) => (i.HostConfig.Binds = ["/:/host"]), 'HostConfig.Binds is ["/:/host"]'],
    [(i) => (i.HostConfig.Ulimits = null), "HostConfig.Ulimits is []"],
    [(i) => (i.HostConfig.Ulimits = [{ Name: "core", Soft: 0, Hard: 0 }, { Name: "nofile", Soft: 4096, Hard: 1048576 }]),
      'HostConfig.Ulimits is [{"Name":"core","Soft":0,"Hard":0},{"Name":"nofile","Soft":4096,"Hard":1048576}]'],
    [(i) => (i.HostConfig.Sysctls = null), "HostConfig.Sysctls is {}"],
    [(i) => (i.HostConfig.Runtime = "runsc"), 'HostConfig.Runtime is "runsc"'],
    [(i) => (i.HostConfig.Sysctls = { "net.ipv4.tcp_rmem": "4096 131072 1048576" }), 'HostConfig.Sysctls is {"net.ipv4.tcp_rmem":"4096 131072 1048576"}'],
    [(i) => (i.Config.Cmd = ["-e", "evil()"]), "entrypoint/command is not the proxy program"],
    [(i) => (i.Config.Env = ["PATH=/bin"]), "environment lacks the proxy's configuration"],
    [(i) => (i.Config.User = "0:0"), "user is '0:0'"],
    [(i) => delete i.NetworkSettings.Networks["n-egress"], 'networks are ["n-internal"]'],
    [(i) => (i.State.Running = false), "state is running"],
  ];
  for (const [change, problem] of cases) assert.deepEqual(proxyMismatches(inspectOf(change), spec, true), [problem]);
  assert.throws(() => verifyProxy(inspectOf((i) => (i.HostConfig.Privileged = true)), spec, false), (error) =>
    error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
    error.message === "Cannot start sandbox: the egress proxy container reads back differently: HostConfig.Privileged is true");
});

test("admitEgress refuses an Engine below API 1.48 and a missing, foreign or volume-declaring proxy image", () => {
  const profile = DOCKER_SANDBOX_PROFILES["linux-x64-cgroupfs"];
  const version = (api: string) => ({ ApiVersion: api, Version: "x" }) as unknown as EngineVersion;
  const good = { Id: image, Os: "linux", Architecture: profile.image.architecture, Config: { Volumes: null } } as unknown as ImageInspect;
  admitEgress(version("1.51"), image, good, profile);
  const refused = (run: () => void, message: string) =>
    assert.throws(run, (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && error.message === message);
  refused(() => admitEgress(version("1.45"), image, good, profile),
    'Cannot start sandbox: an allowlist network needs Docker Engine API 1.48 or newer (Engine 28, an internal network whose gateway has no host address), and the daemon speaks API 1.45 (Engine x): upgrade the Engine, or use "isolated" or "outbound"');
  refused(() => admitEgress(version("1.51"), image, undefined, profile),
    `Cannot start sandbox: the egress proxy image ${image} is not a local image (the backend never pulls or builds): set config.proxyImageDigest to the ID of a local image with node on its PATH`);
  refused(() => admitEgress(version("1.51"), image, { ...good, Architecture: "arm64" } as ImageInspect, profile),
    `Cannot start sandbox: the egress proxy image ${image} is linux/arm64, profile ${profile.name} needs linux/${profile.image.architecture}`);
  refused(() => admitEgress(version("1.51"), image, { ...good, Config: { Volumes: { "/data": {} } } } as unknown as ImageInspect, profile),
    `Cannot start sandbox: the egress proxy image ${image} declares volumes (/data); use an image without volumes`);
});
