// sandbox.statsStream(): the keeper's Engine stats stream (one connection, through a
// pass-through fault proxy that accounts for it), thinned to an interval, closed when the
// sandbox stops, released by cancel().
import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import type { SandboxStats } from "../../lib/sandbox/stats.ts";
import { endpoint, engineTest, eventually, nodeImage } from "./_engine.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { readUntil, testPolicy, text, withSandbox } from "./_sandbox.ts";

const MIB = 1024 * 1024;
const STATS = { method: "GET", path: /^\/containers\/[0-9a-f]{64}\/stats$/ };

engineTest("DockerSandbox statsStream shows a CPU burner above half of the policy's cpus, at most one sample per interval, on one connection", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withSandbox(engine, async (sandbox) => {
    const burner = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "while :; do :; done"] }).start();
    const reader = sandbox.statsStream({ intervalMs: 2_000 }).getReader();
    const seen: SandboxStats[] = [];
    try {
      for (;;) {
        const { done, value } = await reader.read();
        assert.equal(done, false);
        seen.push(value!);
        if (value!.cpu.fraction > 0.5) break;
        assert.ok(seen.length < 60, `no sample above 0.5: ${seen.map((stats) => stats.cpu.fraction).join(", ")}`);
      }
    } finally {
      await reader.cancel();
    }
    const last = seen.at(-1)!;
    assert.equal(last.cpu.cpus, 1);
    assert.ok(last.cpu.fraction <= 1.2, `cpu ${last.cpu.fraction} of a 1-cpu limit`);
    for (let at = 1; at < seen.length; at++) {
      const gap = Date.parse(seen[at]!.readAt) - Date.parse(seen[at - 1]!.readAt);
      assert.ok(gap >= 2_000 - 250, `samples ${gap} ms apart with intervalMs 2000`);
    }
    const streams = proxy.matching(STATS);
    assert.equal(streams.length, 1, "one Engine connection for the whole stream");
    assert.ok(streams[0]!.target.includes("stream=true"), streams[0]!.target);
    await eventually("the stream's connection closed after cancel()", () => streams[0]!.closed || undefined);
    await burner.kill();
    assert.equal((await burner.exit).kind, "killed");
  }, { via: proxy.endpoint });
});

engineTest("DockerSandbox statsStream shows memory rising with a 100 MiB allocation", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const stream = sandbox.statsStream();
    const reader = stream.getReader();
    try {
      const first = await reader.read();
      assert.equal(first.done, false);
      const before = first.value!;
      const holder = await sandbox.reserveProcess({
        executable: "/usr/local/bin/node",
        args: ["-e", "globalThis.held = Buffer.alloc(100 * 2 ** 20, 1); console.log('held'); setInterval(() => {}, 1000)"],
      }).start();
      await readUntil(holder.stdout, (seen) => seen.includes("held"));
      for (let samples = 0;; samples++) {
        assert.ok(samples < 60, "the working set never rose by 100 MiB");
        const { done, value } = await reader.read();
        assert.equal(done, false);
        if (value!.memory.workingSetBytes >= before.memory.workingSetBytes + 100 * MIB) {
          assert.ok(value!.memory.usageBytes <= value!.memory.limitBytes);
          break;
        }
      }
      await holder.kill();
      await Promise.all([holder.stdout.pipeTo(new WritableStream()), text(holder.stderr)]);
    } finally {
      await reader.cancel();
    }
  }, { image: nodeImage, policy: { ...testPolicy, resources: { cpus: 1, memoryBytes: 512 * MIB, pids: 128 } } });
});

engineTest("DockerSandbox statsStream closes when the sandbox stops and holds no connection after; a stopped sandbox refuses a new one", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withSandbox(engine, async (sandbox) => {
    const reader = sandbox.statsStream().getReader();
    const first = await reader.read();
    assert.equal(first.done, false);
    const streams = proxy.matching(STATS);
    assert.equal(streams.length, 1);
    assert.equal(streams[0]!.closed, false, "the connection is held while the stream runs");
    await sandbox.stop();
    // Reads end (a sample read before the stop may come first), then the connection is gone.
    for (let reads = 0;; reads++) {
      assert.ok(reads < 5, "the stream did not close after stop()");
      if ((await reader.read()).done) break;
    }
    await eventually("the stream's connection closed after the stop", () => streams[0]!.closed || undefined);
    assert.throws(() => sandbox.statsStream(), (error) => error instanceof SandboxStoppedError && error.code === "stopped");
    assert.equal(proxy.matching(STATS).length, 1, "no new stats connection");
  }, { via: proxy.endpoint });
});

engineTest("DockerSandbox statsStream cancel before the first read opens no connection; cancel while reading releases it at once", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withSandbox(engine, async (sandbox) => {
    const idle = sandbox.statsStream();
    await idle.cancel();
    const reader = sandbox.statsStream().getReader();
    const pending = reader.read();
    const stats = await pending;
    assert.equal(stats.done, false);
    const next = reader.read();
    await reader.cancel();
    assert.equal((await next).done, true);
    await eventually("the stream's connection closed after cancel()", () => proxy.matching(STATS).every((request) => request.closed) || undefined);
    assert.ok(proxy.matching(STATS).length <= 2);
    assert.ok(sandbox.state === "running");
  }, { via: proxy.endpoint });
});

engineTest("DockerSandbox statsStream refuses an interval out of range, naming the field and its bounds", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await sandbox.stats();
    for (const intervalMs of [999, 3_600_001, 1.5, Number.NaN, "1000"]) {
      assert.throws(
        () => sandbox.statsStream({ intervalMs: intervalMs as number }),
        (error) =>
          error instanceof SandboxConfigurationError &&
          error.message === "Cannot stream sandbox stats: options.intervalMs must be an integer from 1000 to 3600000 milliseconds",
      );
    }
  });
});
