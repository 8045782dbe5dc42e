// Nothing hangs when the Engine is gone: a lost removal reply, a lost watch reply, a lost
// exec-start reply (through the fault proxy, on the lane's engine), and an Engine killed and
// restarted, with and without live-restore (on a private engine beside the lane's, never the
// lane's own). Every pending call settles within its bound with the stop cause; a cut output
// errors instead of ending normally; compute does not outlive the Engine's return.
import assert from "node:assert/strict";
import type { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { SandboxError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { endpoint, engineTest, eventually } from "./_engine.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { withPrivateEngine } from "./_private_engine.ts";
import { assertGone, readUntil, recordingPort, testPolicy, withBackend } from "./_sandbox.ts";

const quick: SandboxPolicyInput = { ...testPolicy, deadlines: { startupMs: 30_000, cleanupMs: 3_000 } };

/** Whether the keeper container of `sandbox` still exists on `engine`. */
async function keeperExists(engine: DockerEngine, sandbox: DockerSandbox): Promise<boolean> {
  try {
    await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === "not_found") return false;
    throw error;
  }
}

/** Read `stream` to its end (it may have been read from before); rejects with its error. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.byteLength;
  return bytes;
}

engineTest("DockerSandbox stop whose removal reply is lost: state stop_failed, every pending receipt and run() settle with the stop cause, stdout errors, a retry removes compute", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: quick }, recordingPort()).start();
    try {
      const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "echo ready; exec sleep 600"] }).start();
      await readUntil(guest.stdout, (seen) => seen.includes("ready\n"));
      const run = sandbox.run("/bin/sleep", ["600"], { timeoutMs: 600_000 });
      run.catch(() => {});
      const keeperPath = new RegExp(`^/containers/${sandbox.resources.keeperId}$`, "u");
      const lost = proxy.inject({ method: "DELETE", path: keeperPath, fault: { kind: "drop", then: "stall" } });
      await assert.rejects(sandbox.stop(), (error) => error instanceof SandboxError && error.code === "deadline");
      assert.equal(sandbox.state, "stop_failed");
      assert.equal((await lost.applied).status, 204);
      assert.deepEqual(await guest.exit, { kind: "unavailable", reason: "sandbox_stopped" });
      await assert.rejects(run, (error) => error instanceof SandboxStoppedError && error.message === "Cannot continue: the sandbox was stopped");
      await assert.rejects(drain(guest.stdout), (error) => error instanceof SandboxStoppedError);
      // The background retry finds it gone (404 counts as done).
      await eventually("the retried removal", () => sandbox.state === "stopped" ? true : undefined);
      assert.equal(await keeperExists(engine, sandbox), false);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, proxy.endpoint);
});

engineTest("DockerSandbox keeper watch whose reply is lost is renewed: a killed keeper still stops the sandbox", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  // The first wait's reply (the keeper's death) is read and dropped; the connection stalls.
  const lost = proxy.inject({ method: "POST", path: /^\/containers\/[0-9a-f]{64}\/wait$/u, fault: { kind: "drop", then: "stall" } });
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: quick }, recordingPort()).start();
    try {
      await engine.request("POST", `/containers/${sandbox.resources.keeperId}/kill`, { expect: [204] });
      await lost.applied;
      // One renewal period (30 s) at most, then the re-armed watch answers at once.
      await eventually("the sandbox noticing its keeper's death", () => sandbox.state !== "running" ? true : undefined, { deadlineMs: 60_000 });
      assert.ok(sandbox.stopCause instanceof SandboxStoppedError);
      assert.equal(sandbox.stopCause.message, "Cannot continue: the keeper container stopped on its own");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, proxy.endpoint);
}, { timeout: 180_000 });

engineTest("DockerSandbox run() whose exec-start reply is lost: the command that did start is found by its mark and ended, the error says so", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withBackend(async (backend) => {
    // The lost answer fails after deadlines.startupMs.
    const sandbox = await backend.reserve({ policy: { ...quick, deadlines: { startupMs: 5_000, cleanupMs: 3_000 } } }, recordingPort()).start();
    try {
      const lost = proxy.inject({ method: "POST", path: /^\/exec\/[0-9a-f]{64}\/start$/u, fault: { kind: "drop", then: "close" } });
      await assert.rejects(sandbox.run("/bin/sleep", ["601"]), (error) => {
        assert.ok(error instanceof SandboxError && (error.code === "deadline" || error.code === "engine"), String(error));
        assert.match(error.message, /; the command may have started \(exec [0-9a-f]{64}\): it is found by its mark and ended, and its maxConcurrentProcesses slot is held until then$/u);
        return true;
      });
      await lost.applied;
      const listing = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
      await eventually("the lost start's command ended", async () => /sleep 601/u.test((await sandbox.run("/bin/sh", ["-c", listing])).stdoutText) ? undefined : true);
      assert.equal(sandbox.state, "running");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, proxy.endpoint);
});

engineTest("DockerSandbox on an Engine killed mid-run: stdout errors (never a normal end), receipts and run() settle, state stop_failed; after the Engine is back compute is removed", async () => {
  await withPrivateEngine({}, async (privateEngine) => {
    await withBackend(async (backend) => {
      const policy: SandboxPolicyInput = { ...testPolicy, deadlines: { startupMs: 30_000, cleanupMs: 8_000 } };
      const sandbox = await backend.reserve({ policy }, recordingPort()).start();
      try {
        const guest = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "echo ready; exec sleep 600"] }).start();
        await readUntil(guest.stdout, (seen) => seen.includes("ready\n"));
        const run = sandbox.run("/bin/sleep", ["600"]);
        run.catch(() => {});
        const output = drain(guest.stdout);
        output.catch(() => {});
        await privateEngine.kill("SIGKILL");
        await assert.rejects(output, (error) => error instanceof SandboxError, "a cut output must not end normally");
        assert.deepEqual(await guest.exit, { kind: "unavailable", reason: "sandbox_stopped" });
        await assert.rejects(run, (error) => error instanceof SandboxError);
        assert.equal(sandbox.state, "stop_failed");
        assert.ok(sandbox.stopCause instanceof SandboxError);
        await privateEngine.start();
        // Retries by the caller (a background retry in flight while the Engine came back may
        // fail and be joined: stop() is retried until one succeeds, as documented).
        await eventually("a stop that removes compute", () => sandbox.stop().then(() => true, () => undefined));
        assert.equal(sandbox.state, "stopped");
        assert.equal(await keeperExists(privateEngine.engine, sandbox), false);
      } finally {
        await sandbox.destroy();
        await assertGone(privateEngine.engine, sandbox);
      }
    }, privateEngine.busyboxImage, privateEngine.endpoint);
  });
}, { timeout: 300_000 });

engineTest("DockerSandbox lease on an Engine restarted with live-restore: the lease loss is named as the Engine's, and compute is removed once the Engine is back", async () => {
  await withPrivateEngine({ liveRestore: true }, async (privateEngine) => {
    await withBackend(async (backend) => {
      const policy: SandboxPolicyInput = { ...testPolicy, controllerLoss: "stop", deadlines: { startupMs: 30_000, cleanupMs: 20_000 } };
      const sandbox = await backend.reserve({ policy }, recordingPort()).start();
      try {
        await privateEngine.kill("SIGKILL");
        await eventually("the sandbox noticing the lease's loss", () => sandbox.state !== "running" ? true : undefined);
        await privateEngine.start();
        // live-restore kept the keeper running across the restart; the lease exec is gone.
        await eventually("compute removed once the Engine is back", async () => !(await keeperExists(privateEngine.engine, sandbox)) ? true : undefined);
        await eventually("state stopped", () => sandbox.state === "stopped" ? true : undefined);
        assert.ok(sandbox.stopCause instanceof SandboxError);
        assert.equal(
          sandbox.stopCause.message,
          "Cannot continue: the controller lease's Engine connection was lost before compute was removed (the Engine stopped or restarted), so the sandbox was stopped",
        );
      } finally {
        await sandbox.destroy();
        await assertGone(privateEngine.engine, sandbox);
      }
    }, privateEngine.busyboxImage, privateEngine.endpoint);
  });
}, { timeout: 300_000 });
