// Lost Engine replies on every create and every removal, through the fault proxy: the
// Engine performs the request, its reply never arrives, and the Engine then stays out of
// reach, so the owner cannot resolve the outcome itself. The operation fails with a typed
// error within its deadline; the last persisted record says `creating` (or `removing`); a
// fresh controller recovers it once the Engine is reachable again and removes exactly those
// resources. A look-alike with a similar name and copied labels survives untouched.
import assert from "node:assert/strict";
import { z } from "zod";
import { LABELS } from "../../lib/docker/names.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { digestOf, type DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { SandboxConflictError, SandboxError } from "../../lib/sandbox/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { endpoint, engineTest, eventually } from "./_engine.ts";
import { type FaultProxy, type RequestMatch, startFaultProxy } from "./_fault_proxy.ts";
import { assertNothingLeft, onlyRecord, storedRecord, withWorld } from "./_recovery.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

const policy: SandboxPolicyInput = {
  resources: { cpus: 0.5, memoryBytes: 64 * 1024 * 1024, pids: 32 },
  network: "outbound",
  deadlines: { startupMs: 5_000, cleanupMs: 2_000 },
};

/**
 * Drop the reply of the request `match` selects (the Engine performs it), then swallow
 * every later request until `restore()` — the Engine is out of reach for the owner.
 */
function loseReply(proxy: FaultProxy, match: RequestMatch & { occurrence?: number }): { restore(): void } {
  const drop = proxy.inject({ ...match, fault: { kind: "drop", then: "stall" } });
  let swallow: { remove(): void } | undefined;
  drop.applied.then(() => {
    swallow = proxy.inject({ path: /.*/u, occurrence: "every", fault: { kind: "swallow", then: "close" } });
  });
  return {
    restore() {
      drop.remove();
      swallow?.remove();
    },
  };
}

/** A volume with a similar name and every copyable label of `record`, but another record digest. */
async function lookAlike(engine: DockerEngine, record: DockerSandboxRecoveryRecord): Promise<string> {
  const name = `${record.identity.names.volume}-lookalike`;
  await engine.request("POST", "/volumes/create", {
    json: {
      Name: name,
      Labels: {
        [LABELS.owner]: "agentcell",
        [LABELS.namespace]: TEST_NAMESPACE,
        [LABELS.reservation]: record.reservationId,
        [LABELS.role]: "volume",
        [LABELS.revision]: record.identity.revision,
        [LABELS.record]: "0".repeat(64),
        [LABELS.configuration]: record.identity.configurationDigest,
      },
    },
    expect: [201],
  });
  return name;
}

interface Case {
  readonly role: "volume" | "network" | "keeper" | "accessor";
  readonly step: "create" | "remove";
  readonly match: RequestMatch & { occurrence?: number };
}

const cases: Case[] = [
  { role: "volume", step: "create", match: { method: "POST", path: "/volumes/create" } },
  { role: "network", step: "create", match: { method: "POST", path: "/networks/create" } },
  { role: "keeper", step: "create", match: { method: "POST", path: "/containers/create" } },
  { role: "accessor", step: "create", match: { method: "POST", path: "/containers/create" } },
  { role: "keeper", step: "remove", match: { method: "DELETE", path: /^\/containers\/[0-9a-f]{64}$/u } },
  { role: "accessor", step: "remove", match: { method: "DELETE", path: /^\/containers\/[0-9a-f]{64}$/u } },
  { role: "network", step: "remove", match: { method: "DELETE", path: /^\/networks\/[0-9a-f]{64}$/u } },
  { role: "volume", step: "remove", match: { method: "DELETE", path: /^\/volumes\/[a-z0-9-]+$/u } },
];

