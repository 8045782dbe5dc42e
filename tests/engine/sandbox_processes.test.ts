// sandbox.processes(): the Engine's process list of the keeper, as rows: the agent's
// processes with their parent, uid and command; the backend's own marked guard; a command
// line past MAX_PROCESS_COMMAND_CHARS cut and flagged; a stopped sandbox refused.
import assert from "node:assert/strict";
import { MAX_PROCESS_COMMAND_CHARS } from "../../lib/sandbox/processes.ts";
import { SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { engineTest } from "./_engine.ts";
import { readUntil, withSandbox } from "./_sandbox.ts";

engineTest("DockerSandbox.processes lists the agent's processes with parent, uid and command; the keeper is a guard", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const long = "x".repeat(MAX_PROCESS_COMMAND_CHARS + 500);
    const shell = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "/bin/sleep 300 & echo up; wait; :", long] }).start();
    await readUntil(shell.stdout, (seen) => seen.includes("up\n"));
    const rows = await sandbox.processes();
    const agents = rows.filter((row) => !row.guard);
    const sleeper = agents.find((row) => row.command === "/bin/sleep 300");
    assert.ok(sleeper, JSON.stringify(rows));
    assert.equal(sleeper.uid, 65534);
    const parent = agents.find((row) => row.pid === sleeper.ppid);
    assert.ok(parent, `the sleeper's parent ${sleeper.ppid} is listed: ${JSON.stringify(rows)}`);
    assert.equal(parent.commandCut, true);
    assert.equal(parent.command.length, MAX_PROCESS_COMMAND_CHARS);
    assert.ok(parent.command.startsWith("/bin/sh -c "), parent.command);
    assert.ok(rows.some((row) => row.guard), "the keeper is listed as a guard");
    for (const row of rows) {
      assert.ok(Number.isSafeInteger(row.pid) && row.pid > 0);
      assert.ok(row.rssBytes >= 0 && row.rssBytes % 1024 === 0);
      assert.ok(row.elapsedSeconds >= 0);
    }
    assert.deepEqual(rows.map((row) => row.pid), rows.map((row) => row.pid).toSorted((a, b) => a - b));
    await shell.kill();
    await sandbox.stop();
    await assert.rejects(sandbox.processes(), SandboxStoppedError);
  });
});
