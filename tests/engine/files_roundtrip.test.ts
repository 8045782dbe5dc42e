// importTree then exportTree on a real Engine: bytes, modes, times and structure round-trip
// exactly; the host helpers do the same through a host directory.
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportToDirectory } from "../../lib/docker/files/export_to_directory.ts";
import { importDirectory } from "../../lib/docker/files/import_directory.ts";
import { SandboxConfigurationError } from "../../lib/sandbox/errors.ts";
import { engineTest } from "./_engine.ts";
import { bytes, importEntries, type Planned, readExport, runGuest, sha256 } from "./_files.ts";
import { withSandbox } from "./_sandbox.ts";

const UID = 65534;
const long = "l".repeat(120);

/** A tree with every size boundary, nested and implicit parents, PAX paths and odd modes. */
const plan: Planned[] = [
  { path: "mem", type: "directory", mode: 0o755, mtime: 1_600_000_000, data: new Uint8Array(0) },
  { path: "mem/empty.txt", type: "file", mode: 0o644, mtime: 1_600_000_001, data: new Uint8Array(0) },
  { path: "mem/one", type: "file", mode: 0o600, mtime: 1_600_000_002, data: bytes(1, 1) },
  { path: "mem/block-511", type: "file", mode: 0o640, mtime: 1_600_000_003, data: bytes(511, 2) },
  { path: "mem/block-512", type: "file", mode: 0o755, mtime: 1_600_000_004, data: bytes(512, 3) },
  { path: "mem/block-513", type: "file", mode: 0o2750, mtime: 1_600_000_005, data: bytes(513, 4) },
  { path: "mem/private", type: "directory", mode: 0o700, mtime: 1_600_000_006, data: new Uint8Array(0) },
  { path: "mem/private/chunks.bin", type: "file", mode: 0o444, mtime: 1_600_000_007, data: bytes(200_001, 5) },
  { path: "mem/private/big.bin", type: "file", mode: 0o664, mtime: 1_600_000_008, data: bytes(3 * 1024 * 1024 + 7, 6) },
  { path: `mem/${long}/ünïcödé ✓.txt`, type: "file", mode: 0o644, mtime: 1_600_000_009, data: bytes(77, 7) },
  { path: "mem/implicit/parents/leaf.txt", type: "file", mode: 0o644, mtime: 1_600_000_010, data: bytes(10, 8) },
];

engineTest("DockerSandbox importTree then exportTree round-trips bytes, modes, times and structure exactly", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const progress: { files: number; bytes: number }[] = [];
    const receipt = await sandbox.importTree(importEntries(plan), { onProgress: (p) => void progress.push(p) });
    const implicit = ["mem/" + long, "mem/implicit", "mem/implicit/parents"];
    const contentBytes = plan.reduce((sum, item) => sum + item.data.length, 0);
    assert.deepEqual(receipt, { files: plan.length + implicit.length, bytes: contentBytes });
    assert.deepEqual(progress.at(-1), receipt);
    assert.ok(progress.every((p, i) => i === 0 || (p.files >= progress[i - 1].files && p.bytes >= progress[i - 1].bytes)));

    // The non-root process can use what was imported, including the added parents.
    const listing = await runGuest(sandbox, "cat mem/implicit/parents/leaf.txt >/dev/null && touch mem/implicit/parents/new && stat -c '%u %a %n' mem/implicit mem/private");
    assert.equal(listing, `${UID} 755 mem/implicit\n${UID} 700 mem/private\n`);
    await sandbox.stop();

    const exported = await readExport(await sandbox.exportTree({ kind: "workspace" }));
    const byPath = new Map(exported.map((entry) => [entry.path, entry]));
    assert.equal(exported[0].path, "work", "the workspace root itself is not an entry; work comes first");
    for (const item of plan) {
      const entry = byPath.get(`work/${item.path}`);
      assert.ok(entry, `work/${item.path} exported`);
      assert.equal(entry.type, item.type, item.path);
      assert.equal(entry.mode, item.mode, `mode of ${item.path}`);
      assert.equal(entry.size, item.data.length, `size of ${item.path}`);
      assert.equal(entry.sha256, sha256(item.data), `bytes of ${item.path}`);
      assert.equal(entry.uid, UID);
      assert.equal(entry.gid, UID);
      if (item.type === "file") assert.equal(entry.mtime, item.mtime, `mtime of ${item.path}`);
    }
    // Directory times are set after their contents were written (Engine behaviour).
    assert.equal(byPath.get("work/mem/private")!.mtime, 1_600_000_006);
    for (const path of implicit) assert.equal(byPath.get(`work/${path}`)?.mode, 0o755, path);
    const expected = new Set(["work", ...plan.map((item) => `work/${item.path}`), ...implicit.map((path) => `work/${path}`), "work/mem/implicit/parents/new"]);
    assert.deepEqual(new Set(exported.map((entry) => entry.path)), expected);
  });
});

