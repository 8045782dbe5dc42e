// observeExit against a scripted fake Engine whose exec inspect never reports a numeric
// ExitCode: the receipt stays pending and the inspections back off to a bounded rate. The
// schedule is observed as the sequence of waits the observer asks its clock for, with the
// Engine requests counted at each wait: events and counts, never elapsed time.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { normalizePolicy } from "../../../lib/sandbox/policy.ts";
import { SandboxStoppedError } from "../../../lib/sandbox/errors.ts";
import {
  ENDED_STREAM_MAX_POLL_MS,
  endedStreamPollMs,
  type ExitPollWait,
  observeExit,
  OPEN_STREAM_POLL_MS,
  type ExitObserverHost,
} from "../../../lib/docker/process/exit_observer.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { keeperInspect } from "../_keeper_inspect.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });
const EXEC_ID = "e".repeat(64);
const KEEPER_ID = "c".repeat(64);

/** `GET /exec/{id}/json` of an exec that ended without an exit code the Engine reports. */
const EXEC_STATE = JSON.stringify({ ID: EXEC_ID, Running: false, ExitCode: null, Pid: 0, ContainerID: KEEPER_ID });

/** `GET /containers/{id}/json` of a running keeper (the fields the schema reads). */
const KEEPER_STATE = keeperInspect(KEEPER_ID);

function json(body: string): string {
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** One wait the observer asked for, and the inspections made before it. */
interface Wait {
  readonly ms: number;
  readonly execInspects: number;
  readonly keeperInspects: number;
}

/**
 * Runs `observeExit` against the fake Engine with a clock that records each wait and
 * returns at once; after `waits` waits the sandbox stops. `outputEndsAtWait` is the wait
 * (counted from 1) at which the exec's output ends; before it, the output is open.
 */
async function observe(waits: number, outputEndsAtWait: number): Promise<{ waits: Wait[]; receipt: unknown }> {
  let execInspects = 0;
  let keeperInspects = 0;
  const fake = await startFakeEngine(async (connection) => {
    const { head } = await connection.readRequest();
    const target = head.split(" ")[1];
    if (target === "/version") return await connection.write(json(VERSION));
    if (target === `/v1.51/exec/${EXEC_ID}/json`) {
      execInspects++;
      return await connection.write(json(EXEC_STATE));
    }
    if (target === `/v1.51/containers/${KEEPER_ID}/json`) {
      keeperInspects++;
      return await connection.write(json(KEEPER_STATE));
    }
    throw new Error(`unexpected request ${head}`);
  });
  try {
    const stop = new AbortController();
    let endOutput!: () => void;
    const streamEnded = new Promise<void>((resolve) => endOutput = resolve);
    const host = {
      engine: new DockerEngine(`unix://${fake.socketPath}`),
      keeperId: KEEPER_ID,
      policy: normalizePolicy({ resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 } }),
      stopping: stop.signal,
      computeRemoved: Promise.resolve(),
      stopEnded: Promise.resolve(),
      stopFor: () => Promise.reject(new Error("the keeper is running: nothing may stop the sandbox")),
    } satisfies ExitObserverHost;
    const recorded: Wait[] = [];
    // Each wait returns at once: the schedule is what the observer asks for, not how long it took.
    const clock: ExitPollWait = (ms) => {
      recorded.push({ ms, execInspects, keeperInspects });
      if (recorded.length === outputEndsAtWait) endOutput();
      if (recorded.length === waits) stop.abort(new SandboxStoppedError("Cannot continue: the test stopped the sandbox"));
      return Promise.resolve();
    };
    const receipt = await observeExit(host, EXEC_ID, streamEnded, clock);
    assert.deepEqual(fake.scriptErrors, []);
    return { waits: recorded, receipt };
  } finally {
    await fake.close();
  }
}

test("endedStreamPollMs doubles from 10 ms up to its cap of 5 s and stays there", () => {
  const schedule = Array.from({ length: 14 }, (_, poll) => endedStreamPollMs(poll));
  assert.deepEqual(schedule, [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5000, 5000, 5000, 5000, 5000]);
  assert.equal(endedStreamPollMs(10_000), ENDED_STREAM_MAX_POLL_MS);
});

