// Cancelling a turn through the ACP bridge on a real engine: after a non-empty message chunk
// the turn ends with `cancelled`, by `cancel()` or by the prompt's signal, and one turn runs
// at a time.
import assert from "node:assert/strict";
import { SandboxStateError } from "../../lib/sandbox/errors.ts";
import type { SessionUpdate } from "../../lib/acp/protocol.ts";
import { startAcpSession } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, importAgent, messageText } from "./_acp.ts";

/** Read updates until the first non-empty agent message chunk; the rest stays unread. */
async function firstChunk(updates: ReadableStream<SessionUpdate>): Promise<string> {
  const reader = updates.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error("the turn ended before a message chunk");
      const text = messageText([value]);
      if (text !== "") return text;
    }
  } finally {
    reader.releaseLock();
  }
}

engineTest("AcpSession cancel() after a non-empty message chunk ends the turn with `cancelled`", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    // exitTimeoutMs: the test asserts the agent's own exit code, so it may take all the time it needs.
    const session = await startAcpSession(sandbox, agentRequest(), { exitTimeoutMs: 60_000 });
    const turn = session.prompt("wait");
    assert.equal(await firstChunk(turn.updates), "turn 1: waiting for cancel");
    assert.throws(
      () => session.prompt("wait"),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message === "Cannot prompt: a turn is still running; wait for turn.stopReason or call cancel() first",
    );
    await session.cancel();
    assert.deepEqual(await collect(turn.updates), []);
    assert.equal(await turn.stopReason, "cancelled");
    // cancel() without a running turn does nothing; the session takes the next turn.
    await session.cancel();
    const next = session.prompt("flood 2 1");
    assert.equal(messageText(await collect(next.updates)), "xx");
    assert.equal(await next.stopReason, "end_turn");
    assert.deepEqual((await session.close()).exit, { kind: "exited", code: 0 });
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession prompt signal: an abort cancels the turn, which ends with `cancelled`", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest());
    const abort = new AbortController();
    const turn = session.prompt("wait", { signal: abort.signal });
    assert.equal(await firstChunk(turn.updates), "turn 1: waiting for cancel");
    abort.abort(new Error("the user pressed stop"));
    assert.equal(await turn.stopReason, "cancelled");
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession: updates a cancelled turn's agent sends after its answer lead the next turn, counted by leadingUpdates", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    // The agent asks for /lingered after its late chunk: once asked, the chunk has arrived.
    let lingered!: () => void;
    const marker = new Promise<void>((resolve) => (lingered = resolve));
    const session = await startAcpSession(sandbox, agentRequest(), {
      fileSystem: {
        readTextFile: ({ path }) => {
          if (path === "/lingered") lingered();
          return { content: "" };
        },
      },
    });
    const turn = session.prompt("linger");
    assert.equal(turn.leadingUpdates, 0);
    assert.equal(await firstChunk(turn.updates), "turn 1: lingering");
    await session.cancel();
    assert.equal(await turn.stopReason, "cancelled");
    await marker;
    const next = session.prompt("flood 1 1");
    assert.equal(next.leadingUpdates, 1);
    const updates = await collect(next.updates);
    assert.deepEqual(updates.map((update) => messageText([update])), ["late output of turn 1", "x"]);
    assert.equal(await next.stopReason, "end_turn");
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});
