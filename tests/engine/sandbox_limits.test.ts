import assert from "node:assert/strict";
import { z } from "zod";
import { SandboxAbandonedOutputError, SandboxConfigurationError, SandboxDeadlineError, SandboxOutputLimitError } from "../../lib/sandbox/errors.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { engineTest, eventually } from "./_engine.ts";
import { assertNamesAbsent, readUntil, recordingPort, testPolicy, text, withBackend, withSandbox } from "./_sandbox.ts";

// The kernel's own counters, read by the guest without forking (ash builtins only), so a
// saturated PID limit cannot keep the reading from happening. cgroup v1 paths first, then v2.
const CGROUP_READERS = `
cg() { CG=none; for f in /sys/fs/cgroup/$1/$2 /sys/fs/cgroup/$3; do if [ -r "$f" ]; then CG=$f; return; fi; done; }
field() { FIELD=none; while read k v; do if [ "$k" = "$2" ]; then FIELD=$v; return; fi; done < "$1"; }
`;

engineTest("DockerSandbox memory exhaustion is killed inside the limit; the keeper survives and stops", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // busybox dd asks for one 256 MiB buffer and touches it reading /dev/zero: the cgroup's
    // OOM killer ends it at once (a node guest instead thrashes on its own file pages for
    // seconds to minutes before the kill). The guest then reports the kernel's counters.
    const script = CGROUP_READERS + `
dd if=/dev/zero of=/dev/null bs=256M count=1; status=$?
cg memory memory.limit_in_bytes memory.max; read limit < "$CG"
cg memory memory.max_usage_in_bytes memory.peak; read peak < "$CG"
cg memory memory.oom_control memory.events; field "$CG" oom_kill
echo "status $status limit $limit peak $peak oom_kill $FIELD"
exit $status`;
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
    await process.stdin.close();
    const [out] = await Promise.all([text(process.stdout), text(process.stderr)]);
    const report = /^status (\d+) limit (\d+) peak (\d+) oom_kill (\d+)$/m.exec(out);
    assert.ok(report, `guest report: ${out}`);
    const [status, limit, peak, kills] = report.slice(1).map(Number);
    assert.equal(status, 137, "the hog was killed by SIGKILL");
    assert.equal(limit, 64 * 1024 * 1024, "the kernel's limit is the policy's memoryBytes");
    assert.ok(peak <= limit, `peak usage ${peak} stays within ${limit}`);
    assert.ok(kills >= 1, `the cgroup's OOM killer acted (oom_kill ${kills})`);
    // The shell passed its child's 137 on, while the OOM killer acted: the receipt says so.
    assert.deepEqual(await process.exit, { kind: "exited", code: 137, oomKilled: true });
    const keeper = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`, {
      schema: z.looseObject({ State: z.looseObject({ Running: z.boolean() }) }),
    });
    assert.equal(keeper.value.State.Running, true, "the keeper survived");
    assert.equal(sandbox.state, "running");
    await sandbox.stop();
    assert.equal(sandbox.state, "stopped");
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 64 } } });
});

engineTest("DockerSandbox fork bomb stays inside the PID limit and the sandbox stays stoppable", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // A holding bomb: every shell forks two more and then becomes a sleeper, so the tasks
    // stay until the sandbox stops. The leader waits (without forking) for the kernel's
    // count of refused forks, then reports the limit and the count of tasks it holds. No `$(…)` after the bomb starts: a command substitution forks.
    const script = CGROUP_READERS + `
cg pids pids.events pids.events; events=$CG
cg pids pids.max pids.max; max=$CG
cg pids pids.current pids.current; current=$CG
b() { b & b & exec sleep 600; }
b &
polls=0; field "$events" max
while [ "$FIELD" = 0 ] && [ $polls -lt 600 ]; do polls=$((polls + 1)); read -t 0.05 x; field "$events" max; done
read m < "$max"; read c < "$current"
echo "max $m current $c refused $FIELD"
exec sleep 600`;
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
    // stdin stays open: the leader's pauses are reads of it that time out.
    const out = await readUntil(process.stdout, (seen) => /^max .*\n/m.test(seen));
    const report = /^max (\S+) current (\d+) refused (\d+)$/m.exec(out);
    assert.ok(report, `guest report: ${out}`);
    assert.equal(report[1], "24", "the kernel's pids.max is the policy's pids");
    assert.ok(Number(report[3]) > 0, `the kernel refused forks at the limit (refused ${report[3]})`);
    assert.ok(Number(report[2]) <= 24, `${report[2]} tasks with a limit of 24`);
    const err = await readUntil(process.stderr, (seen) => seen.includes("can't fork"));
    assert.match(err, /can't fork: Resource temporarily unavailable/);
    const stats = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/stats`, {
      query: { stream: false, "one-shot": true },
      schema: z.looseObject({ pids_stats: z.looseObject({ current: z.number(), limit: z.number().optional() }) }),
    });
    assert.ok(stats.value.pids_stats.current <= 24, `${stats.value.pids_stats.current} tasks while the bomb holds`);
    await sandbox.stop();
    assert.equal(sandbox.state, "stopped");
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 24 } } });
});

