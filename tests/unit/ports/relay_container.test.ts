// The port relay container's create body and readback, without an engine: an inspect built
// from the create body passes, each hardening field changed after the fact is named, and the
// body joins the keeper's namespace with no network, port, mount or sysctl of its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { relayCreateBody, relayMismatches, type RelaySpec, verifyRelay } from "../../../lib/docker/ports/relay_container.ts";
import { RELAY_ARGUMENT } from "../../../lib/docker/ports/relay_program.ts";
import type { ContainerInspect } from "../../../lib/engine/containers.ts";
import { SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const image = `sha256:${"d".repeat(64)}`;
const keeperId = "k".repeat(64).replace(/k/gu, "a");
const spec: RelaySpec = { imageDigest: image, user: { uid: 65533, gid: 65533 }, program: "console.log('relay')", keeperId, labels: { a: "b" } };

interface Inspect {
  HostConfig: Record<string, unknown>;
  Config: Record<string, unknown>;
  State: Record<string, unknown>;
  NetworkSettings: { Networks: Record<string, unknown> };
}

function inspectOf(change: (inspect: Inspect) => void = () => {}): ContainerInspect {
  const body = relayCreateBody(spec) as { Env: string[]; HostConfig: Record<string, unknown> };
  const inspect: Inspect & Record<string, unknown> = {
    Id: "e".repeat(64),
    Name: "/relay",
    Image: image,
    State: { Status: "running", Running: true, Pid: 1, ExitCode: 0 },
    Config: { ...body, Env: ["HOSTNAME=x", ...body.Env], Image: image, WorkingDir: "/", ExposedPorts: null },
    HostConfig: { ...body.HostConfig, CapAdd: null, Tmpfs: null, Mounts: null, Binds: null, Devices: null, Sysctls: null },
    Mounts: [],
    NetworkSettings: { Networks: {} },
  };
  change(inspect);
  return inspect as unknown as ContainerInspect;
}

test("relayCreateBody joins the keeper's namespace as the keeper's user, hardened, with stdin open and nothing published", () => {
  // deno-lint-ignore no-explicit-any
  const body = relayCreateBody(spec) as Record<string, any>;
  assert.equal(body.HostConfig.NetworkMode, `container:${keeperId}`);
  assert.equal(body.User, "65533:65533");
  assert.deepEqual(body.Entrypoint, ["node"]);
  assert.deepEqual(body.Cmd, ["--input-type=module-typescript", "-e", spec.program, RELAY_ARGUMENT]);
  assert.equal(body.OpenStdin, true);
  assert.equal(body.StdinOnce, true);
  assert.equal(body.HostConfig.ReadonlyRootfs, true);
  assert.deepEqual(body.HostConfig.CapDrop, ["ALL"]);
  assert.deepEqual(body.HostConfig.SecurityOpt, ["no-new-privileges"]);
  assert.deepEqual(body.HostConfig.PortBindings, {});
  assert.deepEqual(body.ExposedPorts, {});
  assert.equal(body.HostConfig.PublishAllPorts, false);
  assert.equal(body.HostConfig.Runtime, "runc");
  assert.deepEqual(body.HostConfig.Sysctls, {});
  assert.equal(body.NetworkingConfig, undefined);
});

test("relayMismatches accepts the readback of its own create body and names every changed field", () => {
  assert.deepEqual(relayMismatches(inspectOf(), spec, true), []);
  const cases: [(inspect: Inspect) => void, string][] = [
    [(i) => (i.HostConfig.ReadonlyRootfs = false), "HostConfig.ReadonlyRootfs is false"],
    [(i) => (i.HostConfig.CapAdd = ["NET_ADMIN"]), 'HostConfig.CapAdd is ["NET_ADMIN"]'],
    [(i) => (i.HostConfig.NetworkMode = "host"), 'HostConfig.NetworkMode is "host"'],
    [(i) => (i.HostConfig.PortBindings = { "80/tcp": [{ HostPort: "80" }] }), "HostConfig.PortBindings is"],
    [(i) => (i.HostConfig.Runtime = "runsc"), 'HostConfig.Runtime is "runsc"'],
    [(i) => (i.Config.User = "0:0"), "user is '0:0'"],
    [(i) => (i.Config.Cmd = ["-e", "evil"]), "entrypoint/command is not the relay program"],
    [(i) => (i.Config.OpenStdin = false), "stdin is not as created"],
    [(i) => (i.Config.ExposedPorts = { "80/tcp": {} }), "ports are exposed"],
    [(i) => (i.NetworkSettings.Networks = { bridge: { IPAddress: "172.17.0.2", NetworkID: "1" } }), 'networks are ["bridge"]'],
    [(i) => (i.State.Running = false, i.State.Status = "exited"), "state is exited"],
  ];
  for (const [change, expected] of cases) {
    const problems = relayMismatches(inspectOf(change), spec, true);
    assert.ok(problems.some((problem) => problem.includes(expected)), `${expected}: ${JSON.stringify(problems)}`);
  }
  assert.throws(() => verifyRelay(inspectOf((i) => (i.HostConfig.Privileged = true)), spec, true), (error: unknown) => {
    assert.ok(error instanceof SandboxUnsupportedError);
    assert.match(error.message, /^Cannot connect: the port relay container reads back differently: HostConfig\.Privileged is true$/);
    return true;
  });
});
