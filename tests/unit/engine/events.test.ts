// containerEventsBetween against a scripted fake engine: the query it sends (a closed range,
// one container, the actions asked for), the events it reads, and the faults a real Engine
// does not produce on demand: a line that is not JSON or not an event, a reply past
// MAX_EVENTS_REPLY_BYTES. (The real Engine's `oom` events: tests/engine/sandbox_oom.test.ts.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineError, DockerEngineTransportError } from "../../../lib/engine/errors.ts";
import { containerEventsBetween, MAX_EVENTS_REPLY_BYTES } from "../../../lib/engine/events.ts";
import { startVersionedFakeEngine } from "../_fake_engine.ts";

const KEEPER = "c".repeat(64);
const query = { containerId: KEEPER, actions: ["oom"], sinceMs: 1_796_219_868_000, untilMs: 1_796_219_869_500 };

function event(action: string, timeNano: number): string {
  return JSON.stringify({ Type: "container", Action: action, Actor: { ID: KEEPER, Attributes: { name: "k" } }, scope: "local", time: 1, timeNano });
}

async function answered(body: string): Promise<{ read: () => ReturnType<typeof containerEventsBetween>; heads: string[] }> {
  const heads: string[] = [];
  const engine = await startVersionedFakeEngine(async (connection, head) => {
    heads.push(head);
    await connection.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await connection.end();
  });
  const client = new DockerEngine(`unix://${engine.socketPath}`);
  return { read: () => containerEventsBetween(client, query).finally(() => engine.close()), heads };
}

test("containerEventsBetween sends a closed range for one container and reads each event", async () => {
  const { read, heads } = await answered(`${event("oom", 1)}\n${event("oom", 2)}\n`);
  const events = await read();
  assert.deepEqual(events.map((each) => [each.Action, each.timeNano]), [["oom", 1], ["oom", 2]]);
  const target = decodeURIComponent(heads[0]!.split(" ")[1]!);
  assert.match(target, /\/events\?/);
  assert.ok(target.includes("since=1796219868.000"), target);
  assert.ok(target.includes("until=1796219869.500"), target);
  assert.ok(target.includes(JSON.stringify({ type: ["container"], container: [KEEPER], event: ["oom"] })), target);
});

test("containerEventsBetween of an empty range is []", async () => {
  const { read } = await answered("");
  assert.deepEqual(await read(), []);
});

test("containerEventsBetween refuses a line that is not JSON, or not an event, with invalid_body", async () => {
  const notJson = await answered(`${event("oom", 1)}\n{oops\n`);
  await assert.rejects(notJson.read(), (error) => error instanceof DockerEngineError && error.code === "invalid_body" && error.message === "Cannot read container events: a line of the reply is not JSON");
  const notEvent = await answered(`${JSON.stringify({ Type: "container" })}\n`);
  await assert.rejects(notEvent.read(), (error) => error instanceof DockerEngineError && error.code === "invalid_body" && error.message === "Cannot read container events: a line of the reply is not an event");
});

test("containerEventsBetween ends a reply past MAX_EVENTS_REPLY_BYTES with response_limit", async () => {
  const line = event("oom", 1);
  const body = `${line}\n`.repeat(Math.ceil((MAX_EVENTS_REPLY_BYTES + 1) / (line.length + 1)));
  const { read } = await answered(body);
  await assert.rejects(read(), (error) => error instanceof DockerEngineTransportError && error.code === "response_limit");
});
