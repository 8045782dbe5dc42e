// The controller lock of a file recovery store's record: taken by record() while the record
// holds resources, released once it holds none; live only while a process with its pid AND
// its start time runs (a dead pid, a reused pid or another boot is stale and taken over).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { ownLockOwner } from "../../../lib/docker/recovery/lock.ts";
import { createFileRecoveryStore, type FileRecoveryStore } from "../../../lib/docker/recovery/store.ts";
import { SandboxConflictError, SandboxError } from "../../../lib/sandbox/errors.ts";
import { admittingEngine, backendOn, policy, withSpill } from "../docker/_start_engine.ts";

const id = "e".repeat(32);
const holding = { schema: "s.v2", reservationId: id, resources: { volume: { name: "v", state: "creating" } } };
const released = { schema: "s.v2", reservationId: id, resources: { volume: { name: "v", state: "removed" } } };

async function withStore(fn: (store: FileRecoveryStore) => Promise<void>): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-lock-")));
  try {
    await fn(await createFileRecoveryStore(join(root, "records")));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** A process that lives until killed (`sleep 600`), with its start time from /proc. */
async function withProcess(fn: (pid: number, startTime: string, child: ChildProcess) => Promise<void>): Promise<void> {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    await new Promise((resolve, reject) => child.once("spawn", resolve).once("error", reject));
    const stat = await readFile(`/proc/${child.pid}/stat`, "utf8");
    await fn(child.pid!, stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19], child);
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

const bootId = async () => (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();

/** Write the lock file of `id` naming `pid` (as another controller would). */
async function plantLock(store: FileRecoveryStore, owner: { pid: number; startTime: string | null; bootId: string | null }): Promise<void> {
  await writeFile(join(store.directory, `${id}.lock`), JSON.stringify({ ...owner, token: crypto.randomUUID() }), { mode: 0o600 });
}

test("FileRecoveryStore.record takes the controller lock while the record holds resources and releases it once none are held", async () => {
  await withStore(async (store) => {
    await store.record({ ...holding, resources: { volume: { name: "v", state: "planned" } } });
    assert.deepEqual(await readdir(store.directory), [`${id}.json`], "a planned record names nothing that exists: no lock");
    await store.record(holding);
    assert.deepEqual((await readdir(store.directory)).sort(), [`${id}.json`, `${id}.lock`]);
    const lock = JSON.parse(await readFile(join(store.directory, `${id}.lock`), "utf8"));
    const self = await ownLockOwner();
    assert.equal(lock.pid, process.pid);
    assert.deepEqual({ pid: lock.pid, startTime: lock.startTime, bootId: lock.bootId }, self);
    assert.match(String(self.startTime), /^\d+$/u, "Linux: field 22 of /proc/<pid>/stat");
    assert.deepEqual(await store.locks.inspect(id), { kind: "own", owner: self });
    const [entry] = await store.list();
    assert.equal(entry.kind, "locked", "this process's own live record is not handed out for recovery");
    assert.ok(entry.kind === "locked" && entry.error instanceof SandboxConflictError && entry.error.code === "conflict");
    assert.equal(
      entry.kind === "locked" && entry.error.message,
      `Cannot recover record ${id}: it is locked by its controller (pid ${process.pid}, started at tick ${self.startTime} after boot, this process), which still runs: stop that controller first, or pass { force: true } to backend.recover()`,
    );
    await store.record(released);
    assert.deepEqual(await readdir(store.directory), [`${id}.json`], "nothing held: the lock is released, the record stays");
    assert.deepEqual((await store.list()).map((listed) => listed.kind), ["record"]);
    await store.record(holding);
    await store.remove(id);
    assert.deepEqual(await readdir(store.directory), [], "remove() drops the record and its lock");
  });
});

test("RecoveryLocks of a live controller refuse record() and list(), and are claimed only with force", async () => {
  await withStore(async (store) => {
    await withProcess(async (pid, startTime) => {
      const owner = { pid, startTime, bootId: await bootId() };
      await plantLock(store, owner);
      assert.deepEqual(await store.locks.inspect(id), { kind: "live", owner });
      await assert.rejects(store.record(holding), (error) => {
        assert.ok(error instanceof SandboxConflictError && error.code === "conflict", String(error));
        assert.equal(
          error.message,
          `Cannot store the recovery record: record ${id} is locked by another process that still runs (pid ${pid}, started at tick ${startTime} after boot; a recovery took it over with force): nothing was written; stop that process before this one writes the record again`,
        );
        return true;
      });
      assert.deepEqual(await readdir(store.directory), [`${id}.lock`], "nothing was written");
      await writeFile(join(store.directory, `${id}.json`), JSON.stringify(holding));
      const [entry] = await store.list();
      assert.equal(entry.kind, "locked");
      assert.deepEqual(entry.kind === "locked" && entry.owner, owner);
      assert.equal(
        entry.kind === "locked" && entry.error.message,
        `Cannot recover record ${id}: it is locked by its controller (pid ${pid}, started at tick ${startTime} after boot), which still runs: stop that controller first, or pass { force: true } to backend.recover()`,
      );
      assert.deepEqual(await store.locks.claim(id), { kind: "live", owner }, "without force: found live, not taken");
      assert.deepEqual(await store.locks.inspect(id), { kind: "live", owner });
      await store.locks.release(id);
      assert.deepEqual(await store.locks.inspect(id), { kind: "live", owner }, "release() leaves another live process's lock");
      assert.deepEqual(await store.locks.claim(id, { force: true }), { kind: "live", owner }, "with force: taken over");
      assert.deepEqual(await store.locks.inspect(id), { kind: "own", owner: await ownLockOwner() });
      await store.remove(id);
      assert.deepEqual(await readdir(store.directory), []);
    });
  });
});

test("RecoveryLocks of a dead pid are stale (exited) and taken over silently by the next record()", async () => {
  await withStore(async (store) => {
    let dead: { pid: number; startTime: string; bootId: string } | undefined;
    await withProcess(async (pid, startTime) => {
      dead = { pid, startTime, bootId: await bootId() };
    });
    await plantLock(store, dead!);
    assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: dead, reason: "exited" });
    await store.record(holding);
    assert.deepEqual(await store.locks.inspect(id), { kind: "own", owner: await ownLockOwner() });
    assert.deepEqual((await store.list()).map((entry) => entry.kind), ["locked"]);
    await store.remove(id);
  });
});