engineTest("importDirectory and exportToDirectory round-trip a host tree through a sandbox", async (engine) => {
  const root = await mkdtemp(join(tmpdir(), "agentcell-files-host-"));
  try {
    const source = join(root, "project");
    await mkdir(join(source, "src/util"), { recursive: true });
    await writeFile(join(source, "package.json"), '{"name":"demo"}\n');
    await writeFile(join(source, "src/index.js"), "console.log('hi');\n");
    await writeFile(join(source, "src/util/data.bin"), bytes(150_000, 9));
    // Several read buffers' worth, then many small files reading into the same reused buffers.
    const large = 5 * 1024 * 1024 + 7;
    await writeFile(join(source, "src/util/large.bin"), bytes(large, 13));
    await mkdir(join(source, "many"));
    for (let i = 0; i < 40; i++) await writeFile(join(source, `many/f${i}`), bytes(1000 + i, i));
    const manyBytes = 40 * 1000 + (39 * 40) / 2;
    await chmod(join(source, "src/index.js"), 0o755);
    await chmod(join(source, "src/util"), 0o750);
    await utimes(join(source, "package.json"), 1_650_000_000, 1_650_000_000);
    await withSandbox(engine, async (sandbox) => {
      const receipt = await sandbox.importTree(importDirectory(source));
      assert.deepEqual(receipt, { files: 5 + 2 + 40, bytes: 16 + 19 + 150_000 + large + manyBytes });
      await sandbox.stop();
      const target = join(root, "copy");
      const written = await exportToDirectory(await sandbox.exportTree({ kind: "subtree", path: "work" }), target, { base: "work" });
      assert.deepEqual(written, { files: receipt.files + 1, bytes: receipt.bytes });
      const small = Array.from({ length: 40 }, (_, i) => `many/f${i}`);
      for (const path of ["package.json", "src/index.js", "src/util/data.bin", "src/util/large.bin", ...small]) {
        assert.deepEqual(await readFile(join(target, path)), await readFile(join(source, path)), path);
        assert.equal((await stat(join(target, path))).mode & 0o7777, (await stat(join(source, path))).mode & 0o7777, path);
      }
      assert.equal((await stat(join(target, "src/util"))).mode & 0o777, 0o750);
      assert.equal(Math.floor((await stat(join(target, "package.json"))).mtimeMs / 1000), 1_650_000_000);
      assert.deepEqual((await readdir(root)).sort(), ["copy", "project"], "no temporary sibling is left");
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

engineTest("importDirectory links \"inside\" imports an npm-style tree whose .bin links work in the guest", async (engine) => {
  const root = await mkdtemp(join(tmpdir(), "agentcell-files-links-"));
  try {
    const source = join(root, "agent");
    await mkdir(join(source, "node_modules/.bin"), { recursive: true });
    await mkdir(join(source, "node_modules/pkg/bin"), { recursive: true });
    await writeFile(join(source, "node_modules/pkg/bin/cli.sh"), "#!/bin/sh\necho \"cli from $(dirname \"$(readlink -f \"$0\")\")\"\n");
    await chmod(join(source, "node_modules/pkg/bin/cli.sh"), 0o755);
    await symlink("../pkg/bin/cli.sh", join(source, "node_modules/.bin/cli"));
    await symlink("pkg", join(source, "node_modules/alias"));
    await withSandbox(engine, async (sandbox) => {
      const receipt = await sandbox.importTree(importDirectory(source, { links: "inside" }));
      assert.deepEqual(receipt, { files: 7, bytes: 59 });
      const result = await sandbox.run("/bin/sh", ["-c", "readlink node_modules/.bin/cli; readlink node_modules/alias; node_modules/.bin/cli; ls node_modules/alias/bin; stat -c %u node_modules/.bin/cli"]);
      assert.equal(result.stdoutText, `../pkg/bin/cli.sh\npkg\ncli from /workspace/work/node_modules/pkg/bin\ncli.sh\n${UID}\n`, result.stderrText);
      // A hand-made entry that would leave the tree is refused before anything is sent.
      const refused = await sandbox.importTree([{ path: "up", type: "symlink", target: "../../etc", mode: 0o777, size: 0 }]).catch((error) => error);
      assert.ok(refused instanceof SandboxConfigurationError && refused.code === "configuration", String(refused));
      assert.match(refused.message, /^Cannot import files: entry\[0\]\.target of symlink 'up' must not leave the imported tree/);
      assert.equal((await sandbox.run("/bin/sh", ["-c", "test -e up || test -L up; echo $?"])).stdoutText, "1\n");
      // Nothing is written through a link sent before.
      const below = await sandbox.importTree([
        { path: "via", type: "symlink", target: "node_modules", mode: 0o777, size: 0 },
        { path: "via/x.txt", type: "file", mode: 0o644, size: 0 },
      ]).catch((error) => error);
      assert.ok(below instanceof SandboxConfigurationError, String(below));
      assert.match(below.message, /^Cannot import files: entry\[1\] 'via\/x\.txt' lies below the symlink 'via' sent before; send each path once, and nothing below a link/);
      assert.equal((await sandbox.run("/bin/sh", ["-c", "test -e node_modules/x.txt; echo $?"])).stdoutText, "1\n");
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
