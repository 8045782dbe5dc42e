import assert from "node:assert/strict";
import { SandboxDeadlineError, SandboxOutputLimitError, SandboxAbandonedOutputError } from "../../lib/sandbox/errors.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { text, withSandbox } from "./_sandbox.ts";

engineTest("DockerSandbox memory exhaustion is killed inside the limit; the keeper survives and stops", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const hog = "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));";
    const process = await sandbox.reserveProcess({ executable: "/usr/local/bin/node", args: ["-e", hog] }).start();
    await process.stdin.close();
    await Promise.all([text(process.stdout), text(process.stderr)]);
    assert.deepEqual(await process.exit, { kind: "exited", code: 137 });
    const keeper = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`);
    assert.equal(keeper.status, 200);
    assert.equal(sandbox.state, "running");
    await sandbox.stop();
    assert.equal(sandbox.state, "stopped");
  }, { image: nodeImage, policy: { resources: { cpus: 1, memoryBytes: 96 * 1024 * 1024, pids: 64 } } });
});

engineTest("DockerSandbox fork bomb stays inside the PID limit and the sandbox stays stoppable", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // the count uses a glob (a shell builtin): no fork is needed once the limit is reached
    const script = "for i in $(seq 1 100); do sleep 600 >/dev/null 2>&1 & done 2>/dev/null; set -- /proc/[0-9]*; echo running=$#";
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
    await process.stdin.close();
    const out = await text(process.stdout);
    const running = Number(/running=(\d+)/.exec(out)?.[1]);
    assert.ok(running <= 24, `${running} processes with a limit of 24`);
    await sandbox.stop();
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 24 } } });
});

engineTest("DockerSandbox output flood with a reader that stops reading stops the sandbox with the overflow error", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "exec cat /dev/zero"], maxBufferedOutputBytes: 1024 * 1024 }).start();
    const reader = process.stdout.getReader();
    const first = await reader.read();
    assert.equal(first.done, false);
    // stop reading: the staging bound must trip
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxOutputLimitError, `stop cause ${sandbox.stopCause}`);
    assert.equal(sandbox.stopCause.code, "output_limit");
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) break;
    }, (error) => error instanceof SandboxOutputLimitError);
  });
});

engineTest("DockerSandbox abandoning an output reader stops the sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "while :; do echo tick; sleep 0.05; done"] }).start();
    const reader = process.stderr.getReader();
    await reader.cancel("not interested");
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxAbandonedOutputError);
  });
});

engineTest("DockerSandbox execution deadline stops the whole sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxDeadlineError, `stop cause ${sandbox.stopCause}`);
    assert.equal(sandbox.state, "stopped");
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 }, execution: { kind: "deadline", timeoutMs: 1500 } } });
});
