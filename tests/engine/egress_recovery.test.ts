// The egress allowlist's resources in the recovery record and in cleanup, on a real Engine:
// the proxy container and both networks are recorded before they are created, recovered
// after the host died by SIGKILL, removed by exact ID by recovery, by stop() (the proxy) and
// destroy() (the networks), and removed again when startup fails. The guest is busybox, the
// proxy the node image. Runs on every runtime.
import assert from "node:assert/strict";
import { z } from "zod";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { busyboxImage, engineTest, eventually, nodeImage } from "./_engine.ts";
import { assertNothingLeft, onlyRecord, runChild, storedRecord, withWorld } from "./_recovery.ts";
import { assertGone, assertNamesAbsent, recordingPort, withBackend } from "./_sandbox.ts";

const policy: SandboxPolicyInput = {
  resources: { cpus: 0.5, memoryBytes: 64 * 1024 * 1024, pids: 32 },
  network: { kind: "allowlist", hosts: ["api.example.com"] },
};
const running = z.looseObject({ State: z.looseObject({ Running: z.boolean() }) });
const gone = (path: string) => (error: unknown) => error instanceof DockerEngineError && error.code === "not_found" || assert.fail(`${path} remains`);

engineTest("DockerSandboxBackend.recover after the host died by SIGKILL (allowlist, running) removes the proxy and both networks by exact ID", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "running", policy, { AGENTCELL_CHILD_PROXY_IMAGE: nodeImage });
    const record = await onlyRecord(world.store);
    assert.equal(record.identity.proxyImageDigest, nodeImage);
    assert.deepEqual(Object.keys(record.resources), ["volume", "network", "egress", "proxy", "keeper"]);
    for (const entry of Object.values(record.resources)) assert.equal(entry?.state, "created");
    const proxy = await engine.request("GET", `/containers/${record.resources.proxy!.id}/json`, { schema: running });
    assert.equal(proxy.value.State.Running, true, "the proxy runs on until recovered");
    const recovery = await world.backend.recover(record, world.store);
    assert.deepEqual(recovery.owned.map((owned) => owned.role), ["keeper", "proxy", "network", "egress", "volume"]);
    assert.deepEqual(recovery.owned.map((owned) => owned.id), ["keeper", "proxy", "network", "egress", "volume"].map((role) => record.resources[role as "keeper"]!.id));
    assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    await assertNothingLeft(engine, record);
    await world.store.remove(record.reservationId);
  }, undefined, nodeImage);
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist with controllerLoss \"stop\": when the host dies, the keeper and the egress proxy both stop before any recovery", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "running", { ...policy, controllerLoss: "stop" }, { AGENTCELL_CHILD_PROXY_IMAGE: nodeImage });
    const record = await onlyRecord(world.store);
    // The events: each container reaches not-running on its own (the Engine's wait answers).
    for (const role of ["keeper", "proxy"] as const) {
      const waited = await engine.request("POST", `/containers/${record.resources[role]!.id!}/wait`, {
        query: { condition: "not-running" },
        timeoutMs: 30_000,
        schema: z.looseObject({ StatusCode: z.number() }),
      });
      assert.equal(waited.value.StatusCode, 0, `the ${role} ended itself on the lease's end`);
    }
    const recovery = await world.backend.recover(record, world.store);
    assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    await assertNothingLeft(engine, record);
    await world.store.remove(record.reservationId);
  }, undefined, nodeImage);
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: stop() removes the proxy, destroy() the internal network and the egress bridge", async (engine) => {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy }, recordingPort()).start();
    const { proxyId, networkId, egressId } = sandbox.resources;
    assert.ok(proxyId && networkId && egressId);
    await sandbox.stop();
    await assert.rejects(engine.request("GET", `/containers/${proxyId}/json`), gone(proxyId));
    await engine.request("GET", `/networks/${networkId}`);
    await engine.request("GET", `/networks/${egressId}`);
    await sandbox.destroy();
    await assertGone(engine, sandbox);
  }, busyboxImage, undefined, [], nodeImage);
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: recovery of a live sandbox's record removes its proxy and networks, and the sandbox notices", async (engine) => {
  await withWorld(async (world) => {
    const sandbox = await world.backend.reserve({ policy }, world.store).start();
    const { record, locked } = await storedRecord(world.store);
    assert.equal(locked, true, "the live sandbox (this process) holds the record's lock");
    assert.equal(record.resources.proxy?.id, sandbox.resources.proxyId);
    assert.equal(record.resources.egress?.id, sandbox.resources.egressId);
    // This process is the record's live controller: only force takes the record over.
    const recovery = await world.backend.recover(record, world.store, { force: true });
    assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    await eventually("the sandbox noticing compute is gone", () => (sandbox.state === "running" ? undefined : true));
    await assertNothingLeft(engine, record);
    await world.store.remove(record.reservationId);
  }, undefined, nodeImage);
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist start with a proxy image without node fails with SandboxUnsupportedError and leaves nothing", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy }, port);
    await assert.rejects(reservation.start(), (error) => {
      assert.ok(error instanceof SandboxUnsupportedError, String(error));
      assert.equal(error.code, "unsupported");
      assert.match(error.message, /^Cannot start sandbox: the egress proxy cannot start \(.*\); config\.proxyImageDigest must name an image with Node\.js 23\.6 or newer as node on its PATH$/su);
      return true;
    });
    await assertNamesAbsent(engine, reservation.names);
    const last = port.records.at(-1) as unknown as { resources: Record<string, { state: string }> };
    assert.deepEqual(Object.values(last.resources).map((entry) => entry.state), ["removed", "removed", "removed", "removed", "planned"]);
  }, busyboxImage, undefined, [], busyboxImage);
}, { timeout: 300_000 });
