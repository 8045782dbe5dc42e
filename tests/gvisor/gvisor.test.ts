// The gVisor lane (scripts/test.sh, Node only): the lifecycle, hardening-from-inside, limits
// and file checks once under profile linux-x64-gvisor, on an engine that registers runsc
// (scripts/test-engine.sh does). Where gVisor differs from runc it is asserted as such:
// - the guest sees gVisor's synthetic kernel: its own /proc/cmdline and MemTotal = the limit;
// - /proc/self/status has no NoNewPrivs line (runsc applies no_new_privs to the sandbox
//   itself; the guest has no setuid binaries either way);
// - memory exhaustion and a fork bomb end the whole sandbox, not just the offending
//   process: the sentry's memory and threads are what the container's cgroup limits, so
//   the kernel's OOM killer or the PID limit hits the sentry. The library notices the keeper
//   stopping and reports the sandbox stopped;
// - the agent's own oom_score_adj write (the process wrapper's `echo 1000`) works.
import assert from "node:assert/strict";
import { z } from "zod";
import { SandboxDeadlineError, SandboxStoppedError, SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { engineTest, eventually, nodeImage } from "../engine/_engine.ts";
import { bytes, importEntries, type Planned, readExport, sha256 } from "../engine/_files.ts";
import { assertGone, recordingPort, readUntil, text, withBackend, withSandbox } from "../engine/_sandbox.ts";

const config = { profile: "linux-x64-gvisor" } as const;
const MiB = 1024 * 1024;
/** The profile's minimum PID limit; every sandbox here uses it. */
const policy = { resources: { cpus: 1, memoryBytes: 256 * MiB, pids: 256 } };

engineTest("gVisor sandbox runs under runsc: records every resource first, reads back the runtime, destroy removes exactly those", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const sandbox = await backend.reserve({ policy }, port).start();
    try {
      const keeper = await inspectContainer(engine, sandbox.resources.keeperId);
      assert.equal(keeper.HostConfig.Runtime, "runsc");
      assert.equal(keeper.HostConfig.PidsLimit, 256);
      // gVisor's netstack ignores the socket buffer sysctls, so none are sent (lib/docker/keeper/socket_buffers.ts).
      assert.deepEqual(keeper.HostConfig.Sysctls ?? {}, {});
      const states = port.records.map((record) => JSON.stringify(Object.values(record.resources as Record<string, { state: string }>).map((r) => r.state)));
      assert.equal(states[0], JSON.stringify(["planned", "planned"]), "planned before any effect");
      assert.equal(states.at(-1), JSON.stringify(["created", "created"]));
      // The synthetic kernel: gVisor's command line, and the memory limit as the machine's memory.
      const kernel = await sandbox.run("/bin/sh", ["-c", "cat /proc/cmdline; grep MemTotal /proc/meminfo"]);
      assert.match(kernel.stdoutText, /gvisor/, "gVisor's /proc/cmdline, not the host's");
      assert.match(kernel.stdoutText, new RegExp(`MemTotal:\\s+${256 * 1024} kB`), "MemTotal is the policy's memoryBytes");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, undefined, undefined, undefined, config);
});

engineTest("gVisor sandbox hardening holds inside the guest; the agent cannot signal its keeper", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const probe = [
      "if touch /rootfs-write 2>/dev/null; then echo root=writable; else echo root=readonly; fi",
      "echo id=$(id -u):$(id -g)",
      "grep -E '^CapEff:' /proc/self/status | tr -d '\\t '",
      "echo nnp=$(grep -c '^NoNewPrivs:' /proc/self/status)",
      "echo net=$(ls /sys/class/net | tr '\\n' ' ')",
      "echo pid1=$(cat /proc/1/cmdline | tr '\\0' ' ')",
      "echo pid1uid=$(stat -c %u /proc/1)",
      "kill -TERM 1 2>/dev/null && echo kill=yes || echo kill=no",
      "echo oom=$(cat /proc/self/oom_score_adj)",
      "touch \"$HOME/h\" && echo home=writable",
      "touch \"$TMPDIR/t\" && echo tmp=writable",
      "touch /workspace/work/w && echo work=writable",
      "echo cwd=$(pwd)",
    ].join("; ");
    const result = await sandbox.run("/bin/sh", ["-c", probe]);
    assert.equal(result.stderrText, "");
    assert.deepEqual(result.exit, { kind: "exited", code: 0 });
    const lines = Object.fromEntries(result.stdoutText.trim().split("\n").map((line) => {
      const at = line.indexOf(line.includes("=") ? "=" : ":");
      return [line.slice(0, at), line.slice(at + 1).trim()];
    }));
    assert.equal(lines.root, "readonly");
    assert.equal(lines.id, "65534:65534");
    assert.equal(lines.CapEff, "0000000000000000");
    assert.equal(lines.nnp, "0", "gVisor's /proc/self/status has no NoNewPrivs line");
    assert.equal(lines.net, "lo");
    assert.match(lines.pid1, /^\/bin\/sh -c trap/);
    assert.equal(lines.pid1uid, "65533", "the keeper runs as the keeper user");
    assert.equal(lines.kill, "no", "TERM to the keeper is refused");
    assert.equal(lines.oom, "1000", "the process wrapper raised its own OOM score");
    assert.equal(lines.home, "writable");
    assert.equal(lines.tmp, "writable");
    assert.equal(lines.work, "writable");
    assert.equal(lines.cwd, "/workspace/work");
    assert.equal(sandbox.state, "running", "the keeper survived the attempt");
  }, { policy, config });
});

