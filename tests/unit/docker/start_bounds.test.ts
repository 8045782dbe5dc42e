import assert from "node:assert/strict";
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { SandboxRecoveryPort } from "../../../lib/sandbox/backend.ts";
import { SandboxAbortedError, SandboxDeadlineError } from "../../../lib/sandbox/errors.ts";
import { startFakeEngine } from "../_fake_engine.ts";

const image = `sha256:${"c".repeat(64)}`;
const policy = { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 }, deadlines: { startupMs: 1500 } };

function json(body: unknown): string {
  const text = JSON.stringify(body);
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`;
}

function backendOn(socketPath: string, spillDirectory: string) {
  return createDockerSandboxBackend({
    profile: "linux-x64-cgroupfs",
    endpoint: `unix://${socketPath}`,
    namespace: "unit",
    spillDirectory,
    imageDigest: image,
    user: { uid: 1000, gid: 1000 },
  });
}

async function withSpill(fn: (spill: string) => Promise<void>): Promise<void> {
  const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    await fn(spill);
  } finally {
    await rm(spill, { recursive: true, force: true });
  }
}

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

/** A fake engine that admits the daemon and image, then fails any other call with 500. */
async function admittingEngine() {
  const fixtures = new URL("../../fixtures/engine/", import.meta.url);
  const version = JSON.parse(await readFile(new URL("linux-cgroupfs-v1.version.json", fixtures), "utf8"));
  const info = JSON.parse(await readFile(new URL("linux-cgroupfs-v1.info.json", fixtures), "utf8"));
  return await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    const target = request.head.split(" ")[1];
    if (target === "/version") await connection.write(json(version));
    else if (target.endsWith("/info")) await connection.write(json(info));
    else if (target.includes("/images/")) {
      await connection.write(json({ Id: image, Architecture: "amd64", Os: "linux", Config: { Env: null } }));
    } else await connection.write("HTTP/1.1 500 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    await connection.end();
  });
}

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
