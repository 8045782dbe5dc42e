// policy.ulimits from inside the guest: every exec reads its own /proc/self/limits (and the
// keeper's /proc/1/limits), the keeper's HostConfig.Ulimits reads back, and the limits hold
// when pushed past (EMFILE at nofile, EAGAIN at nproc). nproc counts per uid on the whole
// host, so the tests that push it use a uid of their own (per runtime), not one other
// sandboxes on the shared engine run as.
import assert from "node:assert/strict";
import { z } from "zod";
import { normalizePolicy, type SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import type { SandboxUlimits } from "../../lib/sandbox/ulimits.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { testPolicy, withSandbox } from "./_sandbox.ts";

/** `/proc/<pid>/limits` rows we set: the name the kernel prints → [soft, hard]. */
function limitsOf(table: string): Map<string, [string, string]> {
  const rows = new Map<string, [string, string]>();
  for (const line of table.split("\n")) {
    const match = /^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)/u.exec(line);
    if (match) rows.set(match[1], [match[2], match[3]]);
  }
  return rows;
}

function expectedRows(ulimits: SandboxUlimits): [string, number][] {
  return [
    ["Max core file size", 0],
    ["Max open files", ulimits.nofile],
    ["Max processes", ulimits.nproc],
    ["Max msgqueue size", ulimits.msgqueue],
    ["Max locked memory", ulimits.memlock],
    ["Max pending signals", ulimits.sigpending],
  ];
}

const hostUlimits = z.looseObject({
  HostConfig: z.looseObject({ Ulimits: z.array(z.looseObject({ Name: z.string(), Soft: z.number(), Hard: z.number() })).nullable() }),
});

/** A uid pair no other test (or runtime of this file) runs as. */
function ownUser(): { user: { uid: number; gid: number }; keeperUser: { uid: number; gid: number } } {
  const globals = globalThis as { Deno?: unknown; Bun?: unknown };
  const base = 47_110 + (globals.Deno !== undefined ? 0 : globals.Bun !== undefined ? 2 : 4);
  return { user: { uid: base, gid: base }, keeperUser: { uid: base + 1, gid: base + 1 } };
}

for (
  const [label, ulimits] of [
    ["the defaults", undefined],
    ["explicit values", { nofile: 100, nproc: 5000, msgqueue: 16_384, memlock: 32_768, sigpending: 200 }],
  ] as const
) {
  engineTest(`DockerSandbox execs and the keeper run under policy.ulimits (${label}), soft = hard, core 0/0`, async (engine) => {
    const policy: SandboxPolicyInput = { ...testPolicy, ulimits };
    const expected = normalizePolicy(policy).ulimits;
    await withSandbox(engine, async (sandbox) => {
      const result = await sandbox.run("/bin/sh", ["-c", "cat /proc/self/limits; echo ---; cat /proc/1/limits"]);
      assert.deepEqual(result.exit, { kind: "exited", code: 0 });
      const [exec, keeper] = result.stdoutText.split("---\n").map(limitsOf);
      for (const [row, value] of expectedRows(expected)) {
        assert.deepEqual(exec.get(row), [String(value), String(value)], `exec: ${row}`);
        assert.deepEqual(keeper.get(row), [String(value), String(value)], `keeper: ${row}`);
      }
      const inspect = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`, { schema: hostUlimits });
      const readback = Object.fromEntries((inspect.value.HostConfig.Ulimits ?? []).map((limit) => [limit.Name, [limit.Soft, limit.Hard]]));
      const { nofile, nproc, msgqueue, memlock, sigpending } = expected;
      assert.deepEqual(readback, {
        core: [0, 0],
        nofile: [nofile, nofile],
        nproc: [nproc, nproc],
        msgqueue: [msgqueue, msgqueue],
        memlock: [memlock, memlock],
        sigpending: [sigpending, sigpending],
      });
      if (ulimits === undefined) assert.deepEqual(expected, { nofile: 4096, nproc: 65_536, msgqueue: 819_200, memlock: 65_536, sigpending: 1024 });
    }, { policy });
  });
}

// Opens /dev/null until open(2) fails; lowest-free allocation makes the last descriptor
// nofile - 1 when every one below it is in use.
const OPEN_FILES = `
const fs = require("node:fs");
let last = -1;
try { for (;;) last = fs.openSync("/dev/null", "r"); }
catch (error) { console.log(JSON.stringify({ code: error.code, last })); }
`;

// Spawns sleepers until spawn fails, then counts the tasks (threads included) of this uid
// and the sandbox's pids cgroup, so the failure is shown to come from nproc, not PidsLimit.
const SPAWN = `
const fs = require("node:fs");
const { spawn } = require("node:child_process");
const uid = process.getuid();
function tasksOfUid() {
  let count = 0;
  for (const pid of fs.readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name))) {
    let tasks = [];
    try { tasks = fs.readdirSync("/proc/" + pid + "/task"); } catch { continue; }
    for (const task of tasks) {
      try {
        const status = fs.readFileSync("/proc/" + pid + "/task/" + task + "/status", "utf8");
        if (Number(/^Uid:\\s+(\\d+)/m.exec(status)[1]) === uid) count += 1;
      } catch {}
    }
  }
  return count;
}
function pidsCurrent() {
  for (const path of ["/sys/fs/cgroup/pids/pids.current", "/sys/fs/cgroup/pids.current"]) {
    try { return Number(fs.readFileSync(path, "utf8")); } catch {}
  }
  return -1;
}
const children = [];
(async () => {
  for (let i = 0; i < 200; i += 1) {
    const child = spawn("/bin/sleep", ["600"], { stdio: "ignore" });
    const outcome = await new Promise((resolve) => { child.once("spawn", () => resolve("ok")); child.once("error", (error) => resolve(error.code)); });
    if (outcome !== "ok") {
      console.log(JSON.stringify({ code: outcome, spawned: children.length, tasks: tasksOfUid(), pids: pidsCurrent() }));
      break;
    }
    children.push(child);
  }
  for (const child of children) child.kill("SIGKILL");
})();
`;

engineTest("DockerSandbox open files past policy.ulimits.nofile fail with EMFILE; forks past ulimits.nproc fail with EAGAIN below PidsLimit", async (engine) => {
  const nofile = 64;
  const nproc = 24;
  const pids = 128;
  await withSandbox(engine, async (sandbox) => {
    const files = await sandbox.run("/usr/local/bin/node", ["-e", OPEN_FILES]);
    assert.deepEqual(files.exit, { kind: "exited", code: 0 }, files.stderrText);
    assert.deepEqual(JSON.parse(files.stdoutText), { code: "EMFILE", last: nofile - 1 });

    const spawned = await sandbox.run("/usr/local/bin/node", ["-e", SPAWN]);
    assert.deepEqual(spawned.exit, { kind: "exited", code: 0 }, spawned.stderrText);
    const report = JSON.parse(spawned.stdoutText) as { code: string; spawned: number; tasks: number; pids: number };
    assert.equal(report.code, "EAGAIN", spawned.stdoutText);
    assert.ok(report.spawned >= 1 && report.spawned < nproc, `spawned ${report.spawned} sleepers`);
    assert.ok(report.tasks <= nproc, `the uid holds ${report.tasks} tasks, at most nproc ${nproc}`);
    assert.ok(report.pids > 0 && report.pids < pids, `the pids cgroup holds ${report.pids} of ${pids}: not the limit that refused`);
  }, {
    image: nodeImage,
    config: ownUser(),
    policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids }, ulimits: { nofile, nproc } },
  });
});