test("RecoveryLocks of a pid reused with another start time, or of another boot, are stale", async () => {
  await withStore(async (store) => {
    await withProcess(async (pid, startTime) => {
      const reused = { pid, startTime: String(Number(startTime) + 1), bootId: await bootId() };
      await plantLock(store, reused);
      assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: reused, reason: "pid-reused" });
      const rebooted = { pid, startTime, bootId: "00000000-0000-0000-0000-000000000000" };
      await plantLock(store, rebooted);
      assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: rebooted, reason: "rebooted" });
      assert.deepEqual(await store.locks.claim(id), { kind: "stale", owner: rebooted, reason: "rebooted" });
      assert.deepEqual(await store.locks.inspect(id), { kind: "own", owner: await ownLockOwner() });
      await store.locks.release(id);
    });
  });
});

test("RecoveryLocks that are not lock files of ours (garbage, a symbolic link) are stale and replaced, a target never touched", async () => {
  await withStore(async (store) => {
    const lock = join(store.directory, `${id}.lock`);
    await writeFile(lock, "{ not a lock");
    assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: undefined, reason: "unreadable" });
    await writeFile(lock, JSON.stringify({ pid: 0, startTime: null, bootId: null, token: "x" }));
    assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: undefined, reason: "unreadable" }, "pid 0 is never signalled");
    await rm(lock);
    const target = join(store.directory, "..", "target.txt");
    await writeFile(target, "keep me");
    await symlink(target, lock);
    assert.deepEqual(await store.locks.inspect(id), { kind: "stale", owner: undefined, reason: "unreadable" });
    await store.record(holding);
    assert.equal(await readFile(target, "utf8"), "keep me");
    assert.deepEqual(await store.locks.inspect(id), { kind: "own", owner: await ownLockOwner() });
    await store.remove(id);
    assert.deepEqual(await readdir(store.directory), []);
  });
});

test("DockerSandboxReservation.start that fails releases the store's controller lock and leaves the record for recovery", async () => {
  // The volume create's reply is lost and its name stays absent: the record keeps it `creating`.
  const engine = await admittingEngine((target) => (target.includes("/volumes/create") ? "" : undefined));
  try {
    await withSpill(async (spill) => {
      await withStore(async (store) => {
        const reservation = backendOn(engine.socketPath, spill).reserve({ policy }, store);
        await assert.rejects(reservation.start(), (error) => error instanceof SandboxError && /whether the volume was created is unknown/.test(error.message));
        const [entry] = await store.list();
        assert.equal(entry.kind, "record", "this start is over: its record is handed out for recovery");
        assert.equal(entry.kind === "record" && (entry.record.resources as { volume: { state: string } }).volume.state, "creating");
        assert.deepEqual(await store.locks.inspect(reservation.id), { kind: "absent" });
      });
    });
  } finally {
    await engine.close();
  }
});