test("observeExit backs off exec and keeper inspects while the exit code stays unreported", async () => {
  const { waits, receipt } = await observe(20, 1);
  // The first wait is for the output or 2 s; the output ended then, so every later wait is
  // one step of the backoff, each after exactly one more exec inspect.
  assert.deepEqual(waits.map((wait) => wait.ms), [OPEN_STREAM_POLL_MS, ...Array.from({ length: 19 }, (_, poll) => endedStreamPollMs(poll))]);
  assert.deepEqual(waits.map((wait) => wait.execInspects), Array.from({ length: 20 }, (_, n) => n));
  // The keeper is inspected with the fourth exec inspect after the output ended, then with each.
  assert.deepEqual(waits.map((wait) => wait.keeperInspects), Array.from({ length: 20 }, (_, n) => Math.max(0, n - 3)));
  // In steady state: one exec inspect and one keeper inspect per 5 s wait, no more.
  const steady = waits.slice(11);
  assert.ok(steady.every((wait) => wait.ms === ENDED_STREAM_MAX_POLL_MS));
  assert.equal(steady.at(-1)!.execInspects - steady[0].execInspects, steady.length - 1);
  assert.equal(steady.at(-1)!.keeperInspects - steady[0].keeperInspects, steady.length - 1);
  // The exit code never came: the receipt stayed pending until the stop made it unavailable.
  assert.deepEqual(receipt, { kind: "unavailable", reason: "sandbox_stopped" });
});

test("observeExit polls every 2 s while the output is open and starts the backoff when it ends", async () => {
  const { waits } = await observe(10, 4);
  // Waits 1–4 while the output is open: 2 s each, without keeper inspects; from wait 5 on the
  // backoff runs from 10 ms, and the keeper is inspected from the fourth inspect after the end.
  assert.deepEqual(waits.map((wait) => wait.ms), [
    OPEN_STREAM_POLL_MS,
    OPEN_STREAM_POLL_MS,
    OPEN_STREAM_POLL_MS,
    OPEN_STREAM_POLL_MS,
    10,
    20,
    40,
    80,
    160,
    320,
  ]);
  assert.deepEqual(waits.map((wait) => wait.execInspects), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(waits.map((wait) => wait.keeperInspects), [0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
});

test("observeExit removes its listener from the sandbox's stop signal once the receipt settles", async () => {
  const exited = JSON.stringify({ ID: EXEC_ID, Running: false, ExitCode: 0, Pid: 0, ContainerID: KEEPER_ID });
  const fake = await startFakeEngine(async (connection) => {
    const { head } = await connection.readRequest();
    const target = head.split(" ")[1];
    if (target === "/version") return await connection.write(json(VERSION));
    if (target === `/v1.51/exec/${EXEC_ID}/json`) return await connection.write(json(exited));
    throw new Error(`unexpected request ${head}`);
  });
  try {
    // The sandbox's signal, with its listeners counted: many processes over a sandbox's life
    // must not leave one listener each behind.
    const stop = new AbortController();
    const live = new Set<unknown>();
    const signal = stop.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    Object.assign(signal, {
      addEventListener: (type: string, listener: EventListener, options?: AddEventListenerOptions) => {
        live.add(listener);
        add(type, listener, options);
      },
      removeEventListener: (type: string, listener: EventListener) => {
        live.delete(listener);
        remove(type, listener);
      },
    });
    const host = {
      engine: new DockerEngine(`unix://${fake.socketPath}`),
      keeperId: KEEPER_ID,
      policy: normalizePolicy({ resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 } }),
      stopping: signal,
      computeRemoved: Promise.resolve(),
      stopEnded: Promise.resolve(),
      stopFor: () => Promise.reject(new Error("the keeper is running: nothing may stop the sandbox")),
    } satisfies ExitObserverHost;
    for (let process = 0; process < 20; process++) {
      const receipt = await observeExit(host, EXEC_ID, Promise.resolve(), () => Promise.resolve());
      assert.deepEqual(receipt, { kind: "exited", code: 0 });
      assert.equal(live.size, 0);
    }
    assert.deepEqual(fake.scriptErrors, []);
  } finally {
    await fake.close();
  }
});
