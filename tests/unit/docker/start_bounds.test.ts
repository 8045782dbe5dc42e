import assert from "node:assert/strict";
import { test } from "node:test";
import type { SandboxRecoveryPort } from "../../../lib/sandbox/backend.ts";
import { SandboxAbortedError, SandboxDeadlineError } from "../../../lib/sandbox/errors.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { admittingEngine, backendOn, policy, withSpill } from "./_start_engine.ts";

test("DockerSandboxReservation.start ends at once when its signal aborts during a silent Engine call", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.closed; // never answers
  });
  try {
    await withSpill(async (spillDirectory) => {
      const backend = backendOn(engine.socketPath, spillDirectory);
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("caller gave up")), 200);
      // The Engine never answers and the startup deadline is a minute away: only the abort
      // can end the start (a missed abort ends it with the deadline error instead).
      await assert.rejects(
        backend.reserve({ policy: { ...policy, deadlines: { startupMs: 60_000 } } }, { record: () => Promise.resolve() })
          .start({ signal: controller.signal }),
        (error) => error instanceof SandboxAbortedError && error.code === "aborted",
      );
    });
  } finally {
    await engine.close();
  }
});

/** Starts with `port` against an admitting engine; asserts the rejection and that no create left. */
async function assertStartFails(port: SandboxRecoveryPort, matches: (error: unknown) => boolean): Promise<void> {
  const engine = await admittingEngine();
  try {
    await withSpill(async (spillDirectory) => {
      const backend = backendOn(engine.socketPath, spillDirectory);
      await assert.rejects(backend.reserve({ policy }, port).start(), matches);
      const targets = engine.requests.map((r) => r.head.split(" ").slice(0, 2).join(" "));
      assert.ok(!targets.some((t) => t.startsWith("POST")), `no resource effect was dispatched: ${targets}`);
    });
  } finally {
    await engine.close();
  }
}

test("DockerSandboxReservation.start bounds a recovery port that never settles by the startup deadline", async () => {
  await assertStartFails(
    { record: () => new Promise(() => {}) },
    (error) => error instanceof SandboxDeadlineError && /recovery port/.test(error.message),
  );
});

test("DockerSandboxReservation.start reports a failing recovery port as aborted with its cause, before any create", async () => {
  const cause = new Error("disk full");
  await assertStartFails(
    { record: () => Promise.reject(cause) },
    (error) =>
      error instanceof SandboxAbortedError && error.code === "aborted" && error.cause === cause &&
      /^Cannot persist the recovery record: the recovery port failed: disk full$/.test(error.message),
  );
});
