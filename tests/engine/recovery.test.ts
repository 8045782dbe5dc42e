// Cleanup-only recovery on a real Engine: a host program (a child process of the same
// runtime) dies by SIGKILL at a lifecycle event; a fresh controller lists the file store,
// recovers each record, cleans up, and nothing named remains. Also: the controller lease,
// the guest-side deadline, look-alikes that are never adopted, names squatted by someone
// else (left alone and reported), and the controller lock that refuses a record whose
// controller still runs.
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { z } from "zod";
import { LABELS } from "../../lib/docker/names.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { SandboxConflictError } from "../../lib/sandbox/errors.ts";
import { busyboxImage, engineTest, eventually } from "./_engine.ts";
import {
  assertNothingLeft,
  onlyRecord,
  removeNamed,
  runChild as runChildWith,
  startLiveController,
  storedRecord,
  type World,
  withWorld,
} from "./_recovery.ts";
import { recordingPort } from "./_sandbox.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

const policy: SandboxPolicyInput = { resources: { cpus: 0.5, memoryBytes: 64 * 1024 * 1024, pids: 32 } };
const runChild = (world: World, killAt: string, childPolicy: SandboxPolicyInput = policy) => runChildWith(world, killAt, childPolicy);

/** Recover every record of the store, clean up, and drop the records whose cleanup completed. */
async function reclaim(world: World, options: { settleUncertainAfterMs?: number } = {}): Promise<{ complete: number; uncertain: number }> {
  let complete = 0, uncertain = 0;
  for (const entry of await world.store.list()) {
    assert.equal(entry.kind, "record", "no corrupt record");
    if (entry.kind !== "record") continue;
    const recovery = await world.backend.recover(entry.record, world.store, options);
    const report = await recovery.cleanup();
    if (report.complete) {
      await world.store.remove(entry.reservationId);
      complete += 1;
    } else uncertain += 1;
  }
  return { complete, uncertain };
}

const keeperState = z.looseObject({ State: z.looseObject({ Running: z.boolean(), Status: z.string() }) });

for (const killAt of ["planned", "running", "exporting"]) {
  engineTest(`DockerSandboxBackend.recover after the host died by SIGKILL (${killAt}) removes every resource and empties the store`, async (engine) => {
    await withWorld(async (world) => {
      await runChild(world, killAt);
      const record = await onlyRecord(world.store);
      if (killAt === "running") {
        const keeper = await engine.request("GET", `/containers/${record.resources.keeper!.id}/json`, { schema: keeperState });
        assert.equal(keeper.value.State.Running, true, "controllerLoss \"continue\": compute runs on until recovered");
      }
      assert.deepEqual(await reclaim(world), { complete: 1, uncertain: 0 });
      await assertNothingLeft(engine, record);
      assert.deepEqual(await world.store.list(), [], "the store is empty");
    });
  });
}

engineTest("DockerSandboxBackend.recover keeps a create that was announced but never dispatched uncertain until settled", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "keeper-creating");
    const record = await onlyRecord(world.store);
    assert.equal(record.resources.keeper?.state, "creating");
    const first = await world.backend.recover(record, world.store);
    assert.deepEqual(first.uncertain, ["keeper"]);
    assert.equal(typeof first.record.resources.keeper?.absentSince, "number", "the advanced record notes when the name was first absent");
    assert.deepEqual(await first.cleanup(), { complete: false, uncertain: ["keeper"], squatted: [] });
    // The volume is gone; the record stays for the uncertain keeper.
    await assert.rejects(engine.request("GET", `/volumes/${record.identity.names.volume}`), DockerEngineError);
    const persisted = await onlyRecord(world.store);
    assert.equal(persisted.resources.volume?.state, "removed");
    assert.equal(persisted.resources.keeper?.absentSince, first.record.resources.keeper?.absentSince);
    // Still absent later: settled as never created.
    assert.deepEqual(await reclaim(world, { settleUncertainAfterMs: 0 }), { complete: 1, uncertain: 0 });
    await assertNothingLeft(engine, record);
    assert.deepEqual(await world.store.list(), []);
  });
});

