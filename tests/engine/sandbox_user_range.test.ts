// config.userRange on a real engine: each sandbox's agent runs as its own uid, so a per-uid
// kernel limit one sandbox exhausts (inotify instances, fs.inotify.max_user_instances) does
// not reach the other; the uids are in the records and the labels; another backend drawing
// a held uid is refused after its keeper exists, and leaves nothing behind.
import assert from "node:assert/strict";
import { LABELS } from "../../lib/docker/names.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { SandboxConflictError } from "../../lib/sandbox/errors.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery_record.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { assertGone, assertNamesAbsent, readUntil, recordingPort, testPolicy, text, withBackend } from "./_sandbox.ts";

// Opens inotify instances (node:ffi, libc's inotify_init1) until the kernel refuses one or
// `limit` are open, prints "opened N of max M", and holds them until stdin ends.
const HOG = `
const { dlopen } = require("node:ffi");
const { readFileSync } = require("node:fs");
const { functions } = dlopen("libc.so.6", { inotify_init1: { arguments: ["i32"], return: "i32" } });
const limit = Number(process.argv[1]);
let opened = 0;
while (opened < limit && functions.inotify_init1(0) >= 0) opened++;
const max = readFileSync("/proc/sys/fs/inotify/max_user_instances", "utf8").trim();
process.stdout.write("opened " + opened + " of max " + max + "\\n");
process.stdin.resume();
`;

async function hog(sandbox: DockerSandbox, limit: number): Promise<{ opened: number; max: number; release: () => Promise<void> }> {
  const process = await sandbox.reserveProcess({ executable: "/usr/local/bin/node", args: ["--no-warnings", "-e", HOG, String(limit)] }).start();
  const seen = await readUntil(process.stdout, (out) => /opened \d+ of max \d+\n/.test(out));
  const [, opened, max] = /opened (\d+) of max (\d+)/.exec(seen)!.map(Number);
  return {
    opened,
    max,
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

/** The first sandbox takes every inotify instance its uid may have; returns what the second then opens. */
async function starve(sandboxes: DockerSandbox[]): Promise<number> {
  const first = await hog(sandboxes[0], 10_000);
  assert.equal(first.opened, first.max, `the first sandbox holds every instance its uid may have (${first.opened} of ${first.max})`);
  const second = await hog(sandboxes[1], 8);
  await second.release();
  await first.release();
  return second.opened;
}

engineTest("DockerSandbox userRange: inotify exhaustion in one sandbox does not reach the other; uids in records and labels", async (engine) => {
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
      assert.equal(await starve(sandboxes), 8, "the second sandbox still opens its own instances");
    });
  }, nodeImage, undefined, undefined, { userRange: range, keeperUser: { uid: 65533, gid: 65533 } });
}, { timeout: 240_000 });

engineTest("DockerSandbox fixed user (control): inotify exhaustion in one sandbox starves another of the same uid", async (engine) => {
  const uid = freshRange(1).first;
  await withBackend(async (backend) => {
    await withTwo(engine, backend, async (sandboxes) => {
      assert.equal(await starve(sandboxes), 0, "the shared uid has no instance left");
    });
  }, nodeImage, undefined, undefined, { user: { uid, gid: uid } });
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
      }, undefined, undefined, undefined, { userRange: range });
      assert.equal(sandbox.state, "running");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, undefined, undefined, { userRange: range });
});
