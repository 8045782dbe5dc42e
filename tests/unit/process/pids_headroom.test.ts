// withKillHeadroom against a scripted fake Engine: the PID limit is raised for the kill's
// attempt and set back after it, concurrent kills share one raise, and a sandbox whose tasks
// stay above its limit once the room was taken back is refused (the caller stops it). A fake
// Engine because a real one will not hold a task count above the limit on demand.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import type { ExitObserverHost } from "../../../lib/docker/process/exit_observer.ts";
import { KILL_PIDS_HEADROOM, withKillHeadroom } from "../../../lib/docker/process/_pids_headroom.ts";
import { normalizePolicy } from "../../../lib/sandbox/policy.ts";
import { startFakeEngine } from "../_fake_engine.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });
const KEEPER_ID = "c".repeat(64);
const LIMIT = 24;

function json(body: string): string {
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

function stats(current: number): string {
  return JSON.stringify({
    read: "2026-12-05T00:00:00Z",
    cpu_stats: { cpu_usage: { total_usage: 1 } },
    precpu_stats: {},
    memory_stats: {},
    pids_stats: { current, limit: LIMIT },
  });
}

/**
 * A fake Engine that logs `update <PidsLimit>` and `stats` in `events` and answers each
 * stats read with the next of `counts` (the last one repeated); `run` gets a host on it.
 */
async function withFakeKeeper(counts: number[], run: (host: ExitObserverHost, events: string[]) => Promise<void>): Promise<void> {
  const events: string[] = [];
  let reads = 0;
  const fake = await startFakeEngine(async (connection) => {
    const { head, body } = await connection.readRequest();
    const target = head.split(" ")[1];
    if (target === "/version") return await connection.write(json(VERSION));
    if (target === `/v1.51/containers/${KEEPER_ID}/update`) {
      events.push(`update ${JSON.parse(new TextDecoder().decode(body)).PidsLimit}`);
      return await connection.write(json(JSON.stringify({ Warnings: [] })));
    }
    if (target === `/v1.51/containers/${KEEPER_ID}/stats?stream=false&one-shot=true`) {
      events.push("stats");
      return await connection.write(json(stats(counts[Math.min(reads++, counts.length - 1)])));
    }
    throw new Error(`unexpected request ${head}`);
  });
  try {
    const host = {
      engine: new DockerEngine(`unix://${fake.socketPath}`),
      keeperId: KEEPER_ID,
      policy: normalizePolicy({ resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: LIMIT }, deadlines: { cleanupMs: 1000 } }),
      stopping: new AbortController().signal,
      computeRemoved: Promise.resolve(),
      stopEnded: Promise.resolve(),
      stopFor: () => Promise.reject(new Error("withKillHeadroom never stops the sandbox itself")),
    } satisfies ExitObserverHost;
    await run(host, events);
    assert.deepEqual(fake.scriptErrors, []);
  } finally {
    await fake.close();
  }
}

test("withKillHeadroom raises the PID limit for the attempt, sets it back, and waits until the tasks are within it", async () => {
  await withFakeKeeper([LIMIT + 9, LIMIT + 2, LIMIT - 3], async (host, events) => {
    const answer = await withKillHeadroom(host, () => {
      events.push("attempt");
      return Promise.resolve("killed");
    });
    assert.equal(answer, "killed");
    assert.deepEqual(events, [`update ${LIMIT + KILL_PIDS_HEADROOM}`, "attempt", `update ${LIMIT}`, "stats", "stats", "stats"]);
  });
});

test("withKillHeadroom: concurrent kills of one sandbox share one raise; the last sets the limit back", async () => {
  await withFakeKeeper([LIMIT], async (host, events) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => release = resolve);
    const first = withKillHeadroom(host, async () => {
      events.push("attempt 1");
      await held;
      return 1;
    });
    const second = withKillHeadroom(host, () => {
      events.push("attempt 2");
      release();
      return Promise.resolve(2);
    });
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.deepEqual(events, [`update ${LIMIT + KILL_PIDS_HEADROOM}`, "attempt 1", "attempt 2", `update ${LIMIT}`, "stats"]);
  });
});

test("withKillHeadroom refuses a sandbox whose tasks stay above its limit once the room was taken back, and a failed attempt still sets it back", async () => {
  await withFakeKeeper([LIMIT + 5], async (host, events) => {
    await assert.rejects(withKillHeadroom(host, () => Promise.resolve("killed")), (error) => {
      assert.equal(
        (error as Error).message,
        `the sandbox holds ${LIMIT + 5} tasks, above its limit of ${LIMIT}, after the kill's headroom of ${KILL_PIDS_HEADROOM} was taken back`,
      );
      return true;
    });
    assert.deepEqual(events.slice(0, 3), [`update ${LIMIT + KILL_PIDS_HEADROOM}`, `update ${LIMIT}`, "stats"]);
    assert.ok(events.slice(2).every((event) => event === "stats"), "it only reads the count until the cleanup deadline");
  });
  await withFakeKeeper([LIMIT], async (host, events) => {
    const failure = new Error("the kill exec could not be created");
    await assert.rejects(withKillHeadroom(host, () => Promise.reject(failure)), (error) => error === failure);
    assert.deepEqual(events, [`update ${LIMIT + KILL_PIDS_HEADROOM}`, `update ${LIMIT}`, "stats"]);
  });
});
