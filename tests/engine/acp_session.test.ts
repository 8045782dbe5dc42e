// The ACP bridge's session lifecycle on a real engine: turns with state carried over, the
// same task's bytes in a fresh sandbox, and the ownership sequence close → export → destroy.
import assert from "node:assert/strict";
import { SandboxStateError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { AcpAgentError, startAcpSession } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { assertGone, withBackend, withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, exportedFile, heldPermission, importAgent, messageText } from "./_acp.ts";

const NOTES = "buy milk\ncall home\nship it\n";
const FIRST_REPORT = "turn 1\ninput task/notes.txt\nearlier outputs: none\n1. BUY MILK\n2. CALL HOME\n3. SHIP IT\n";
const decoder = new TextDecoder();
/** These tests assert the agent's own exit code: give it all the time it needs to exit. */
const waitForExit = { exitTimeoutMs: 60_000 };

/** Run the first task in a fresh sandbox and return the exported report's bytes. */
async function firstTaskBytes(engine: DockerEngine): Promise<Uint8Array> {
  let bytes: Uint8Array | undefined;
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "task/notes.txt": NOTES });
    const session = await startAcpSession(sandbox, agentRequest(), { ...waitForExit, onPermissionRequest: (request) => request.select("allow") });
    const turn = session.prompt("task task/notes.txt out/first.txt");
    await collect(turn.updates);
    assert.equal(await turn.stopReason, "end_turn");
    await session.close();
    bytes = await exportedFile(sandbox, "work/out/first.txt");
  }, { image: nodeImage, policy: acpPolicy });
  return bytes!;
}

engineTest("AcpSession runs two turns in one session with the agent's state carried over", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "task/notes.txt": NOTES });
    const session = await startAcpSession(sandbox, agentRequest(), { ...waitForExit, onPermissionRequest: (request) => request.select("allow") });
    assert.equal(session.sessionId, "fixture-session");
    assert.equal(session.agent.protocolVersion, 1);
    assert.deepEqual(session.agent.agentInfo, { name: "agentcell-fixture-agent", version: "1.0.0" });
    assert.equal(session.state, "open");

    const first = session.prompt("task task/notes.txt out/first.txt");
    const firstUpdates = await collect(first.updates);
    assert.equal(await first.stopReason, "end_turn");
    assert.equal(messageText(firstUpdates), "turn 1: read task/notes.txt, 3 lines; asking to write out/first.txt; wrote out/first.txt");
    assert.deepEqual(firstUpdates.map((update) => update.sessionUpdate), [
      "agent_message_chunk",
      "agent_message_chunk",
      "agent_message_chunk",
      "agent_message_chunk",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
    ]);

    const second = session.prompt([{ type: "text", text: "task task/notes.txt out/second.txt" }]);
    assert.equal(messageText(await collect(second.updates)), "turn 2: read task/notes.txt, 3 lines; asking to write out/second.txt; wrote out/second.txt");
    assert.equal(await second.stopReason, "end_turn");

    const receipt = await session.close();
    assert.deepEqual(receipt, { exit: { kind: "exited", code: 0 }, stderrTail: "", stderrBytes: 0 });
    assert.equal(decoder.decode(await exportedFile(sandbox, "work/out/first.txt")), FIRST_REPORT);
    assert.equal(
      decoder.decode(await exportedFile(sandbox, "work/out/second.txt")),
      "turn 2\ninput task/notes.txt\nearlier outputs: out/first.txt\n1. BUY MILK\n2. CALL HOME\n3. SHIP IT\n",
    );
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession: the same first task in a fresh sandbox exports the same bytes", async (engine) => {
  const once = await firstTaskBytes(engine);
  const again = await firstTaskBytes(engine);
  assert.deepEqual(again, once);
  assert.equal(decoder.decode(once), FIRST_REPORT);
});

engineTest("AcpSession close() removes the keeper and keeps the files; destroy() removes every resource by exact ID", async (engine) => {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: acpPolicy }, { record: () => Promise.resolve() }).start();
    try {
      await importAgent(sandbox, { "task/notes.txt": NOTES });
      const session = await startAcpSession(sandbox, agentRequest(), { ...waitForExit, onPermissionRequest: (request) => request.select("allow") });
      const turn = session.prompt("task task/notes.txt out/first.txt");
      await collect(turn.updates);
      assert.equal(await turn.stopReason, "end_turn");
      const { keeperId, volumeName } = sandbox.resources;

      await session.close();
      assert.equal(session.state, "closed");
      assert.equal(sandbox.state, "stopped");
      await assert.rejects(
        engine.request("GET", `/containers/${keeperId}/json`),
        (error) => error instanceof DockerEngineError && error.code === "not_found",
      );
      await engine.request("GET", `/volumes/${volumeName}`);
      assert.equal(decoder.decode(await exportedFile(sandbox, "work/out/first.txt")), FIRST_REPORT);
      // A second close() returns the same release.
      assert.deepEqual(await session.close(), { exit: { kind: "exited", code: 0 }, stderrTail: "", stderrBytes: 0 });
      assert.throws(
        () => session.prompt("task task/notes.txt out/third.txt"),
        (error) => error instanceof SandboxStateError && error.code === "invalid_state" && error.message === "Cannot prompt: the ACP session is closed",
      );
      assert.ok(sandbox.resources.accessorId, "the export created an accessor");
    } finally {
      await sandbox.destroy();
    }
    await assertGone(engine, sandbox);
  }, nodeImage);
});

engineTest("AcpSession: a prompt answered with a JSON-RPC error or an unknown stop reason rejects with AcpAgentError; the session goes on", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest());
    const failed = session.prompt("fail");
    await assert.rejects(failed.stopReason, (error) =>
      error instanceof AcpAgentError && error.code === "agent_error" && error.rpcCode === -32603 &&
      error.message ===
        "Cannot finish turn: the agent answered session/prompt with JSON-RPC error -32603: Internal error: the fixture fails this turn");
    const odd = session.prompt("bad-stop");
    await assert.rejects(odd.stopReason, (error) =>
      error instanceof AcpAgentError && error.code === "agent_error" &&
      error.message === 'Cannot finish turn: the agent answered stopReason "gave_up", which ACP v1 does not define');
    const next = session.prompt("flood 1 2");
    assert.equal(messageText(await collect(next.updates)), "xx");
    assert.equal(await next.stopReason, "end_turn");
    assert.equal(session.state, "open");
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession close() during a turn rejects it with SandboxStoppedError and answers the open permission request", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "task/notes.txt": NOTES });
    const held = heldPermission();
    const session = await startAcpSession(sandbox, agentRequest(), { ...waitForExit, onPermissionRequest: held.onPermissionRequest });
    const turn = session.prompt("task task/notes.txt out/first.txt");
    const request = await held.asked;
    const receipt = await session.close();
    assert.deepEqual(receipt.exit, { kind: "exited", code: 0 });
    assert.deepEqual(request.outcome, { outcome: "cancelled" });
    await assert.rejects(turn.stopReason, (error) =>
      error instanceof SandboxStoppedError && error.code === "stopped" && error.message === "Cannot continue ACP session: it was closed");
    await assert.rejects(collect(turn.updates), (error) => error instanceof SandboxStoppedError);
    await assert.rejects(exportedFile(sandbox, "work/out/first.txt"));
  }, { image: nodeImage, policy: acpPolicy });
});
