// sandbox.pause() / resume(): the cgroup freezer over every container of the sandbox, the
// state and refusals while paused, and the clocks that keep running (docs/snapshots.md).
import assert from "node:assert/strict";
import { SandboxDeadlineError, SandboxStateError } from "../../lib/sandbox/errors.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { testPolicy, withSandbox } from "./_sandbox.ts";
import { assertNothingLeft, onlyRecord, runChild, withWorld } from "./_recovery.ts";

const isPausedRefusal = (error: unknown) =>
  error instanceof SandboxStateError && error.code === "invalid_state" && /paused; call resume\(\) first/.test(error.message);

engineTest("DockerSandbox pause stops a counter loop from advancing and resume continues it", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const counter = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"],
    }).start();
    const reader = counter.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    const pump = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        seen += value;
      }
    })();
    await eventually("the counter past 5", () => Promise.resolve(seen.split("\n").length > 6 ? true : undefined));
    await sandbox.pause();
    assert.equal(sandbox.state, "paused");
    assert.equal((await inspectContainer(engine, sandbox.resources.keeperId)).State.Paused, true);
    await sandbox.pause(); // idempotent
    // Refusals while paused name resume().
    assert.throws(() => sandbox.reserveProcess({ executable: "/bin/true" }), isPausedRefusal);
    await assert.rejects(sandbox.run("/bin/true"), isPausedRefusal);
    await assert.rejects(sandbox.stats(), isPausedRefusal);
    await assert.rejects(sandbox.readFile("work/x"), isPausedRefusal);
    // What was written before the freeze drains; then nothing more arrives while frozen.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const frozenAt = seen.length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal(seen.length, frozenAt, "the counter advanced while paused");
    const last = Number(seen.trim().split("\n").at(-1));
    await sandbox.resume();
    assert.equal(sandbox.state, "running");
    assert.equal((await inspectContainer(engine, sandbox.resources.keeperId)).State.Paused, false);
    await sandbox.resume(); // idempotent
    await eventually("the counter past its paused value", () => Promise.resolve(Number(seen.trim().split("\n").at(-1)) >= last + 3 ? true : undefined));
    assert.equal((await sandbox.run("/bin/echo", ["ok"])).stdoutText, "ok\n");
    await counter.kill();
    await pump;
    assert.equal((await counter.exit).kind, "killed");
  });
});

engineTest("DockerSandbox pause and resume of a stopped sandbox is invalid_state; a paused sandbox stops and is destroyed", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await sandbox.pause();
    await sandbox.stop(); // a paused keeper is force-removed
    assert.equal(sandbox.state, "stopped");
    await assert.rejects(sandbox.pause(), (error) => error instanceof SandboxStateError && error.code === "invalid_state" && /is stopped/.test(error.message));
    await assert.rejects(sandbox.resume(), (error) => error instanceof SandboxStateError && error.code === "invalid_state" && /is stopped/.test(error.message));
  });
});

engineTest("DockerSandbox execution deadline keeps running while paused and stops the paused sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const sleeper = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    await sandbox.pause();
    await eventually("the deadline stopped the paused sandbox", () => Promise.resolve(sandbox.state === "stopped" ? true : undefined));
    assert.ok(sandbox.stopCause instanceof SandboxDeadlineError, String(sandbox.stopCause));
    await assert.rejects(sandbox.resume(), (error) => error instanceof SandboxStateError && error.code === "invalid_state");
    await sleeper.exit.catch(() => {});
  }, { policy: { ...testPolicy, execution: { kind: "deadline", timeoutMs: 2_000 } } });
});

engineTest("DockerSandbox pause freezes the egress proxy of an allowlist sandbox and the port relay too", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // The first connect() makes the relay (nothing listens on port 1: refused).
    await sandbox.connect(1).catch(() => {});
    const relayId = sandbox.resources.relayId!;
    assert.ok(relayId);
    await sandbox.pause();
    const proxyId = sandbox.resources.proxyId!;
    assert.equal((await inspectContainer(engine, proxyId)).State.Paused, true);
    assert.equal((await inspectContainer(engine, relayId)).State.Paused, true);
    await assert.rejects(sandbox.connect(1), isPausedRefusal);
    await sandbox.resume();
    assert.equal((await inspectContainer(engine, proxyId)).State.Paused, false);
    assert.equal((await inspectContainer(engine, relayId)).State.Paused, false);
    assert.equal(sandbox.state, "running");
  }, { policy: { ...testPolicy, network: { kind: "allowlist", hosts: ["example.com"] } }, config: { proxyImageDigest: nodeImage } });
});

engineTest("DockerSandbox paused when its controller died: recover() removes the paused containers", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "paused", { ...testPolicy, controllerLoss: "stop" });
    const record = await onlyRecord(world.store);
    // Frozen, the guest cannot act on the lease's end: the keeper stays, paused.
    const keeper = await inspectContainer(engine, record.resources.keeper!.id!);
    assert.equal(keeper.State.Paused, true);
    const recovery = await world.backend.recover(record, world.store);
    const report = await recovery.cleanup();
    assert.equal(report.complete, true);
    await world.store.remove(record.reservationId);
    await assertNothingLeft(engine, record);
  });
});

engineTest("unpauseAll counts a container the Engine says is not paused as thawed (a relay made while a pause ran was never frozen)", async (engine) => {
  const { unpauseAll } = await import("../../lib/docker/snapshots/pause.ts");
  await withSandbox(engine, async (sandbox) => {
    // The keeper runs, unfrozen: the Engine answers 500 "… is not paused".
    await unpauseAll(engine, [sandbox.resources.keeperId], 5_000);
    await sandbox.pause();
    await sandbox.resume();
    assert.equal(sandbox.state, "running");
    assert.equal((await sandbox.run("/bin/echo", ["thawed"])).stdoutText, "thawed\n");
  });
});