engineTest("DockerSandbox controllerLoss \"stop\" ends compute when the host dies, before any recovery", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "running", { ...policy, controllerLoss: "stop" });
    const record = await onlyRecord(world.store);
    const keeperId = record.resources.keeper!.id!;
    // The event: the keeper reaches not-running on its own (the Engine's wait answers).
    const waited = await engine.request("POST", `/containers/${keeperId}/wait`, {
      query: { condition: "not-running" },
      timeoutMs: 60_000,
      schema: z.looseObject({ StatusCode: z.number() }),
    });
    assert.equal(waited.value.StatusCode, 0, "the keeper ended itself (trap on TERM: exit 0)");
    const keeper = await engine.request("GET", `/containers/${keeperId}/json`, { schema: keeperState });
    assert.equal(keeper.value.State.Running, false);
    assert.deepEqual(await reclaim(world), { complete: 1, uncertain: 0 });
    await assertNothingLeft(engine, record);
  });
});

engineTest("DockerSandbox execution deadline holds inside the guest after the host died", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "running", { ...policy, execution: { kind: "deadline", timeoutMs: 1_000 } });
    const record = await onlyRecord(world.store);
    const waited = await engine.request("POST", `/containers/${record.resources.keeper!.id!}/wait`, {
      query: { condition: "not-running" },
      timeoutMs: 60_000,
      schema: z.looseObject({ StatusCode: z.number() }),
    });
    assert.equal(waited.value.StatusCode, 0, "the guest deadline ended the keeper");
    assert.deepEqual(await reclaim(world), { complete: 1, uncertain: 0 });
    await assertNothingLeft(engine, record);
  });
});

