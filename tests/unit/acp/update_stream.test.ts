import { test } from "node:test";
import assert from "node:assert/strict";
import { SandboxOutputLimitError } from "../../../lib/sandbox/errors.ts";
import { UpdateStream, updateBytes } from "../../../lib/acp/_update_stream.ts";
import type { SessionUpdate } from "../../../lib/acp/protocol.ts";

const chunk = (text: string): SessionUpdate => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

test("updateBytes counts the UTF-8 bytes of the update's JSON", () => {
  const update = chunk("é");
  assert.equal(updateBytes(update), new TextEncoder().encode(JSON.stringify(update)).length);
  assert.equal(updateBytes(update), JSON.stringify(update).length + 1);
});

test("UpdateStream holds unread updates up to the bound and hands them out in order", async () => {
  const size = updateBytes(chunk("a"));
  const stream = new UpdateStream(3 * size);
  assert.equal(stream.push(chunk("a")), "queued");
  assert.equal(stream.push(chunk("b")), "queued");
  assert.equal(stream.push(chunk("c")), "queued");
  stream.close();
  assert.equal(stream.push(chunk("d")), "discarded");
  const seen: SessionUpdate[] = [];
  for await (const update of stream.readable) seen.push(update);
  assert.deepEqual(seen, [chunk("a"), chunk("b"), chunk("c")]);
});

test("UpdateStream past maxBufferedUpdateBytes errors with SandboxOutputLimitError and discards later updates", async () => {
  const size = updateBytes(chunk("a"));
  const stream = new UpdateStream(2 * size);
  stream.push(chunk("a"));
  stream.push(chunk("b"));
  assert.equal(stream.push(chunk("c")), "overflow");
  assert.equal(stream.push(chunk("d")), "discarded");
  const message = `Cannot buffer session updates: more than ${2 * size} bytes of this turn's updates are unread ` +
    "(maxBufferedUpdateBytes); read turn.updates while the turn runs, or raise options.maxBufferedUpdateBytes";
  assert.ok(stream.failure instanceof SandboxOutputLimitError && stream.failure.message === message);
  await assert.rejects(stream.readable.getReader().read(), (error) => error === stream.failure && (error as SandboxOutputLimitError).code === "output_limit");
});

test("UpdateStream read as it fills never overflows", async () => {
  const stream = new UpdateStream(updateBytes(chunk("a")));
  const reader = stream.readable.getReader();
  for (const text of ["a", "b", "c", "d"]) {
    assert.equal(stream.push(chunk(text)), "queued");
    assert.deepEqual((await reader.read()).value, chunk(text));
  }
});

test("UpdateStream cancelled by its reader drops the rest of the turn's updates", async () => {
  const stream = new UpdateStream(1024);
  await stream.readable.cancel();
  assert.equal(stream.push(chunk("a")), "discarded");
  stream.close();
  assert.equal(stream.failure, undefined);
});
