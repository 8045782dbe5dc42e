// The snapshot copier's create body and readback, without an engine: it runs as root with
// exactly four capabilities, no network, read-only root and the source volume read-only;
// an inspect built from the body passes, and each field changed after the fact is named.
import assert from "node:assert/strict";
import { test } from "node:test";
import { COPIER_CAPABILITIES, COPIER_PAST_BOUND, COPIER_UNMEASURED, copierCreateBody, copierMismatches, copyScript } from "../../../lib/docker/snapshots/copier.ts";
import { SandboxQuotaError } from "../../../lib/sandbox/errors.ts";
import type { ContainerInspect } from "../../../lib/engine/containers.ts";

const image = `sha256:${"c".repeat(64)}`;
const body = copierCreateBody({ imageDigest: image, runtime: "runc" }, { source: "src-volume", target: "dst-volume" }, "cp -a /copier/source/. /copier/target/", { a: "b" });
const host = body.HostConfig as Record<string, unknown>;

function inspectOf(change: (inspect: { Config: Record<string, unknown>; HostConfig: Record<string, unknown>; Mounts: Record<string, unknown>[] }) => void = () => {}): ContainerInspect {
  const inspect = {
    Id: "e".repeat(64),
    Name: "/copier",
    Image: image,
    State: { Status: "created", Running: false, Pid: 0, ExitCode: 0 },
    Config: { User: body.User, Env: null, Entrypoint: body.Entrypoint, Cmd: body.Cmd, WorkingDir: "/", Image: image, Labels: { a: "b" }, Tty: false, OpenStdin: false },
    HostConfig: { ...host, Binds: null, Devices: null, PortBindings: null },
    Mounts: [
      { Type: "volume", Name: "src-volume", Source: "/var/lib/docker/volumes/src-volume/_data", Destination: "/copier/source", RW: false },
      { Type: "volume", Name: "dst-volume", Source: "/var/lib/docker/volumes/dst-volume/_data", Destination: "/copier/target", RW: true },
    ],
  };
  change(inspect);
  return inspect as unknown as ContainerInspect;
}

test("copierCreateBody runs the copy as root with four capabilities, network none, read-only root, the source read-only", () => {
  assert.equal(body.User, "0:0");
  assert.deepEqual(host.CapDrop, ["ALL"]);
  assert.deepEqual(host.CapAdd, [...COPIER_CAPABILITIES]);
  assert.deepEqual(COPIER_CAPABILITIES, ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID"]);
  assert.equal(host.NetworkMode, "none");
  assert.equal(host.ReadonlyRootfs, true);
  assert.deepEqual(host.SecurityOpt, ["no-new-privileges"]);
  assert.deepEqual(host.Binds, []);
  assert.deepEqual((host.Mounts as { Source: string; ReadOnly: boolean }[]).map((m) => [m.Source, m.ReadOnly]), [["src-volume", true], ["dst-volume", false]]);
});

test("copierMismatches passes the body's own readback and names each field changed after the fact", () => {
  assert.deepEqual(copierMismatches(inspectOf(), body), []);
  assert.deepEqual(copierMismatches(inspectOf((i) => void (i.HostConfig.CapAdd = ["CAP_SYS_ADMIN"])), body), ['HostConfig.CapAdd is ["CAP_SYS_ADMIN"]']);
  assert.deepEqual(copierMismatches(inspectOf((i) => void (i.Config.User = "65534:65534")), body), ["user is '65534:65534'"]);
  assert.deepEqual(copierMismatches(inspectOf((i) => void (i.HostConfig.NetworkMode = "bridge")), body), ['HostConfig.NetworkMode is "bridge"']);
  assert.match(copierMismatches(inspectOf((i) => void (i.Mounts[0].RW = true)), body).join(), /^mounts are /u);
  assert.match(copierMismatches(inspectOf((i) => void i.Mounts.push({ Type: "bind", Source: "/etc", Destination: "/etc", RW: false })), body).join(), /^mounts are /u);
});

test("copyScript measures the tree before a bounded copy, and only then", () => {
  const request = { from: { volume: "s", path: "work" }, to: { volume: "d", path: "" } };
  assert.equal(copyScript(request), "cp -a /copier/source/work/. /copier/target/");
  assert.equal(
    copyScript({ ...request, owner: { uid: 7, gid: 8 }, bound: { bytes: 1024, refusal: () => new SandboxQuotaError("x") } }),
    "{ find /copier/source/work/. -type f -exec stat -c %s {} + || echo unmeasured; } | " +
      `awk -v max=1024 '/^[0-9]+$/ { total += $1; next } { bad = 1 } END { if (bad) exit ${COPIER_UNMEASURED}; if (total > max + 0) exit ${COPIER_PAST_BOUND}; exit 0 }'` +
      " && cp -a /copier/source/work/. /copier/target/ && chown -R -h 7:8 /copier/target",
  );
  assert.deepEqual([COPIER_PAST_BOUND, COPIER_UNMEASURED], [3, 4], "neither is an exit status of busybox cp or chown (1)");
});
