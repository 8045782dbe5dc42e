// policy.tmpfs from inside the guest and in the keeper's readback: /home/sandbox, /tmp and
// /dev/shm are tmpfs mounts of the policy's sizes and inode bound (ShmSize is sent too), a
// write past a size or a file past the inode bound fails with ENOSPC, and the sandbox keeps
// running.
import assert from "node:assert/strict";
import { z } from "zod";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { engineTest } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";

const MIB = 1024 * 1024;
const inodes = 64;
const policy: SandboxPolicyInput = {
  resources: { cpus: 1, memoryBytes: 64 * MIB, pids: 64 },
  tmpfs: { homeBytes: 4 * MIB, tmpBytes: 3 * MIB, shmBytes: MIB, inodes },
};

const hostConfig = z.looseObject({
  HostConfig: z.looseObject({ ShmSize: z.number(), Tmpfs: z.record(z.string(), z.string()) }),
});

// For each mount: its size in 1 KiB blocks and inode total (df), then how many files fit
// before touch fails, then what a write past the size says.
const PROBE = `
for d in /home/sandbox /tmp /dev/shm; do
  set -- $(df -k "$d" | tail -n 1); echo "$d size_kib=$2"
  set -- $(df -i "$d" | tail -n 1); echo "$d inodes=$2"
  mkdir "$d/many"; i=0; while touch "$d/many/f$i" 2>/dev/null; do i=$((i + 1)); done
  echo "$d files=$i"; touch "$d/many/past" 2>&1 | sed "s#^#$d touch: #"; rm -r "$d/many"
  { dd if=/dev/zero of="$d/big" bs=65536 count=80; } 2>&1 | grep '^dd:' | sed "s#^#$d write: #"; rm -f "$d/big"
done
`;

engineTest("DockerSandbox tmpfs mounts hold policy.tmpfs sizes and inode bound from inside (ENOSPC past each); ShmSize and Tmpfs read back", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const inspect = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`, { schema: hostConfig });
    assert.equal(inspect.value.HostConfig.ShmSize, MIB);
    assert.deepEqual(inspect.value.HostConfig.Tmpfs, {
      "/home/sandbox": `rw,nosuid,nodev,size=${4 * MIB},nr_inodes=${inodes},uid=65534,gid=65534,mode=0700`,
      "/tmp": `rw,nosuid,nodev,size=${3 * MIB},nr_inodes=${inodes},uid=65534,gid=65534,mode=1777`,
      "/dev/shm": `rw,nosuid,nodev,noexec,size=${MIB},nr_inodes=${inodes},mode=1777`,
    });
    const result = await sandbox.run("/bin/sh", ["-c", PROBE]);
    assert.deepEqual(result.exit, { kind: "exited", code: 0 }, result.stderrText);
    const lines = result.stdoutText.trim().split("\n");
    for (const [path, bytes] of [["/home/sandbox", 4 * MIB], ["/tmp", 3 * MIB], ["/dev/shm", MIB]] as const) {
      assert.ok(lines.includes(`${path} size_kib=${bytes / 1024}`), `${path} size in:\n${result.stdoutText}`);
      assert.ok(lines.includes(`${path} inodes=${inodes}`), `${path} inodes in:\n${result.stdoutText}`);
      // the mount's root and the "many" directory take two of the inodes
      assert.ok(lines.includes(`${path} files=${inodes - 2}`), `${path} file count in:\n${result.stdoutText}`);
      assert.ok(lines.some((line) => line.startsWith(`${path} touch: `) && line.endsWith("No space left on device")), `${path} touch past the bound:\n${result.stdoutText}`);
      assert.ok(lines.some((line) => line.startsWith(`${path} write: `) && line.endsWith("No space left on device")), `${path} write past the size:\n${result.stdoutText}`);
    }
    assert.equal(sandbox.state, "running");
    assert.deepEqual((await sandbox.run("/bin/true", [])).exit, { kind: "exited", code: 0 }, "the sandbox still runs processes");
  }, { policy });
});
