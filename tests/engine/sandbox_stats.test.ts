// sandbox.stats(): one sample of the keeper's cgroup while guest processes burn CPU and
// allocate memory.
import assert from "node:assert/strict";
import { SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { readUntil, testPolicy, text, withSandbox } from "./_sandbox.ts";
import { untilListening, withPortSandbox } from "./_ports.ts";

const MIB = 1024 * 1024;

engineTest("DockerSandbox stats reports the policy's limits and an idle sandbox; stopped, it throws the stop cause", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const stats = await sandbox.stats();
    assert.equal(stats.cpu.cpus, 1);
    assert.ok(stats.cpu.fraction >= 0 && stats.cpu.fraction < 0.5, `idle cpu ${stats.cpu.fraction}`);
    assert.ok(stats.cpu.totalNs > 0);
    assert.equal(stats.memory.limitBytes, 256 * MIB);
    assert.ok(stats.memory.usageBytes > 0 && stats.memory.workingSetBytes <= stats.memory.usageBytes);
    assert.equal(stats.pids.limit, 128);
    assert.ok(stats.pids.current >= 1);
    assert.deepEqual(stats.network, { rxBytes: 0, txBytes: 0 });
    assert.ok(!Number.isNaN(Date.parse(stats.readAt)));
    assert.ok(Object.isFrozen(stats) && Object.isFrozen(stats.memory));
    await sandbox.stop();
    await assert.rejects(sandbox.stats(), (error) => error instanceof SandboxStoppedError && error.code === "stopped");
  });
});

engineTest("DockerSandbox stats shows a CPU burner above half of the policy's cpus", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const burner = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "while :; do :; done"] }).start();
    const busy = await eventually("cpu above 0.5 of the sandbox's cpus", async () => {
      const stats = await sandbox.stats();
      return stats.cpu.fraction > 0.5 ? stats : undefined;
    });
    assert.ok(busy.cpu.fraction <= 1.2, `cpu ${busy.cpu.fraction} of a 1-cpu limit`);
    await burner.kill();
    assert.equal((await burner.exit).kind, "killed");
  });
});

engineTest("DockerSandbox stats shows memory rising with a 100 MiB allocation", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const before = await sandbox.stats();
    const holder = await sandbox.reserveProcess({
      executable: "/usr/local/bin/node",
      args: ["-e", "globalThis.held = Buffer.alloc(100 * 2 ** 20, 1); console.log('held'); setInterval(() => {}, 1000)"],
    }).start();
    await readUntil(holder.stdout, (seen) => seen.includes("held"));
    const after = await eventually("the working set 100 MiB above its start", async () => {
      const stats = await sandbox.stats();
      return stats.memory.workingSetBytes >= before.memory.workingSetBytes + 100 * MIB ? stats : undefined;
    });
    assert.ok(after.memory.usageBytes >= after.memory.workingSetBytes);
    assert.ok(after.memory.usageBytes <= after.memory.limitBytes);
    await holder.kill();
    await Promise.all([holder.stdout.pipeTo(new WritableStream()), text(holder.stderr)]);
    assert.equal((await holder.exit).kind, "killed");
  }, { image: nodeImage, policy: { ...testPolicy, resources: { cpus: 1, memoryBytes: 512 * MIB, pids: 128 } } });
});

engineTest("DockerSandbox stats reports the relay and the egress proxy as sidecars, each against its own limits", async (engine) => {
  const { RELAY_LIMITS } = await import("../../lib/docker/ports/relay_container.ts");
  const { PROXY_LIMITS } = await import("../../lib/docker/egress/proxy_container.ts");
  const policy = { ...testPolicy, network: { kind: "allowlist" as const, hosts: ["example.invalid"] } };
  await withPortSandbox(engine, async (sandbox) => {
    const before = await sandbox.stats();
    assert.deepEqual(Object.keys(before.sidecars ?? {}), ["proxy"], "no relay before the first connect()");
    await sandbox.reserveProcess({ executable: "/bin/httpd", args: ["-f", "-p", "127.0.0.1:7200", "-h", "/tmp"] }).start();
    await untilListening(sandbox, 7200);
    const stats = await sandbox.stats();
    const { proxy, relay } = stats.sidecars ?? {};
    assert.ok(proxy && relay, JSON.stringify(stats.sidecars));
    assert.equal(relay.cpu.cpus, RELAY_LIMITS.cpus);
    assert.equal(relay.memory.limitBytes, RELAY_LIMITS.memoryBytes);
    assert.equal(proxy.cpu.cpus, PROXY_LIMITS.cpus);
    assert.equal(proxy.memory.limitBytes, PROXY_LIMITS.memoryBytes);
    for (const sidecar of [proxy, relay]) assert.ok(sidecar.memory.usageBytes > 0 && sidecar.pids.current >= 1, JSON.stringify(sidecar));
    assert.equal(stats.memory.limitBytes, 256 * MIB, "the top level is still the keeper against the policy");
    assert.ok(Object.isFrozen(stats.sidecars));
  }, { policy, image: nodeImage });
});
