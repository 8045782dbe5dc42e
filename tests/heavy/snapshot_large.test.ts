// The size case as a test (docs/snapshots.md#limits-and-what-is-not-covered): a
// workspace of 10,000 files holding more than 1 GiB is snapshotted and forked, and the fork
// sees every file — the counts, the sizes, and each file's MD5 computed in the fork's guest,
// against checksums the test computes itself from what the source guest wrote.
//
// Kept cheap for the default suite: the 1 GiB is four 256 MiB files made by `cat` from one
// 1 MiB random seed (each ends with its own index, so no two are alike), the other 9,995
// files are small lines written by the shell's `printf` builtin (no process per file).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerWorkspaceSnapshot } from "../../lib/docker/snapshots/snapshot.ts";
import { engineTest } from "../engine/_engine.ts";
import { assertGone, testPolicy } from "../engine/_sandbox.ts";
import { withWorld } from "../engine/_recovery.ts";

const MIB = 1024 * 1024;
/** The seed's repeats in each big file: 256 × 1 MiB. */
const REPEATS = 256;
const BIG = 4;
const SMALL = 10_000 - BIG - 1;
/** Each path's directory: 100 small files to a directory. */
const PER_DIRECTORY = 100;

const MAKE = [
  "mkdir t && cd t",
  `head -c ${MIB} /dev/urandom > seed`,
  "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do cat seed; done > ../block",
  `for k in ${[...Array(BIG).keys()].join(" ")}; do { for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do cat ../block; done; echo $k; } > big$k; done`,
  "rm ../block",
  `i=0; while [ $i -lt ${Math.ceil(SMALL / PER_DIRECTORY)} ]; do mkdir d$i; i=$((i + 1)); done`,
  `i=0; while [ $i -lt ${SMALL} ]; do printf 'file %d\\n' $i > d$((i / ${PER_DIRECTORY}))/f$i; i=$((i + 1)); done`,
].join(" && ");
const LOOK = "find t -type f | wc -l; find t -type d | wc -l; stat -c '%s %n' t/big* t/seed; find t -type f | sort | xargs md5sum";

const md5 = (bytes: string | Uint8Array) => createHash("md5").update(bytes).digest("hex");

/** What `LOOK` prints for the tree `MAKE` wrote from `seed`. */
function expectedLook(seed: Uint8Array): string {
  const sums = new Map<string, string>([["t/seed", md5(seed)]]);
  for (let k = 0; k < BIG; k++) {
    // One pass per big file over 256 MiB (Hash.copy() is not in every runtime's node:crypto).
    const hash = createHash("md5");
    for (let i = 0; i < REPEATS; i++) hash.update(seed);
    sums.set(`t/big${k}`, hash.update(`${k}\n`).digest("hex"));
  }
  for (let i = 0; i < SMALL; i++) sums.set(`t/d${Math.floor(i / PER_DIRECTORY)}/f${i}`, md5(`file ${i}\n`));
  const size = REPEATS * MIB + 2;
  const lines = [
    "10000",
    String(1 + Math.ceil(SMALL / PER_DIRECTORY)),
    ...[...Array(BIG).keys()].map((k) => `${size} t/big${k}`),
    `${MIB} t/seed`,
    // busybox sort in the C locale: byte order, as JavaScript's for ASCII.
    ...[...sums.keys()].sort().map((path) => `${sums.get(path)}  ${path}`),
  ];
  return `${lines.join("\n")}\n`;
}

engineTest("DockerSandbox snapshot of 10,000 files and 1 GiB → fork: the fork sees every file (counts, sizes, MD5 of each computed in its guest)", async (engine) => {
  // Copies of 1 GiB on a loaded engine: startup and snapshot deadlines with room.
  const policy = { ...testPolicy, deadlines: { startupMs: 300_000 } };
  await withWorld(async (world) => {
    const { backend, store } = world;
    const sandboxes: DockerSandbox[] = [];
    let snapshot: DockerWorkspaceSnapshot | undefined;
    try {
      const source = await backend.reserve({ policy }, store).start();
      sandboxes.push(source);
      await source.run("/bin/sh", ["-c", MAKE], { timeoutMs: 300_000 }).then((result) => assert.deepEqual(result.exit, { kind: "exited", code: 0 }, result.stderrText));
      const seed = await source.readFile("work/t/seed");
      assert.equal(seed.byteLength, MIB);
      const expected = expectedLook(seed);
      let bytes = BIG * (REPEATS * MIB + 2) + MIB;
      for (let i = 0; i < SMALL; i++) bytes += `file ${i}\n`.length;
      assert.ok(bytes > 1024 * MIB, `the tree holds more than 1 GiB (${bytes} bytes)`);

      snapshot = await source.snapshot({ timeoutMs: 300_000 });
      assert.equal(snapshot.record.resources.copier?.state, "removed");
      const fork = await backend.reserve({ policy, workspace: { from: snapshot } }, store).start();
      sandboxes.push(fork);
      const look = await fork.run("/bin/sh", ["-c", LOOK], { timeoutMs: 300_000 });
      assert.deepEqual(look.exit, { kind: "exited", code: 0 }, look.stderrText);
      assert.equal(look.stdoutText, expected);
    } finally {
      for (const sandbox of sandboxes) {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      if (snapshot !== undefined) await backend.removeSnapshot(snapshot);
    }
  });
}, { timeout: 600_000 });
