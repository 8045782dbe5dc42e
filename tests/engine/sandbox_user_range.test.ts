// config.userRange on a real engine: each sandbox's agent runs as its own uid, so a per-uid
// kernel limit one sandbox exhausts (inotify instances, fs.inotify.max_user_instances; POSIX
// message queue bytes, RLIMIT_MSGQUEUE) does not reach the other; the uids are in the records and the labels; another backend drawing
// a held uid is refused after its keeper exists, and leaves nothing behind.
import assert from "node:assert/strict";
import { LABELS } from "../../lib/docker/names.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { SandboxConflictError } from "../../lib/sandbox/errors.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { assertGone, assertNamesAbsent, readUntil, recordingPort, testPolicy, text, withBackend } from "./_sandbox.ts";

// Opens inotify instances (fs.inotify.max_user_instances per uid) and POSIX message queues
// (RLIMIT_MSGQUEUE bytes per uid; 10 messages of 8 KiB each by default) through node:ffi and
// libc until the kernel refuses one or `limit` of each are open, prints
// "inotify N of max M, mqueue K", and holds them until stdin ends.
const HOG = `
const ffi = require("node:ffi");
const { readFileSync } = require("node:fs");
const { functions } = ffi.dlopen("libc.so.6", {
  inotify_init1: { arguments: ["i32"], return: "i32" },
  mq_open: { arguments: ["pointer", "i32", "u32", "pointer"], return: "i32" },
});
const limit = Number(process.argv[1]);
let inotify = 0;
while (inotify < limit && functions.inotify_init1(0) >= 0) inotify++;
const names = [];
while (names.length < limit) {
  const name = Buffer.from("/hog-" + names.length + "\\0");
  if (functions.mq_open(ffi.getRawPointer(name), 0o100 | 2, 0o600, 0n) < 0) break; // O_CREAT | O_RDWR, default attributes
  names.push(name);
}
const max = readFileSync("/proc/sys/fs/inotify/max_user_instances", "utf8").trim();
process.stdout.write("inotify " + inotify + " of max " + max + ", mqueue " + names.length + "\\n");
process.stdin.resume();
`;

interface Held {
  readonly inotify: number;
  readonly max: number;
  readonly mqueue: number;
  release(): Promise<void>;
}

async function hog(sandbox: DockerSandbox, limit: number): Promise<Held> {
  const process = await sandbox.reserveProcess({ executable: "/usr/local/bin/node", args: ["--no-warnings", "-e", HOG, String(limit)] }).start();
  const seen = await readUntil(process.stdout, (out) => /inotify \d+ of max \d+, mqueue \d+\n/.test(out));
  const [, inotify, max, mqueue] = /inotify (\d+) of max (\d+), mqueue (\d+)/.exec(seen)!.map(Number);
  return {
    inotify,
    max,
    mqueue,
    release: async () => {
      await process.stdin.close();
      // stdout was partly read by readUntil: drain the rest (Response refuses a disturbed stream).
      await Promise.all([process.stdout.pipeTo(new WritableStream()), text(process.stderr)]);
      assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    },
  };
}

// A range no other test uses, different on every run (parallel runs on one engine).
function freshRange(count: number): { first: number; count: number } {
  return { first: 200_000 + Math.floor(Math.random() * 60_000), count };
}

const policy = { ...testPolicy, resources: { ...testPolicy.resources, memoryBytes: 512 * 1024 * 1024 } };