engineTest("gVisor sandbox memory exhaustion ends the whole sandbox, which reports stopped", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "dd if=/dev/zero of=/dev/null bs=256M count=1; echo status $?"] }).start();
    await process.stdin.close();
    const [out, , receipt] = await Promise.all([text(process.stdout), text(process.stderr), process.exit]);
    assert.doesNotMatch(out, /status 0/, "the 256 MiB buffer never fit in 64 MiB");
    assert.ok(receipt.kind === "unavailable" || (receipt.kind === "exited" && receipt.code >= 128), JSON.stringify(receipt));
    await eventually("the sandbox noticing its keeper stopped", () => sandbox.state === "running" ? undefined : true);
    assert.ok(sandbox.stopCause instanceof SandboxStoppedError && /keeper container stopped on its own/.test(sandbox.stopCause.message), String(sandbox.stopCause));
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * MiB, pids: 256 } }, config });
});

engineTest("gVisor sandbox fork bomb stays inside the PID limit: the sandbox ends and reports stopped", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const stats = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/stats`, {
      query: { stream: false, "one-shot": true },
      schema: z.looseObject({ pids_stats: z.looseObject({ current: z.number(), limit: z.number().optional() }) }),
    });
    assert.equal(stats.value.pids_stats.limit, 256, "the host's PID limit of the sandbox");
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "b() { b & b & exec sleep 600; }; b & echo started; exec sleep 600"] }).start();
    await readUntil(process.stdout, (seen) => seen.includes("started"));
    await eventually("the bomb ending the sandbox", () => sandbox.state === "running" ? undefined : true, { deadlineMs: 120_000 });
    assert.ok(sandbox.stopCause instanceof SandboxStoppedError && /keeper container stopped on its own/.test(sandbox.stopCause.message), String(sandbox.stopCause));
    const receipt = await process.exit;
    assert.ok(receipt.kind === "unavailable" || (receipt.kind === "exited" && receipt.code >= 128), JSON.stringify(receipt));
  }, { policy, config });
}, { timeout: 180_000 });

engineTest("gVisor sandbox execution deadline stops the whole sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxDeadlineError, `stop cause ${sandbox.stopCause}`);
  }, { policy: { ...policy, execution: { kind: "deadline", timeoutMs: 1500 } }, config });
});

const plan: Planned[] = [
  { path: "tree", type: "directory", mode: 0o755, mtime: 1_600_000_000, data: new Uint8Array(0) },
  { path: "tree/small.txt", type: "file", mode: 0o644, mtime: 1_600_000_001, data: bytes(513, 1) },
  { path: "tree/private", type: "directory", mode: 0o700, mtime: 1_600_000_002, data: new Uint8Array(0) },
  { path: "tree/private/big.bin", type: "file", mode: 0o600, mtime: 1_600_000_003, data: bytes(3 * MiB + 7, 2) },
];

engineTest("gVisor sandbox files: writeFile/readFile while running, importTree then exportTree after stop, exact", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const data = bytes(1 * MiB + 5, 3);
    assert.deepEqual(await sandbox.writeFile("work/live/data.bin", data, { mode: 0o640 }), { files: 1, bytes: data.length });
    assert.deepEqual(await sandbox.readFile("work/live/data.bin", { maxBytes: data.length }), data);
    const inside = await sandbox.run("/bin/sh", ["-c", "sha256sum live/data.bin | cut -d' ' -f1; stat -c '%a %u:%g' live/data.bin"]);
    assert.equal(inside.stdoutText, `${sha256(data)}\n640 65534:65534\n`);
    const receipt = await sandbox.importTree(importEntries(plan));
    assert.deepEqual(receipt, { files: plan.length, bytes: plan.reduce((sum, item) => sum + item.data.length, 0) });
    await sandbox.stop();
    const exported = await readExport(await sandbox.exportTree({ kind: "subtree", path: "work/tree" }));
    const byPath = new Map(exported.map((entry) => [entry.path, entry]));
    for (const item of plan) {
      const entry = byPath.get(`work/${item.path}`);
      assert.ok(entry, `work/${item.path} exported`);
      assert.equal(entry.mode, item.mode, `mode of ${item.path}`);
      assert.equal(entry.sha256, sha256(item.data), `bytes of ${item.path}`);
      assert.equal(entry.uid, 65534);
    }
    const accessor = await inspectContainer(engine, sandbox.resources.accessorId!);
    assert.equal(accessor.HostConfig.Runtime, "runsc", "the never-started accessor names the profile's runtime too");
  }, { policy, config });
});

engineTest("gVisor sandbox connect() is refused with SandboxUnsupportedError before any relay is created (the guest's sockets are in gVisor's netstack)", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await assert.rejects(sandbox.connect(8080), (error: unknown) => {
      assert.ok(error instanceof SandboxUnsupportedError);
      assert.match(error.message, /^Cannot connect to port 8080 in the sandbox: the sandbox runs under gVisor \(runsc\)/);
      return true;
    });
    await assert.rejects(sandbox.forwardPort(8080), (error: unknown) => {
      assert.ok(error instanceof SandboxUnsupportedError);
      assert.match(error.message, /^Cannot forward port 8080 of the sandbox: the sandbox runs under gVisor \(runsc\)/);
      return true;
    });
    await assert.rejects(engine.request("GET", `/containers/${sandbox.names.relay}/json`), (error: unknown) => (error as { code?: string }).code === "not_found");
  }, { policy, config: { ...config, proxyImageDigest: nodeImage } });
});