for (const { role, step, match } of cases) {
  engineTest(`DockerSandbox a lost reply to the ${role} ${step} fails typed, and a fresh recover() removes exactly what exists`, async (engine) => {
    await using proxy = await startFaultProxy({ upstream: endpoint! });
    await withWorld(async (world) => {
      const { store, backend: owner } = world;
      let fault: { restore(): void };
      let failure: unknown;
      let owned: DockerSandbox | undefined;
      const outcome = (task: Promise<unknown>) => task.then(() => undefined, (error) => error);
      if (step === "create" && role !== "accessor") {
        fault = loseReply(proxy, match);
        failure = await outcome(owner.reserve({ policy }, store).start());
      } else {
        const sandbox = await owner.reserve({ policy }, store).start();
        owned = sandbox;
        const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "echo kept > f"] }).start();
        await guest.stdin.close();
        await guest.exit;
        if (role === "keeper") {
          // stop() is the keeper's removal.
          fault = loseReply(proxy, match);
          failure = await outcome(sandbox.stop());
        } else {
          await sandbox.stop();
          if (step === "create") {
            fault = loseReply(proxy, match);
            failure = await outcome(sandbox.exportTree({ kind: "workspace" }));
          } else {
            for await (const entry of await sandbox.exportTree({ kind: "workspace" })) await entry.body.cancel();
            fault = loseReply(proxy, match);
            failure = await outcome(sandbox.destroy());
          }
        }
      }
      assert.ok(failure instanceof SandboxError, `the ${role} ${step} failed typed: ${failure}`);
      assert.ok(failure.code === "deadline" || failure.code === "engine", `code ${failure.code}`);
      // A failed start is over (its lock released); a sandbox whose stop, export or destroy
      // failed is still this process's, so its record stays locked by this live controller.
      const { record, locked } = await storedRecord(world.store);
      assert.equal(locked, !(step === "create" && role !== "accessor"), "locked while the sandbox object lives");
      const expected = step === "create" ? "creating" : "removing";
      assert.equal(record.resources[role]?.state, expected, `the record keeps the ${role} ${expected}`);
      if (step === "create") assert.match(failure.message, new RegExp(`whether the ${role} was created is unknown`));

      // The Engine is reachable again. A sandbox whose stop failed retries its removal in the
      // background for deadlines.cleanupMs (state stop_failed until one succeeds): the owner
      // is done once that ends, and only then does a fresh controller (a new backend) take over.
      fault.restore();
      if (owned?.state === "stop_failed") {
        await eventually("the owner's own removal retries ending", () => owned!.state === "stopped" ? true : undefined);
      }
      const similar = await lookAlike(engine, record);
      try {
        const recovery = await world.fresh().recover(record, store, { force: locked });
        if (step === "create") {
          assert.equal(recovery.record.resources[role]?.state, "created", "reconciled by exact name, labels and fingerprint");
          assert.ok(recovery.owned.some((owned) => owned.role === role));
        }
        assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
        await assertNothingLeft(engine, record);
        const survivor = await engine.request("GET", `/volumes/${similar}`, { schema: z.looseObject({ Name: z.string() }) });
        assert.equal(survivor.value.Name, similar, "the look-alike survives untouched");
        const final = await onlyRecord(world.store);
        assert.ok(Object.values(final.resources).every((entry) => entry?.state === "removed" || entry?.state === "planned"), JSON.stringify(final.resources));
      } finally {
        await engine.request("DELETE", `/volumes/${similar}`, { expect: [204] });
      }
    }, proxy.endpoint);
  });
}

engineTest("DockerSandboxBackend.recover of a record from another daemon conflicts after /version and /info, with no resource request", async () => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withWorld(async (world) => {
    const { store } = world;
    const sandbox = await world.backend.reserve({ policy }, store).start();
    try {
      const { record } = await storedRecord(world.store);
      const identity = { ...record.identity, daemonId: "ANOTHER:DAEMON" };
      const moved = { ...record, identity, identityDigest: digestOf(identity) };
      const before = proxy.requests.length;
      // force: this process is the record's live controller (its lock would refuse first).
      await assert.rejects(world.fresh().recover(moved, store, { force: true }), (error) =>
        error instanceof SandboxConflictError && error.code === "conflict" &&
        /the record belongs to daemon ANOTHER:DAEMON, and .* serves daemon /.test(error.message) && /nothing was touched, keep the record$/.test(error.message));
      // Version negotiation and daemon admission only: no resource was inspected or touched.
      // (The owner's own keeper watch, a long poll, may reach the proxy at any time: not recovery's.)
      const ownWatch = `/containers/${sandbox.resources.keeperId}/wait`;
      const paths = proxy.requests.slice(before).map((request) => request.path).filter((path) => path !== ownWatch);
      assert.deepEqual([...new Set(paths)].sort(), ["/info", "/version"]);
      assert.equal(sandbox.state, "running");
    } finally {
      await sandbox.destroy();
    }
  }, proxy.endpoint);
});
