// Permission requests through the ACP bridge on a real engine: denied by default and by the
// caller, answered exactly once, answered `cancelled` by a cancel, and a throwing callback.
import assert from "node:assert/strict";
import { SandboxAbortedError, SandboxConfigurationError, SandboxStateError } from "../../lib/sandbox/errors.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { type AcpPermissionRequest, type AcpSessionOptions, startAcpSession } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, exportedFile, heldPermission, importAgent, messageText } from "./_acp.ts";

const NOTES = "one\ntwo\n";

/** Assert that `work/out/result.txt` was never written. */
async function assertNotWritten(sandbox: DockerSandbox): Promise<void> {
  await assert.rejects(
    exportedFile(sandbox, "work/out/result.txt"),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration",
  );
}

/** Run one `task` turn with `options`; return its message text after closing the session. */
async function runTask(sandbox: DockerSandbox, options: AcpSessionOptions): Promise<{ text: string; stopReason: string }> {
  await importAgent(sandbox, { "task/notes.txt": NOTES });
  const session = await startAcpSession(sandbox, agentRequest(), options);
  const turn = session.prompt("task task/notes.txt out/result.txt");
  const text = messageText(await collect(turn.updates));
  const stopReason = await turn.stopReason;
  await session.close();
  return { text, stopReason };
}

engineTest("AcpSession without onPermissionRequest denies (reject_once) and the agent writes no file", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const { text, stopReason } = await runTask(sandbox, {});
    assert.equal(stopReason, "end_turn");
    assert.equal(text, "turn 1: read task/notes.txt, 2 lines; asking to write out/result.txt; not allowed (reject), nothing written");
    await assertNotWritten(sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpPermissionRequest.deny() from the caller writes no file", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const seen: AcpPermissionRequest[] = [];
    const { text } = await runTask(sandbox, {
      onPermissionRequest: (request) => {
        seen.push(request);
        request.deny();
      },
    });
    assert.match(text, /not allowed \(reject\), nothing written$/);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].toolCall.title, "Write out/result.txt");
    assert.deepEqual(seen[0].options.map((option) => option.kind), ["allow_once", "reject_once"]);
    assert.deepEqual(seen[0].outcome, { outcome: "selected", optionId: "reject" });
    await assertNotWritten(sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpPermissionRequest is answered once only: a second answer and an unknown option throw", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const failures: unknown[] = [];
    const { text } = await runTask(sandbox, {
      onPermissionRequest: (request) => {
        assert.throws(
          () => request.select("maybe"),
          (error) =>
            error instanceof SandboxConfigurationError && error.code === "configuration" &&
            error.message === 'Cannot answer permission request: optionId "maybe" is not one of the offered options ("allow", "reject"); pass one of them',
        );
        assert.equal(request.outcome, undefined);
        request.select("allow");
        for (const again of [() => request.select("reject"), () => request.deny(), () => request.select("allow")]) {
          try {
            again();
          } catch (error) {
            failures.push(error);
          }
        }
      },
    });
    assert.match(text, /; wrote out\/result\.txt$/);
    assert.equal(failures.length, 3);
    for (const error of failures) {
      assert.ok(error instanceof SandboxStateError && error.code === "invalid_state");
      assert.equal(
        error.message,
        'Cannot answer permission request: it was already answered (selected "allow"); each request takes one answer',
      );
    }
    assert.equal(new TextDecoder().decode(await exportedFile(sandbox, "work/out/result.txt")).split("\n")[0], "turn 1");
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession cancel() answers an open permission request `cancelled`; a later answer throws", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "task/notes.txt": NOTES });
    const held = heldPermission();
    const session = await startAcpSession(sandbox, agentRequest(), { onPermissionRequest: held.onPermissionRequest });
    const turn = session.prompt("task task/notes.txt out/result.txt");
    const updates = collect(turn.updates);
    const request = await held.asked;
    assert.equal(request.signal.aborted, false);
    await session.cancel();
    assert.equal(request.signal.aborted, true);
    assert.deepEqual(request.outcome, { outcome: "cancelled" });
    assert.throws(
      () => request.select("allow"),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message === "Cannot answer permission request: it was already answered (cancelled: the turn was cancelled); each request takes one answer",
    );
    assert.equal(await turn.stopReason, "cancelled");
    const last = (await updates).at(-1);
    assert.ok(last?.sessionUpdate === "tool_call_update" && last.status === "failed");
    await session.close();
    await assertNotWritten(sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("AcpSession: an onPermissionRequest that throws denies, cancels the turn and rejects stopReason", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "task/notes.txt": NOTES });
    const boom = new Error("boom");
    const session = await startAcpSession(sandbox, agentRequest(), {
      onPermissionRequest: () => {
        throw boom;
      },
    });
    const turn = session.prompt("task task/notes.txt out/result.txt");
    await assert.rejects(turn.stopReason, (error) =>
      error instanceof SandboxAbortedError && error.code === "aborted" && error.cause === boom &&
      error.message === "Cannot answer permission request: onPermissionRequest threw; the request was denied and the turn cancelled");
    await assert.rejects(collect(turn.updates), (error) => error instanceof SandboxAbortedError);
    // The session stays usable for the next turn.
    const next = session.prompt("flood 1 3");
    assert.equal(messageText(await collect(next.updates)), "xxx");
    assert.equal(await next.stopReason, "end_turn");
    await session.close();
    await assertNotWritten(sandbox);
  }, { image: nodeImage, policy: acpPolicy });
});
