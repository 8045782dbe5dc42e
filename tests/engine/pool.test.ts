import assert from "node:assert/strict";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import type { DockerSandboxPool } from "../../lib/docker/pool.ts";
import { SandboxAbortedError, SandboxStateError } from "../../lib/sandbox/errors.ts";
import { engineTest, eventually } from "./_engine.ts";
import { assertGone, keepStarted, recordingPort, testPolicy, text, withBackend } from "./_sandbox.ts";

type Port = ReturnType<typeof recordingPort>;

/** The latest record of each reservation the port saw, by reservation ID. */
function latestRecords(port: Port): Map<string, DockerSandboxRecoveryRecord> {
  const latest = new Map<string, DockerSandboxRecoveryRecord>();
  for (const record of port.records as DockerSandboxRecoveryRecord[]) latest.set(record.identity.reservationId, record);
  return latest;
}

/** Asserts that no resource name of the reservation exists on the engine. */
async function assertNamesGone(engine: DockerEngine, record: DockerSandboxRecoveryRecord): Promise<void> {
  const { keeper, volume, network, accessor } = record.identity.names;
  for (const path of [`/containers/${keeper}/json`, `/volumes/${volume}`, `/networks/${network}`, `/containers/${accessor}/json`]) {
    await assert.rejects(
      engine.request("GET", path),
      (error) => error instanceof DockerEngineError && error.code === "not_found",
      `${path} of pool member ${record.identity.reservationId} still exists`,
    );
  }
}

async function echo(sandbox: DockerSandbox, word: string): Promise<string> {
  const process = await sandbox.reserveProcess({ executable: "/bin/echo", args: [word] }).start();
  await process.stdin.close();
  const [out] = await Promise.all([text(process.stdout), text(process.stderr)]);
  assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
  return out;
}

/** Closes the pool and destroys `taken` (each checked gone) even when the test failed. */
async function cleanUp(engine: DockerEngine, pool: DockerSandboxPool, port: Port, taken: DockerSandbox[]): Promise<void> {
  await pool.close();
  for (const sandbox of taken) {
    await sandbox.destroy();
    await assertGone(engine, sandbox);
  }
  for (const record of latestRecords(port).values()) await assertNamesGone(engine, record);
}

engineTest("pool keeps size sandboxes ready, hands one out running, refills, and close destroys the rest", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const pool = backend.pool({ request: { policy: testPolicy }, size: 2, recovery: port });
    const taken: DockerSandbox[] = [];
    try {
      assert.equal(pool.size, 2);
      await eventually("two ready pool members", () => (pool.ready === 2 ? true : undefined), { deadlineMs: 90_000 });
      assert.equal(pool.starting, 0);
      const sandbox = await pool.take();
      taken.push(sandbox);
      assert.equal(sandbox.state, "running");
      assert.equal(await echo(sandbox, "from-the-pool"), "from-the-pool\n");
      await eventually("the pool refilled to two", () => (pool.ready === 2 ? true : undefined), { deadlineMs: 90_000 });
      // Two initial members and one refill, each recorded through the caller's port.
      const records = latestRecords(port);
      assert.equal(records.size, 3);
      assert.ok(records.has(sandbox.id));
      await pool.close();
      assert.equal(pool.ready, 0);
      assert.equal(sandbox.state, "running", "a taken sandbox is the caller's: close leaves it alone");
      for (const [id, record] of latestRecords(port)) {
        if (id === sandbox.id) continue;
        await assertNamesGone(engine, record);
        assert.ok(Object.values(record.resources).every((resource) => resource?.state === "removed"), `member ${id} ends recorded as removed`);
      }
    } finally {
      await cleanUp(engine, pool, port, taken);
    }
  });
}, { timeout: 300_000 });

engineTest("pool take waits for a start in flight when no member is ready", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const pool = backend.pool({ request: { policy: testPolicy }, size: 1, recovery: port });
    const taken: DockerSandbox[] = [];
    try {
      assert.equal(pool.ready, 0);
      assert.equal(pool.starting, 1);
      const [first, second] = await keepStarted([pool.take(), pool.take()], taken);
      assert.notEqual(first.id, second.id);
      assert.equal(first.state, "running");
      assert.equal(second.state, "running");
      assert.equal(await echo(second, "waited"), "waited\n");
    } finally {
      await cleanUp(engine, pool, port, taken);
    }
  });
}, { timeout: 300_000 });

engineTest("pool does not hand out a member whose keeper stopped while it waited", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const pool = backend.pool({ request: { policy: testPolicy }, size: 1, recovery: port });
    const taken: DockerSandbox[] = [];
    try {
      await eventually("a ready pool member", () => (pool.ready === 1 ? true : undefined), { deadlineMs: 90_000 });
      const [[memberId, member]] = [...latestRecords(port)];
      const keeperId = member.resources.keeper!.id!;
      await engine.request("POST", `/containers/${keeperId}/kill`, { expect: [204] });
      // The member notices its keeper stopped and begins removing it (recorded as such).
      await eventually("the member to stop", () => {
        const state = latestRecords(port).get(memberId)?.resources.keeper?.state;
        return state === "removing" || state === "removed" ? true : undefined;
      });
      const sandbox = await pool.take();
      taken.push(sandbox);
      assert.notEqual(sandbox.id, memberId);
      assert.notEqual(sandbox.resources.keeperId, keeperId);
      assert.equal(await echo(sandbox, "fresh"), "fresh\n");
    } finally {
      await cleanUp(engine, pool, port, taken);
    }
  });
}, { timeout: 300_000 });

engineTest("pool close aborts starts in flight and leaves no resource behind", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const pool = backend.pool({ request: { policy: testPolicy }, size: 3, recovery: port });
    assert.equal(pool.starting, 3);
    // Close once a member is partway: its volume created, its keeper not yet ready.
    await eventually("a member partway through its start", () =>
      [...latestRecords(port).values()].some((record) => record.resources.volume?.state === "created") ? true : undefined);
    const refused = assert.rejects(
      pool.take(),
      (error) => error instanceof SandboxStateError && error.code === "invalid_state" && error.message === "Cannot take a sandbox from the pool: the pool is closed",
    );
    await pool.close();
    await refused;
    await assert.rejects(pool.take(), (error) => error instanceof SandboxStateError && error.code === "invalid_state");
    assert.equal(pool.ready, 0);
    assert.equal(pool.starting, 0);
    for (const record of latestRecords(port).values()) await assertNamesGone(engine, record);
    assert.equal(await pool.close(), undefined, "closing again is the same settled close");
  });
}, { timeout: 300_000 });

engineTest("pool take gives up waiting when its signal aborts, and the start joins the pool", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const pool = backend.pool({ request: { policy: testPolicy }, size: 1, recovery: port });
    try {
      const controller = new AbortController();
      const waiting = pool.take({ signal: controller.signal });
      controller.abort(new Error("the caller gave up"));
      await assert.rejects(
        waiting,
        (error) =>
          error instanceof SandboxAbortedError && error.code === "aborted" && error.message === "Cannot take a sandbox from the pool: aborted" &&
          (error.cause as Error).message === "the caller gave up",
      );
      await eventually("the start to join the pool", () => (pool.ready >= 1 ? true : undefined), { deadlineMs: 90_000 });
    } finally {
      await cleanUp(engine, pool, port, []);
    }
  });
}, { timeout: 300_000 });
