// createFileRecoveryStore: one JSON file per reservation, atomic replacement, corrupt files
// reported, bounded sizes, a private canonical directory. (The controller locks: lock.test.ts.)
import assert from "node:assert/strict";
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { createFileRecoveryStore } from "../../../lib/docker/recovery/store.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

const a = "a".repeat(32);
const b = "b".repeat(32);
/** A record that holds no resource (so the store keeps no controller lock for it). */
const idle = (reservationId: string, extra: Record<string, unknown> = {}) => ({ schema: "s.v2", reservationId, resources: {}, ...extra });

async function withDirectory(fn: (directory: string) => Promise<void>): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-store-")));
  try {
    await fn(join(root, "records"));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

test("FileRecoveryStore keeps the latest record per reservation and lists them sorted", async () => {
  await withDirectory(async (directory) => {
    const store = await createFileRecoveryStore(directory);
    assert.equal((await stat(directory)).mode & 0o777, 0o700, "a private directory");
    await store.record(idle(b, { step: 1 }));
    await store.record(idle(a, { step: 1 }));
    await store.record(idle(b, { step: 2 }));
    const listed = await store.list();
    assert.deepEqual(listed.map((entry) => [entry.kind, entry.reservationId]), [["record", a], ["record", b]]);
    assert.deepEqual(listed[1].kind === "record" && listed[1].record, idle(b, { step: 2 }));
    assert.deepEqual((await readdir(directory)).sort(), [`${a}.json`, `${b}.json`], "no temporary file is left");
    assert.equal((await stat(join(directory, `${a}.json`))).mode & 0o777, 0o600);
    await store.remove(a);
    await store.remove(a); // a missing file is done
    assert.deepEqual((await store.list()).map((entry) => entry.reservationId), [b]);
  });
});

test("FileRecoveryStore reports corrupt files and ignores temporary files of an interrupted write", async () => {
  await withDirectory(async (directory) => {
    const store = await createFileRecoveryStore(directory);
    await store.record(idle(a));
    await writeFile(join(directory, `${b}.json`), "{ not json");
    await writeFile(join(directory, `${"c".repeat(32)}.json`), JSON.stringify({ schema: "s.v2", reservationId: a }));
    await writeFile(join(directory, `${"d".repeat(32)}.json`), "x".repeat(70_000));
    await writeFile(join(directory, `.${a}.1234.tmp`), "torn");
    await writeFile(join(directory, "notes.txt"), "not a record");
    const listed = await store.list();
    assert.deepEqual(listed.map((entry) => [entry.kind, entry.reservationId]), [
      ["record", a],
      ["corrupt", b],
      ["corrupt", "c".repeat(32)],
      ["corrupt", "d".repeat(32)],
    ]);
    const reasons = listed.flatMap((entry) => entry.kind === "corrupt" ? [entry.error] : []);
    assert.ok(reasons.every((error) => error instanceof SandboxConfigurationError && error.code === "configuration"));
    assert.match(reasons[0].message, /^Cannot read the recovery record .*\.json: /);
    assert.match(reasons[1].message, /its reservationId does not match its file name/);
    assert.match(reasons[2].message, /it has 70000 bytes, more than 65536/);
    assert.equal(await readFile(join(directory, `${a}.json`), "utf8"), JSON.stringify(idle(a)));
  });
});

test("FileRecoveryStore refuses records without a reservation ID, over 64 KiB, and a non-canonical directory", async () => {
  await withDirectory(async (directory) => {
    const store = await createFileRecoveryStore(directory);
    await assert.rejects(store.record({ schema: "s.v2" }), (error) =>
      error instanceof SandboxConfigurationError && /record\.reservationId must be 32 lowercase hex digits/.test(error.message));
    await assert.rejects(store.record({ schema: "s.v2", reservationId: "../../etc/passwd" }), SandboxConfigurationError);
    await assert.rejects(store.record({ schema: "s.v2", reservationId: a, padding: "x".repeat(70_000) }), (error) =>
      error instanceof SandboxConfigurationError && /more than 65536/.test(error.message));
    await assert.rejects(store.remove("../x"), SandboxConfigurationError);
    assert.deepEqual(await readdir(directory), [], "nothing was written");
  });
  await assert.rejects(createFileRecoveryStore("relative/records"), (error) =>
    error instanceof SandboxConfigurationError && /^Cannot open the recovery store: directory /.test(error.message));
});

test("FileRecoveryStore reports a record file that is a symbolic link as corrupt and never reads its target", async () => {
  await withDirectory(async (directory) => {
    const store = await createFileRecoveryStore(directory);
    const target = join(directory, "..", "secret.txt");
    await writeFile(target, "root:x:0:0");
    await symlink(target, join(directory, `${a}.json`));
    const [entry] = await store.list();
    assert.equal(entry.kind, "corrupt");
    assert.match(entry.kind === "corrupt" ? entry.error.message : "", /it is not a regular file/);
    assert.doesNotMatch(entry.kind === "corrupt" ? entry.error.message : "", /root:x/);
  });
});

test("createFileRecoveryStore refuses a directory reached through a symbolic link, naming its canonical path", async () => {
  await withDirectory(async (directory) => {
    await mkdir(directory, { mode: 0o700 });
    const link = join(directory, "..", "link");
    await symlink(directory, link);
    const linked = join(await realpath(join(directory, "..")), "link");
    await assert.rejects(createFileRecoveryStore(linked), (error) => {
      assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration", String(error));
      assert.equal(error.message, `Cannot open the recovery store: directory ${linked} is not canonical on disk (resolves to ${directory}): pass ${directory}`);
      return true;
    });
    // A link on the way is the same defect.
    await assert.rejects(createFileRecoveryStore(join(linked, "inner")), (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === `Cannot open the recovery store: directory ${join(linked, "inner")} is not canonical on disk (resolves to ${join(directory, "inner")}): pass ${join(directory, "inner")}`);
    assert.deepEqual(await readdir(directory), [], "nothing was created through the link");
  });
});

test("createFileRecoveryStore refuses a directory its group or others can write (mode 0777, 0770), and a file", async () => {
  await withDirectory(async (directory) => {
    await mkdir(directory);
    for (const mode of [0o777, 0o770, 0o1777, 0o702]) {
      await chmod(directory, mode);
      await assert.rejects(createFileRecoveryStore(directory), (error) => {
        assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration", String(error));
        assert.equal(
          error.message,
          `Cannot open the recovery store: directory ${directory} is writable by its group or others (mode ${
            mode.toString(8).padStart(4, "0")
          }), so anyone could plant a record that recovery acts on: chmod 700 ${directory}`,
        );
        return true;
      });
    }
    await chmod(directory, 0o755);
    await createFileRecoveryStore(directory); // readable by others is fine: records hold no secrets
    const file = join(directory, "file");
    await writeFile(file, "x");
    await assert.rejects(createFileRecoveryStore(file), (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === `Cannot open the recovery store: directory ${file} is not a directory: pass the path of a directory (or of none, to create it)`);
  });
});

test("createFileRecoveryStore refuses a directory another user owns, naming the owner and the fix", async () => {
  const uid = process.getuid!();
  // As root: a private directory given to another uid; otherwise: a root-owned 0755 directory.
  const base = await mkdtemp(join(tmpdir(), "agentcell-store-owner-"));
  try {
    let directory = "/usr/share";
    let owner = 0;
    if (uid === 0) {
      directory = join(await realpath(base), "theirs");
      await mkdir(directory, { mode: 0o755 });
      await chown(directory, 65534, 65534);
      owner = 65534;
    }
    await assert.rejects(createFileRecoveryStore(directory), (error) => {
      assert.ok(error instanceof SandboxConfigurationError, String(error));
      assert.equal(
        error.message,
        `Cannot open the recovery store: directory ${directory} is owned by uid ${owner}, not by this process (uid ${uid}), so its owner could plant a record that recovery acts on: use a directory this user owns`,
      );
      return true;
    });
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});