/** Run `fn` with two started sandboxes of `backend`; both are destroyed and checked gone after. */
async function withTwo(
  engine: DockerEngine,
  backend: DockerSandboxBackend,
  fn: (sandboxes: DockerSandbox[], ports: ReturnType<typeof recordingPort>[], uids: number[]) => Promise<void>,
): Promise<void> {
  const ports = [recordingPort(), recordingPort()];
  const reservations = ports.map((port) => backend.reserve({ policy }, port));
  const sandboxes: DockerSandbox[] = [];
  try {
    for (const reservation of reservations) sandboxes.push(await reservation.start());
    await fn(sandboxes, ports, reservations.map((reservation) => reservation.user.uid));
  } finally {
    for (const sandbox of sandboxes) {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }
}

/**
 * The first sandbox takes every inotify instance and message queue its uid may have; returns
 * how many of each (at most 4) the second then opens.
 */
async function starve(sandboxes: DockerSandbox[]): Promise<{ inotify: number; mqueue: number }> {
  const first = await hog(sandboxes[0], 10_000);
  assert.equal(first.inotify, first.max, `the first sandbox holds every inotify instance its uid may have (${first.inotify} of ${first.max})`);
  assert.ok(first.mqueue >= 4 && first.mqueue < 10_000, `the first sandbox fills its uid's RLIMIT_MSGQUEUE (${first.mqueue} queues, then refused)`);
  const second = await hog(sandboxes[1], 4);
  await second.release();
  await first.release();
  return { inotify: second.inotify, mqueue: second.mqueue };
}

engineTest("DockerSandbox userRange: inotify and mqueue exhaustion in one sandbox does not reach the other; uids in records and labels", async (engine) => {
  const range = freshRange(2);
  await withBackend(async (backend) => {
    await withTwo(engine, backend, async (sandboxes, ports, uids) => {
      assert.deepEqual([...uids].sort(), [range.first, range.first + 1], "two distinct uids of the range");
      for (const [index, sandbox] of sandboxes.entries()) {
        const uid = uids[index];
        const record = ports[index].records.at(-1) as DockerSandboxRecoveryRecord;
        assert.deepEqual(record.identity.user, { uid, gid: uid }, "the record holds the drawn identity");
        const keeper = await inspectContainer(engine, sandbox.resources.keeperId);
        assert.equal(keeper.Config.Labels?.[LABELS.uid], String(uid));
        assert.equal(keeper.Config.Labels?.[LABELS.gid], String(uid));
        const id = await sandbox.run("/bin/sh", ["-c", "echo $(id -u):$(id -g) $(stat -c %u:%g /workspace/work $HOME)"]);
        assert.equal(id.stdoutText, `${uid}:${uid} ${uid}:${uid} ${uid}:${uid}\n`, "the agent, its work directory and home are the drawn uid's");
      }
      assert.deepEqual(await starve(sandboxes), { inotify: 4, mqueue: 4 }, "the second sandbox still opens its own instances and queues");
    });
  }, nodeImage, undefined, undefined, undefined, { userRange: range, keeperUser: { uid: 65533, gid: 65533 } });
}, { timeout: 240_000 });

engineTest("DockerSandbox fixed user (control): inotify and mqueue exhaustion in one sandbox starves another of the same uid", async (engine) => {
  const uid = freshRange(1).first;
  await withBackend(async (backend) => {
    await withTwo(engine, backend, async (sandboxes) => {
      assert.deepEqual(await starve(sandboxes), { inotify: 0, mqueue: 0 }, "the shared uid has no instance or queue bytes left");
    });
  }, nodeImage, undefined, undefined, undefined, { user: { uid, gid: uid } });
}, { timeout: 240_000 });

engineTest("DockerSandbox userRange: another backend drawing a uid a live keeper holds is refused at start and leaves nothing", async (engine) => {
  const range = freshRange(1);
  await withBackend(async (owner) => {
    const sandbox = await owner.reserve({ policy: testPolicy }, recordingPort()).start();
    try {
      await withBackend(async (other) => {
        const reservation = other.reserve({ policy: testPolicy }, recordingPort());
        assert.equal(reservation.user.uid, range.first);
        await assert.rejects(reservation.start(), (error) =>
          error instanceof SandboxConflictError && error.code === "conflict" &&
          error.message ===
            `Cannot start sandbox: uid ${range.first} of config.userRange is already held by the keeper of reservation ${sandbox.id} (another backend or controller on this daemon): reserve again to draw another uid`);
        await assertNamesAbsent(engine, reservation.names);
        // The refused start released its uid: the next reservation of that backend draws it again.
        assert.equal(other.reserve({ policy: testPolicy }, recordingPort()).user.uid, range.first);
      }, undefined, undefined, undefined, undefined, { userRange: range });
      assert.equal(sandbox.state, "running");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, undefined, undefined, undefined, { userRange: range });
});