engineTest("DockerSandbox with controllerLoss \"stop\" runs and stops normally while its controller lives", async (engine) => {
  await withWorld(async (world) => {
    const sandbox = await world.backend.reserve({ policy: { ...policy, controllerLoss: "stop" } }, recordingPort()).start();
    try {
      const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "ps -o comm,args | grep -c 'read -r line' || true"] }).start();
      await guest.stdin.close();
      const [out] = await Promise.all([new Response(guest.stdout).text(), guest.exit]);
      assert.ok(Number(out.trim()) >= 1, "the lease is running in the guest");
      assert.equal(sandbox.state, "running");
      await sandbox.stop();
      assert.equal(sandbox.state, "stopped");
      assert.ok(sandbox.stopCause?.message.includes("the sandbox was stopped"));
    } finally {
      await sandbox.destroy();
    }
    await assert.rejects(engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`), DockerEngineError);
  });
});

engineTest("DockerSandbox start answers a keeper-name conflict with SandboxConflictError, never adopts it, and records nothing as creating", async (engine) => {
  await withWorld(async (world) => {
    const port = recordingPort();
    const reservation = world.backend.reserve({ policy }, port);
    // A foreign container under the exact keeper name, with every fixed label copied.
    const foreign = await engine.request("POST", "/containers/create", {
      query: { name: reservation.names.keeper },
      json: {
        Image: busyboxImage,
        Cmd: ["true"],
        Labels: {
          [LABELS.owner]: "agentcell",
          [LABELS.namespace]: TEST_NAMESPACE,
          [LABELS.reservation]: reservation.id,
          [LABELS.role]: "keeper",
        },
      },
      expect: [201],
      schema: z.looseObject({ Id: z.string() }),
    });
    try {
      await assert.rejects(reservation.start(), (error) =>
        error instanceof SandboxConflictError && error.code === "conflict" &&
        error.message.includes(`the name ${reservation.names.keeper} is taken by a resource this sandbox did not create; it is left alone`));
      const last = port.records.at(-1) as DockerSandboxRecoveryRecord;
      assert.equal(last.resources.keeper?.state, "planned", "a definite 409: nothing was created");
      assert.equal(last.resources.volume?.state, "removed");
      const still = await engine.request("GET", `/containers/${foreign.value.Id}/json`, { schema: keeperState });
      assert.equal(still.value.State.Status, "created", "the foreign container is untouched");
      // Recovery of that record: a planned name someone else holds is left alone and reported.
      const recovery = await world.backend.recover(last, recordingPort());
      assert.deepEqual(recovery.owned, []);
      assert.deepEqual(recovery.squatted.map(({ role, name, id }) => ({ role, name, id })), [{ role: "keeper", name: reservation.names.keeper, id: foreign.value.Id }]);
      assert.match(recovery.squatted[0].reason, /^labels differ \(dev\.agentcell\.configuration, dev\.agentcell\.record, dev\.agentcell\.revision\); /u);
      assert.deepEqual(await recovery.cleanup(), { complete: false, uncertain: [], squatted: recovery.squatted });
      const untouched = await engine.request("GET", `/containers/${foreign.value.Id}/json`, { schema: keeperState });
      assert.equal(untouched.value.State.Status, "created", "the squatter is untouched by cleanup");
    } finally {
      await engine.request("DELETE", `/containers/${foreign.value.Id}`, { query: { force: true }, expect: [204] });
    }
  });
});

engineTest("DockerSandboxBackend.recover never adopts a look-alike with copied labels and another record digest", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "keeper-creating");
    const record = await onlyRecord(world.store);
    const names = record.identity.names;
    // Someone copies the name and every label they can see, but not the record's nonce.
    const labels = {
      [LABELS.owner]: "agentcell",
      [LABELS.namespace]: TEST_NAMESPACE,
      [LABELS.reservation]: record.reservationId,
      [LABELS.role]: "keeper",
      [LABELS.revision]: record.identity.revision,
      [LABELS.record]: "0".repeat(64),
      [LABELS.configuration]: record.identity.configurationDigest,
    };
    const foreign = await engine.request("POST", "/containers/create", {
      query: { name: names.keeper },
      json: { Image: busyboxImage, User: "65533:65533", Cmd: ["true"], Labels: labels },
      expect: [201],
      schema: z.looseObject({ Id: z.string() }),
    });
    try {
      const recovery = await world.backend.recover(record, world.store);
      assert.deepEqual(recovery.uncertain, []);
      assert.deepEqual(recovery.owned.map((o) => o.role), ["volume"], "only the volume is ours");
      assert.deepEqual(recovery.squatted.map(({ role, id }) => ({ role, id })), [{ role: "keeper", id: foreign.value.Id }]);
      assert.equal(recovery.squatted[0].reason, "labels differ (dev.agentcell.record)", "everything copyable was copied");
      assert.equal(recovery.record.resources.keeper?.state, "creating", "the squatted entry is kept for a later recovery");
      assert.deepEqual(await recovery.cleanup(), { complete: false, uncertain: [], squatted: recovery.squatted });
      const still = await engine.request("GET", `/containers/${foreign.value.Id}/json`, { schema: keeperState });
      assert.equal(still.value.State.Status, "created", "the look-alike survives untouched");
      await assert.rejects(engine.request("GET", `/volumes/${names.volume}`), DockerEngineError);
      assert.equal((await onlyRecord(world.store)).resources.keeper?.state, "creating", "the record is kept");
    } finally {
      await engine.request("DELETE", `/containers/${foreign.value.Id}`, { query: { force: true }, expect: [204] });
    }
    // The look-alike is gone: the keeper's name is absent, and settling finishes the record.
    assert.deepEqual(await reclaim(world, { settleUncertainAfterMs: 0 }), { complete: 1, uncertain: 0 });
    await assertNothingLeft(engine, record);
    assert.deepEqual(await world.store.list(), []);
  });
});

engineTest("DockerSandboxBackend.recover removes what is provably the record's while a squatter holds one of its names, and keeps the record", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "record:3");
    const record = await onlyRecord(world.store);
    try {
      assert.deepEqual([record.resources.volume?.state, record.resources.keeper?.state], ["created", "planned"], "killed after the volume was created");
      // Someone else creates a container under the keeper's exact name, without our labels.
      const squatter = await engine.request("POST", "/containers/create", {
        query: { name: record.identity.names.keeper },
        json: { Image: busyboxImage, Cmd: ["true"] },
        expect: [201],
        schema: z.looseObject({ Id: z.string() }),
      });
      const recovery = await world.backend.recover(record, world.store);
      assert.deepEqual(recovery.owned, [{ role: "volume", id: record.identity.names.volume }]);
      assert.deepEqual(recovery.squatted.map(({ role, name, id }) => ({ role, name, id })), [{ role: "keeper", name: record.identity.names.keeper, id: squatter.value.Id }]);
      assert.match(recovery.squatted[0].reason, /^labels differ \(dev\.agentcell\.configuration, .*\); user is ""$/u);
      assert.deepEqual(await recovery.cleanup(), { complete: false, uncertain: [], squatted: recovery.squatted });
      await assert.rejects(engine.request("GET", `/volumes/${record.identity.names.volume}`), DockerEngineError, "the volume (ours) is removed");
      const still = await engine.request("GET", `/containers/${squatter.value.Id}/json`, { schema: keeperState });
      assert.equal(still.value.State.Status, "created", "the squatter is left alone");
      const kept = await onlyRecord(world.store);
      assert.deepEqual([kept.resources.volume?.state, kept.resources.keeper?.state], ["removed", "planned"], "the record is kept");
      // While the squatter exists, every later recovery says the same and touches nothing else.
      assert.deepEqual(await reclaim(world), { complete: 0, uncertain: 1 });
      await engine.request("DELETE", `/containers/${squatter.value.Id}`, { query: { force: true }, expect: [204] });
      assert.deepEqual(await reclaim(world), { complete: 1, uncertain: 0 }, "the squatter is gone: a later cleanup finishes");
      await assertNothingLeft(engine, record);
      assert.deepEqual(await world.store.list(), []);
    } finally {
      // What a failure may have left: the squatter (under the keeper's name) and ours.
      await removeNamed(engine, record);
    }
  });
});

engineTest("DockerSandboxBackend.recover refuses a record whose controller still runs in another process, touches nothing, and recovers it once that controller was killed", async (engine) => {
  await withWorld(async (world) => {
    const controller = await startLiveController(world, policy);
    let record: DockerSandboxRecoveryRecord | undefined;
    try {
      record = (await storedRecord(world.store)).record;
      const { reservationId } = record;
      const [entry] = await world.store.list();
      assert.equal(entry.kind, "locked", "list() does not hand out a live controller's record");
      assert.ok(entry.kind === "locked" && entry.owner.pid === controller.pid && entry.error instanceof SandboxConflictError);
      await assert.rejects(world.backend.recover(record, world.store), (error) => {
        assert.ok(error instanceof SandboxConflictError && error.code === "conflict", String(error));
        assert.match(
          error.message,
          new RegExp(
            `^Cannot recover sandbox: record ${reservationId} is locked by its controller \\(pid ${controller.pid}, started at tick \\d+ after boot\\), which still runs: ` +
              "stop that controller first \\(or let it destroy its sandbox\\), or pass \\{ force: true \\} to recover\\(\\) to take the record over anyway; nothing was touched, keep the record$",
            "u",
          ),
        );
        return true;
      });
      // Nothing was touched: compute runs on, the volume is there, the record is as it was.
      const keeper = await engine.request("GET", `/containers/${record.resources.keeper!.id!}/json`, { schema: keeperState });
      assert.equal(keeper.value.State.Running, true);
      await engine.request("GET", `/volumes/${record.identity.names.volume}`);
      assert.deepEqual((await storedRecord(world.store)).record, record);
      // The controller dies by SIGKILL: its lock is stale, taken over and reported.
      await controller.kill();
      const recovery = await world.backend.recover(record, world.store);
      assert.equal(recovery.lock?.kind, "stale");
      assert.ok(recovery.lock?.kind === "stale" && recovery.lock.reason === "exited" && recovery.lock.owner?.pid === controller.pid, JSON.stringify(recovery.lock));
      assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
      await assertNothingLeft(engine, record);
      await world.store.remove(reservationId);
      assert.deepEqual(await readdir(world.store.directory), [], "neither the record nor its lock remains");
    } finally {
      await controller.kill();
      if (record) await removeNamed(engine, record);
    }
  });
});

engineTest("DockerSandboxBackend.recover of a live sandbox's last checkpoint is refused for its live controller, and with force removes exactly its resources", async (engine) => {
  await withWorld(async (world) => {
    const sandbox = await world.backend.reserve({ policy: { ...policy, network: "outbound" } }, world.store).start();
    const { record, locked } = await storedRecord(world.store);
    assert.equal(locked, true, "this process's live sandbox holds the record's lock");
    assert.deepEqual(Object.values(record.resources).map((r) => r?.state), ["created", "created", "created"]);
    await assert.rejects(world.backend.recover(record, world.store), (error) =>
      error instanceof SandboxConflictError && error.code === "conflict" && error.message.includes(", this process), which still runs"));
    assert.equal(sandbox.state, "running", "refused: nothing was touched");
    const recovery = await world.backend.recover(record, world.store, { force: true });
    assert.equal(recovery.lock?.kind, "own");
    assert.deepEqual(recovery.owned.map((o) => o.role), ["keeper", "network", "volume"]);
    assert.equal(recovery.owned[0].id, sandbox.resources.keeperId);
    assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    await eventually("the sandbox noticing its keeper is gone", () => (sandbox.state === "running" ? undefined : true));
    await assertNothingLeft(engine, record);
    // A second cleanup of the same handle is a no-op (404 = done).
    assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    await world.store.remove(record.reservationId);
  });
});

engineTest("DockerSandbox persists each checkpoint before its effect: at every record a creating name is still absent and a created ID exists", async (engine) => {
  await withWorld(async (world) => {
    const seen: string[] = [];
    const exists = async (role: string, nameOrId: string) => {
      const path = role === "volume" ? `/volumes/${nameOrId}` : role === "network" ? `/networks/${nameOrId}` : `/containers/${nameOrId}/json`;
      return await engine.request("GET", path).then(() => true, (error) => {
        if (error instanceof DockerEngineError && error.code === "not_found") return false;
        throw error;
      });
    };
    const port = {
      async record(raw: unknown) {
        const record = raw as DockerSandboxRecoveryRecord;
        for (const [role, entry] of Object.entries(record.resources)) {
          if (!entry) continue;
          seen.push(`${role}:${entry.state}`);
          if (entry.state === "planned" || entry.state === "creating") {
            assert.equal(await exists(role, entry.name), false, `${role} exists while the record says ${entry.state}`);
          }
          if (entry.state === "created") assert.equal(await exists(role, entry.id!), true, `${role} ${entry.id} is recorded created but absent`);
        }
      },
    };
    const sandbox = await world.backend.reserve({ policy: { ...policy, network: "outbound" } }, port).start();
    const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "echo x > f"] }).start();
    await guest.stdin.close();
    await guest.exit;
    await sandbox.stop();
    for await (const entry of await sandbox.exportTree({ kind: "file", path: "work/f" })) await entry.body.cancel();
    await sandbox.destroy();
    for (const step of ["volume:creating", "volume:created", "network:creating", "network:created", "keeper:creating", "keeper:created", "accessor:creating", "accessor:created", "keeper:removing", "keeper:removed", "accessor:removed", "volume:removed"]) {
      assert.ok(seen.includes(step), `a record with ${step}`);
    }
  });
});

engineTest("DockerSandbox exportTree answers an accessor-name conflict with SandboxConflictError and destroy() leaves that container alone", async (engine) => {
  await withWorld(async (world) => {
    const port = recordingPort();
    const reservation = world.backend.reserve({ policy }, port);
    const sandbox = await reservation.start();
    const foreign = await engine.request("POST", "/containers/create", {
      query: { name: reservation.names.accessor },
      json: {
        Image: busyboxImage,
        Cmd: ["true"],
        Labels: { [LABELS.owner]: "agentcell", [LABELS.namespace]: TEST_NAMESPACE, [LABELS.reservation]: reservation.id, [LABELS.role]: "accessor" },
      },
      expect: [201],
      schema: z.looseObject({ Id: z.string() }),
    });
    try {
      await sandbox.stop();
      await assert.rejects(sandbox.exportTree({ kind: "workspace" }), (error) =>
        error instanceof SandboxConflictError && error.code === "conflict" && /is taken by a resource this sandbox did not create/.test(error.message));
      assert.equal((port.records.at(-1) as DockerSandboxRecoveryRecord).resources.accessor?.state, "planned");
      await sandbox.destroy();
      assert.equal(sandbox.resources.accessorId, undefined, "never adopted");
      const still = await engine.request("GET", `/containers/${foreign.value.Id}/json`, { schema: keeperState });
      assert.equal(still.value.State.Status, "created", "the foreign container survives destroy()");
    } finally {
      await engine.request("DELETE", `/containers/${foreign.value.Id}`, { query: { force: true }, expect: [204] });
    }
  });
});

/**
 * A guest script that SIGKILLs every other process whose command line contains `needle`,
 * once at least one exists (a guard may start after this process: it looks again, for at
 * most 60 s), and prints `killed K refused R`. The needle is joined at run time, so this
 * script's own text (and its forks') never holds it.
 */
const killMatching = (needle: string) => {
  const half = Math.floor(needle.length / 2);
  return `n='${needle.slice(0, half)}'; n="\${n}${needle.slice(half)}"; killed=0; refused=0; tries=0; ` +
    `while [ $((killed + refused)) = 0 ] && [ $tries -lt 600 ]; do tries=$((tries + 1)); ` +
    `for p in /proc/[0-9]*; do [ "\${p#/proc/}" = "$$" ] && continue; ` +
    `if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -qF "$n"; then ` +
    `if kill -9 \${p#/proc/} 2>/dev/null; then killed=$((killed + 1)); else refused=$((refused + 1)); fi; fi; done; ` +
    `[ $((killed + refused)) = 0 ] && sleep 0.1; done; echo "killed $killed refused $refused"`;
};

for (const [guard, guardPolicy, needle, cause] of [
  ["controller lease", { ...policy, controllerLoss: "stop" }, "read -r line", /the controller lease ended before compute was removed/],
  ["guest deadline", { ...policy, execution: { kind: "deadline", timeoutMs: 600_000 } }, "kill -TERM 1", /the guest-side execution deadline ended early/],
] as const) {
  engineTest(`DockerSandbox ${guard}: the agent cannot kill it, and its death (by the keeper's uid) stops the sandbox`, async (engine) => {
    await withWorld(async (world) => {
      const sandbox = await world.backend.reserve({ policy: guardPolicy }, recordingPort()).start();
      try {
        const agent = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", killMatching(needle)] }).start();
        await agent.stdin.close();
        const [out, receipt] = await Promise.all([new Response(agent.stdout).text(), agent.exit]);
        assert.deepEqual(receipt, { kind: "exited", code: 0 });
        assert.match(out, /^killed 0 refused [1-9]\d*\n$/u, "the agent's kill is refused (another uid)");
        assert.equal(sandbox.state, "running");
        // The keeper's own uid can end the guard: the controller notices the guard is gone.
        const { keeperUser } = world.backend.settings;
        const exec = await engine.request("POST", `/containers/${sandbox.resources.keeperId}/exec`, {
          json: { User: `${keeperUser.uid}:${keeperUser.gid}`, Cmd: ["/bin/sh", "-c", killMatching(needle)] },
          expect: [201],
          schema: z.looseObject({ Id: z.string() }),
        });
        await engine.request("POST", `/exec/${exec.value.Id}/start`, { json: { Detach: true, Tty: false }, expect: [200] });
        await eventually(`the sandbox noticing its ${guard} died`, () => (sandbox.state === "running" ? undefined : true));
        assert.match(sandbox.stopCause?.message ?? "", cause);
      } finally {
        await sandbox.destroy();
      }
    });
  });
}

engineTest("DockerSandboxBackend.recover refuses a record whose recorded ID is someone else's container, and touches nothing", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "running");
    const record = await onlyRecord(world.store);
    const decoy = await engine.request("POST", "/containers/create", {
      json: { Image: busyboxImage, Cmd: ["true"] },
      expect: [201],
      schema: z.looseObject({ Id: z.string() }),
    });
    try {
      const edited = { ...record, resources: { ...record.resources, keeper: { ...record.resources.keeper!, id: decoy.value.Id } } };
      await assert.rejects(world.backend.recover(edited, world.store), (error) =>
        error instanceof SandboxConflictError && /the keeper [0-9a-f]{64} that the record names is not this record's/.test(error.message));
      const still = await engine.request("GET", `/containers/${decoy.value.Id}/json`, { schema: keeperState });
      assert.equal(still.value.State.Status, "created", "the decoy is untouched");
      assert.deepEqual(await reclaim(world), { complete: 1, uncertain: 0 }, "the true record still reclaims");
      await assertNothingLeft(engine, record);
    } finally {
      await engine.request("DELETE", `/containers/${decoy.value.Id}`, { query: { force: true }, expect: [204] });
    }
  });
});

for (const controllerLoss of ["continue", "stop"] as const) {
  engineTest(`DockerSandbox whose keeper is removed from outside settles the process receipt (controllerLoss "${controllerLoss}")`, async (engine) => {
    await withWorld(async (world) => {
      const sandbox = await world.backend.reserve({ policy: { ...policy, controllerLoss } }, recordingPort()).start();
      try {
        const agent = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
        const output = Promise.all([new Response(agent.stdout).text(), new Response(agent.stderr).text()]).catch((error) => error);
        await engine.request("DELETE", `/containers/${sandbox.resources.keeperId}`, { query: { force: true }, expect: [204] });
        const receipt = await agent.exit;
        // The event is that the receipt settles. Which one depends on the moment: the Engine may
        // report the exec killed (128 or more), or not yet started (127), or the removal made it
        // unobservable.
        assert.ok(receipt.kind === "unavailable" || receipt.kind === "exited" || receipt.kind === "killed", JSON.stringify(receipt));
        await output;
        assert.equal(sandbox.state, "stopped");
      } finally {
        await sandbox.destroy();
      }
    });
  });
}
