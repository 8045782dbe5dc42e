// The kernel's OOM killer in a sandbox: a process it ends has `oomKilled: true` on its
// receipt (the keeper's `oom` events while it ran); a SIGKILL from anyone else has not.
import assert from "node:assert/strict";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";

const MIB = 1024 * 1024;
const policy = { resources: { cpus: 1, memoryBytes: 128 * MIB, pids: 128 } };

engineTest("DockerSandbox: a process the OOM killer ends has receipt { exited, 137, oomKilled: true }; the sandbox keeps running", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // Fill memory 1 MiB at a time (off the V8 heap, so only the cgroup's limit stops it).
    const hog = await sandbox.run("/usr/local/bin/node", ["-e", "const held = []; for (;;) held.push(Buffer.alloc(2 ** 20, 1));"]);
    assert.deepEqual(hog.exit, { kind: "exited", code: 137, oomKilled: true });
    assert.equal(sandbox.state, "running");
    assert.equal(sandbox.stopCause, undefined);
    // A later SIGKILL that is not the OOM killer's is not called one.
    const killed = await sandbox.run("/bin/sh", ["-c", "kill -9 $$"]);
    assert.deepEqual(killed.exit, { kind: "exited", code: 137 });
    assert.equal((await sandbox.run("/bin/echo", ["still here"])).stdoutText, "still here\n");
  }, { policy, image: nodeImage });
});
