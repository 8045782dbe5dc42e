// The ACP bridge when things go wrong, on a real engine: a crash mid-turn, an agent that never
// answers `initialize`, an abort while opening, an agent that ignores the end of its stdin,
// and every bound pushed past (message size, unread updates, stderr).
import assert from "node:assert/strict";
import { SandboxAbortedError, SandboxDeadlineError, SandboxOutputLimitError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { AcpAgentError, AcpAgentExitedError, startAcpSession } from "../../lib/acp/mod.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, importAgent, messageText } from "./_acp.ts";

/** Assert the sandbox's keeper container is gone (compute stopped), by its exact ID. */
async function assertKeeperGone(engine: DockerEngine, sandbox: DockerSandbox): Promise<void> {
  assert.equal(sandbox.state, "stopped");
  await assert.rejects(
    engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`),
    (error) => error instanceof DockerEngineError && error.code === "not_found",
  );
}

engineTest("AcpSession: an agent crash mid-turn rejects the turn with AcpAgentExitedError (exit receipt, stderr tail) and cleanup completes", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest(), { exitTimeoutMs: 60_000 });
    const turn = session.prompt("crash");
    const seen: string[] = [];
    const reading = (async () => {
      for await (const update of turn.updates) seen.push(messageText([update]));
    })();
    const check = (error: unknown) =>
      error instanceof AcpAgentExitedError && error.code === "agent_exited" &&
      error.message === "Cannot continue ACP session: the agent exited with code 7; see error.stderrTail" &&
      error.exit.kind === "exited" && error.exit.code === 7 &&
      error.stderrTail === "fixture agent: crashing as asked\n";
    await assert.rejects(turn.stopReason, check);
    await assert.rejects(reading, check);
    assert.deepEqual(seen, ["turn 1: about to crash"]);
    assert.equal(session.state, "lost");
    await assertKeeperGone(engine, sandbox);
    // A later turn fails the same way; close() returns the release the bridge already made.
    await assert.rejects(session.prompt("wait").stopReason, check);
    assert.deepEqual(await session.close(), {
      exit: { kind: "exited", code: 7 },
      stderrTail: "fixture agent: crashing as asked\n",
      stderrBytes: 33,
    });
  }, { image: nodeImage, policy: acpPolicy });
});

// The deadline covers both steps; for session/new it must leave the agent ample time to start
// and answer initialize first (it waits the whole deadline: session/new is never answered).
for (
  const [flag, step, openTimeoutMs] of [
    ["--initialize=hang", "initialize", 1_500],
    ["--session-new=hang", "session/new", 10_000],
  ] as const
) {
  engineTest(`startAcpSession: ${step} never answered → the deadline rejects and compute is stopped`, async (engine) => {
    await withSandbox(engine, async (sandbox) => {
      await importAgent(sandbox);
      await assert.rejects(
        startAcpSession(sandbox, agentRequest(flag, "--ignore-eof"), { openTimeoutMs, exitTimeoutMs: 1_000 }),
        (error) =>
          error instanceof SandboxDeadlineError && error.code === "deadline" &&
          error.message ===
            `Cannot open ACP session: the agent did not answer ${step} within ${openTimeoutMs} ms (openTimeoutMs); check the agent command, or raise options.openTimeoutMs`,
      );
      await assertKeeperGone(engine, sandbox);
    }, { image: nodeImage, policy: acpPolicy });
  });
}

for (
  const [mode, label, check] of [
    [
      "exit",
      "an agent that exits instead of answering initialize rejects with AcpAgentExitedError",
      (error: unknown) =>
        error instanceof AcpAgentExitedError && error.code === "agent_exited" &&
        error.message === "Cannot open ACP session: the agent exited with code 3; see error.stderrTail" &&
        error.exit.kind === "exited" && error.exit.code === 3 &&
        error.stderrTail === "fixture agent: exiting instead of answering initialize\n",
    ],
    [
      "error",
      "an initialize answered with a JSON-RPC error rejects with AcpAgentError",
      (error: unknown) =>
        error instanceof AcpAgentError && error.code === "agent_error" && error.rpcCode === -32603 &&
        error.message ===
          "Cannot open ACP session: the agent answered initialize with JSON-RPC error -32603: Internal error: the fixture refuses to initialize",
    ],
    [
      "version2",
      "an agent answering another protocol version rejects with AcpAgentError",
      (error: unknown) =>
        error instanceof AcpAgentError && error.code === "agent_error" && error.rpcCode === undefined &&
        error.message === "Cannot open ACP session: the agent answered protocolVersion 2; this bridge speaks ACP protocol version 1",
    ],
  ] as const
) {
  engineTest(`startAcpSession: ${label}; compute is stopped`, async (engine) => {
    await withSandbox(engine, async (sandbox) => {
      await importAgent(sandbox);
      await assert.rejects(startAcpSession(sandbox, agentRequest(`--initialize=${mode}`), { exitTimeoutMs: 60_000 }), check);
      await assertKeeperGone(engine, sandbox);
    }, { image: nodeImage, policy: acpPolicy });
  });
}

engineTest("startAcpSession: an abort while initialize is pending rejects with SandboxAbortedError and stops compute", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const abort = new AbortController();
    const reason = new Error("the host is shutting down");
    const opening = startAcpSession(sandbox, agentRequest("--initialize=hang"), { signal: abort.signal });
    opening.catch(() => {});
    // The agent writes this file when initialize arrives: the bridge is waiting for the answer.
    await eventually("the agent received initialize", async () => {
      const reply = await engine.request("HEAD", `/containers/${sandbox.resources.keeperId}/archive`, {
        query: { path: "/workspace/work/initialize-received" },
        expect: [200, 404],
      });
      return reply.status === 200 ? true : undefined;
    });
    abort.abort(reason);
    await assert.rejects(opening, (error) =>
      error instanceof SandboxAbortedError && error.code === "aborted" && error.cause === reason &&
      error.message === "Cannot open ACP session: options.signal aborted");
    await assertKeeperGone(engine, sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession close(): an agent that keeps running after stdin closed has its process group ended after exitTimeoutMs", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest("--ignore-eof"), { exitTimeoutMs: 1_000 });
    const receipt = await session.close();
    assert.deepEqual(receipt.exit, { kind: "killed", reason: "requested", code: 137 });
    assert.equal(receipt.stderrTail, "fixture agent: stdin ended, running on as asked\n");
    await assertKeeperGone(engine, sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession close(): after session/close is answered an agent that ignores stdin EOF is ended without waiting exitTimeoutMs", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const exitTimeoutMs = 90_000;
    const session = await startAcpSession(sandbox, agentRequest("--ignore-eof", "--session-close"), { exitTimeoutMs });
    assert.deepEqual(session.agent.agentCapabilities?.sessionCapabilities, { close: {} });
    const turn = session.prompt("wait");
    const started = performance.now();
    const receipt = await session.close();
    assert.ok(performance.now() - started < exitTimeoutMs, "close() did not wait for exitTimeoutMs");
    assert.deepEqual(receipt.exit, { kind: "killed", reason: "requested", code: 137 });
    await assert.rejects(turn.stopReason, (error) => error instanceof SandboxStoppedError && error.message === "Cannot continue ACP session: it was closed");
    await assertKeeperGone(engine, sandbox);
    const closed = await sandbox.exportTree({ kind: "file", path: "work/session-closed" });
    for await (const entry of closed) {
      assert.equal(entry.size, 0, "the agent answered session/close");
      await entry.body.cancel();
    }
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession: a message longer than maxMessageBytes ends the session with AcpAgentError", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest(), { maxMessageBytes: 4096 });
    const turn = session.prompt("flood 1 10000");
    await assert.rejects(turn.stopReason, (error) =>
      error instanceof AcpAgentError && error.code === "agent_error" && error.rpcCode === undefined &&
      error.message ===
        "Cannot read agent message: the agent sent a message longer than 4096 bytes (maxMessageBytes); compute was stopped; raise options.maxMessageBytes");
    assert.equal(session.state, "lost");
    await assertKeeperGone(engine, sandbox);
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession: unread updates past maxBufferedUpdateBytes fail the turn with SandboxOutputLimitError; the session goes on", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest(), { maxBufferedUpdateBytes: 4096 });
    const turn = session.prompt("flood 20 1000");
    const check = (error: unknown) =>
      error instanceof SandboxOutputLimitError && error.code === "output_limit" &&
      error.message ===
        "Cannot buffer session updates: more than 4096 bytes of this turn's updates are unread (maxBufferedUpdateBytes); " +
          "read turn.updates while the turn runs, or raise options.maxBufferedUpdateBytes";
    await assert.rejects(turn.stopReason, check);
    await assert.rejects(collect(turn.updates), check);
    const next = session.prompt("flood 3 1000");
    assert.equal(messageText(await collect(next.updates)), "x".repeat(3000));
    assert.equal(await next.stopReason, "end_turn");
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession drains stderr into a bounded tail, so 1 MiB of stderr never fills a 64 KiB output bound", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, { ...agentRequest(), maxBufferedOutputBytes: 64 * 1024 }, { stderrTailBytes: 1000 });
    const turn = session.prompt("stderr 1048576");
    assert.equal(messageText(await collect(turn.updates)), "turn 1: wrote 1048576 bytes to stderr");
    assert.equal(await turn.stopReason, "end_turn");
    assert.equal(sandbox.state, "running");
    const receipt = await session.close();
    assert.equal(receipt.stderrBytes, 1048577);
    assert.equal(receipt.stderrTail, "e".repeat(999) + "\n");
    assert.equal(session.stderrTail, receipt.stderrTail);
    assert.equal(session.stderrBytes, 1048577);
  }, { image: nodeImage, policy: acpPolicy });
});
