import assert from "node:assert/strict";
import { z } from "zod";
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
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "b() { b | b & }; b"] }).start();
    await process.stdin.close();
    const statsSchema = z.looseObject({ pids_stats: z.looseObject({ current: z.number(), limit: z.number().optional() }) });
    let peak = 0;
    for (let sample = 0; sample < 10; sample++) {
      const stats = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/stats`, {
        query: { stream: false, "one-shot": true },
        schema: statsSchema,
      });
      peak = Math.max(peak, stats.value.pids_stats.current);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(peak > 8, `the bomb ran (peak ${peak} tasks)`);
    assert.ok(peak <= 24, `${peak} tasks with a limit of 24`);
    await sandbox.stop();
    assert.equal(sandbox.state, "stopped");
    const receipt = await process.exit;
    assert.ok(receipt.kind === "unavailable" || receipt.kind === "exited");
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