engineTest("DockerSandbox a process's timeoutMs ends a fork bomb that holds every PID; the sandbox runs on and starts the next process", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const pids = async () => {
      const stats = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/stats`, {
        query: { stream: false, "one-shot": true },
        schema: z.looseObject({ pids_stats: z.looseObject({ current: z.number() }) }),
      });
      return stats.value.pids_stats.current;
    };
    const idle = await pids();
    // The holding bomb of the test above, in the process's own process group. Its leader
    // waits (without forking) until the kernel refused a fork, reports it and sleeps; the
    // process's timeoutMs then ends the whole group. timeoutMs is only a generous bound on
    // how long 24 forks take: the report must come first, or the test fails naming it.
    const script = CGROUP_READERS + `
cg pids pids.events pids.events; events=$CG
b() { b & b & exec sleep 600; }
b &
polls=0; field "$events" max
while [ "$FIELD" = 0 ] && [ $polls -lt 600 ]; do polls=$((polls + 1)); read -t 0.05 x; field "$events" max; done
echo "refused $FIELD"
exec sleep 600`;
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script], timeoutMs: 8_000 }).start();
    const out = await readUntil(process.stdout, (seen) => /^refused .*\n/m.test(seen))
      .catch((error) => assert.fail(`the bomb did not fill the PID limit before its timeoutMs ended it: ${error}`));
    const refused = Number(/^refused (\d+)$/m.exec(out)?.[1]);
    assert.ok(refused > 0, `the kernel refused forks at the limit: the bomb holds every PID (${out.trim()})`);
    assert.deepEqual(await process.exit, { kind: "killed", reason: "timeout", code: 137 });
    assert.equal(sandbox.state, "running", `the sandbox runs on (stop cause ${sandbox.stopCause})`);
    // The room the kill may have needed is taken back: the limit is the policy's again.
    await eventually("the PID limit set back", async () => ((await inspectContainer(engine, sandbox.resources.keeperId)).HostConfig.PidsLimit === 24 ? true : undefined));
    await eventually("the bomb's tasks to be gone", async () => ((await pids()) <= idle ? true : undefined));
    const next = await sandbox.run("/bin/echo", ["after the bomb"]);
    assert.deepEqual(next.exit, { kind: "exited", code: 0 });
    assert.equal(next.stdoutText, "after the bomb\n");
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 24 } } });
});

engineTest("DockerSandbox (processes \"one\") output flood with a reader that stops reading stops the sandbox with the overflow error", async (engine) => {
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
  }, { policy: { ...testPolicy, processes: "one" } });
});

engineTest("DockerSandbox (processes \"one\") abandoning an output reader stops the sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "while :; do echo tick; sleep 0.05; done"] }).start();
    const reader = process.stderr.getReader();
    await reader.cancel("not interested");
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxAbandonedOutputError);
  }, { policy: { ...testPolicy, processes: "one" } });
});

engineTest("DockerSandbox execution deadline stops the whole sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    assert.ok(sandbox.stopCause instanceof SandboxDeadlineError, `stop cause ${sandbox.stopCause}`);
    assert.equal(sandbox.state, "stopped");
  }, { policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 }, execution: { kind: "deadline", timeoutMs: 1500 } } });
});

engineTest("DockerSandbox refuses cpus above the daemon's NCPU and memoryBytes above its MemTotal (the daemon's real figures) before anything is created", async (engine) => {
  const { NCPU: cpus, MemTotal: memory } = await engine.info();
  assert.ok(cpus !== undefined && memory !== undefined, "the daemon reports NCPU and MemTotal");
  const info = { NCPU: cpus, MemTotal: memory };
  await withBackend(async (backend) => {
    const cases = [
      [{ ...testPolicy.resources, cpus: info.NCPU + 1 }, `Cannot start sandbox: policy.resources.cpus is ${info.NCPU + 1}, more than the ${info.NCPU} CPUs of the daemon's host (GET /info NCPU): set policy.resources.cpus to at most ${info.NCPU}`],
      [{ ...testPolicy.resources, memoryBytes: 2 ** 52 }, `Cannot start sandbox: policy.resources.memoryBytes is ${2 ** 52}, more than the ${info.MemTotal} bytes of memory of the daemon's host (GET /info MemTotal), so it would be no limit: set policy.resources.memoryBytes to at most ${info.MemTotal}`],
    ] as const;
    for (const [resources, message] of cases) {
      const port = recordingPort();
      const reservation = backend.reserve({ policy: { ...testPolicy, resources } }, port);
      await assert.rejects(reservation.start(), (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === message);
      assert.deepEqual(port.records, [], "refused before the planned record");
      await assertNamesAbsent(engine, reservation.names);
    }
  });
});
