// pauseAll against a scripted fake Engine that answers a pause the way it does when runc's
// cgroup freezer gives up under load ("unable to freeze", a 500; runc thaws the cgroup again):
// the pause is asked again, at most PAUSE_FREEZE_ATTEMPTS times in all, and any other
// failure is thrown at once. Counted requests, never elapsed time. A real Engine does not
// fail a freeze on demand, hence the fake.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { PAUSE_FREEZE_ATTEMPTS, pauseAll } from "../../../lib/docker/snapshots/pause.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { keeperInspect } from "../_keeper_inspect.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });
const KEEPER_ID = "c".repeat(64);

/** `GET /containers/{id}/json` of a running keeper with no exec. */
const KEEPER_STATE = keeperInspect(KEEPER_ID);

function answer(status: string, body: string): string {
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** Runs pauseAll of the keeper against a fake whose first `failures` pauses fail with `message`. */
async function pauseWith(failures: number, message: string): Promise<{ pauses: number; unpauses: number; error?: unknown }> {
  let pauses = 0, unpauses = 0;
  const fake = await startFakeEngine(async (connection) => {
    const { head } = await connection.readRequest();
    const [method, target] = head.split(" ");
    if (target === "/version") return await connection.write(answer("200 OK", VERSION));
    if (method === "GET" && target === `/v1.51/containers/${KEEPER_ID}/json`) return await connection.write(answer("200 OK", KEEPER_STATE));
    if (method === "POST" && target === `/v1.51/containers/${KEEPER_ID}/pause`) {
      pauses++;
      if (pauses <= failures) return await connection.write(answer("500 Internal Server Error", JSON.stringify({ message })));
      return await connection.write("HTTP/1.1 204 No Content\r\n\r\n");
    }
    if (method === "POST" && target === `/v1.51/containers/${KEEPER_ID}/unpause`) {
      unpauses++;
      return await connection.write(answer("500 Internal Server Error", JSON.stringify({ message: `Container ${KEEPER_ID} is not paused` })));
    }
    throw new Error(`unexpected request ${head}`);
  });
  try {
    const error = await pauseAll(new DockerEngine(`unix://${fake.socketPath}`), [KEEPER_ID], 5_000).then(() => undefined, (error) => error);
    assert.deepEqual(fake.scriptErrors, []);
    return { pauses, unpauses, error };
  } finally {
    await fake.close();
  }
}

const UNABLE = `Cannot pause container ${KEEPER_ID}: OCI runtime pause failed: unable to freeze: unknown`;

test("pauseAll asks again when runc was unable to freeze the cgroup, and the pause then holds", async () => {
  const result = await pauseWith(PAUSE_FREEZE_ATTEMPTS - 1, UNABLE);
  assert.equal(result.error, undefined);
  assert.equal(result.pauses, PAUSE_FREEZE_ATTEMPTS);
  assert.equal(result.unpauses, 0);
});

test("pauseAll gives up after PAUSE_FREEZE_ATTEMPTS freezes that failed, with the Engine's error", async () => {
  const result = await pauseWith(PAUSE_FREEZE_ATTEMPTS, UNABLE);
  assert.ok(result.error instanceof DockerEngineError, String(result.error));
  assert.match(result.error.message, /unable to freeze/u);
  assert.equal(result.pauses, PAUSE_FREEZE_ATTEMPTS);
});

test("pauseAll throws any other pause failure at once", async () => {
  const result = await pauseWith(1, `Container ${KEEPER_ID} is not running`);
  assert.ok(result.error instanceof DockerEngineError, String(result.error));
  assert.match(result.error.message, /is not running/u);
  assert.equal(result.pauses, 1);
});
