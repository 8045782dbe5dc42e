// openSandbox, the short path: defaults filled in, a started sandbox, and destroy() removes
// what openSandbox made (its spill directory and the record) besides the sandbox itself.
import assert from "node:assert/strict";
import { mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OPEN_SPILL_PARENT, OPEN_SPILL_PREFIX, openSandbox } from "../../lib/docker/open_sandbox.ts";
import { SandboxError } from "../../lib/sandbox/errors.ts";
import { assertNamespaceEmpty } from "./_namespace.ts";
import { assertGone } from "./_sandbox.ts";
import { busyboxImage, endpoint, engineTest } from "./_engine.ts";

engineTest("openSandbox starts a sandbox as uid 65534 whose destroy removes its spill directory and record", async (engine) => {
  const records = await realpath(await mkdtemp(join(tmpdir(), "agentcell-open-records-")));
  const before = (await readdir(OPEN_SPILL_PARENT)).filter((name) => name.startsWith(OPEN_SPILL_PREFIX));
  try {
    const sandbox = await openSandbox({ endpoint: endpoint!, imageDigest: busyboxImage, profile: "linux-x64-cgroupfs", recordsDirectory: records });
    try {
      const made = (await readdir(OPEN_SPILL_PARENT)).filter((name) => name.startsWith(OPEN_SPILL_PREFIX) && !before.includes(name));
      assert.equal(made.length, 1, `one private spill directory: ${made}`);
      assert.deepEqual((await readdir(records)).sort(), [`${sandbox.id}.json`, `${sandbox.id}.lock`].sort());
      const result = await sandbox.run("/bin/sh", ["-c", 'echo "hi from $(id -u):$(id -g)"']);
      assert.deepEqual(result.exit, { kind: "exited", code: 0 });
      assert.equal(result.stdoutText, "hi from 65534:65534\n");
      await sandbox.writeFile("work/a.txt", "spilled?\n");
      assert.equal(new TextDecoder().decode(await sandbox.readFile("work/a.txt")), "spilled?\n");
      await sandbox.destroy();
      await assertGone(engine, sandbox);
      assert.deepEqual(await readdir(records), [], "the record and its lock are removed");
      assert.ok(!(await readdir(OPEN_SPILL_PARENT)).includes(made[0]), "the spill directory is removed");
    } finally {
      await sandbox.destroy();
    }
  } finally {
    await rm(records, { recursive: true, force: true });
  }
});

engineTest("openSandbox whose start fails after its resources were made and removed leaves no record behind", async (engine) => {
  const records = await realpath(await mkdtemp(join(tmpdir(), "agentcell-open-records-")));
  const namespace = `open-fail-${crypto.randomUUID().slice(0, 8)}`;
  try {
    // An allowlist whose egress proxy image has no node: the network, volume, keeper and
    // proxy are made, the proxy's program cannot run, and the start removes them all.
    await assert.rejects(
      openSandbox({
        endpoint: endpoint!,
        imageDigest: busyboxImage,
        profile: "linux-x64-cgroupfs",
        namespace,
        recordsDirectory: records,
        proxyImageDigest: busyboxImage,
        policy: { network: { kind: "allowlist", hosts: ["example.com"] } },
      }),
      (error) => error instanceof SandboxError,
    );
    await assertNamespaceEmpty(engine, namespace);
    assert.deepEqual(await readdir(records), [], "a record that names nothing left is removed with its lock");
  } finally {
    await rm(records, { recursive: true, force: true });
  }
});
