// Opening an ACP session with an agent that needs `authenticate`, on a real engine: the
// agent's `initialize` answer rides on the opening error (so the caller sees its
// `authMethods`), the caller's choice is sent before `session/new`, and a choice the agent
// did not offer or refuses fails with the answer attached.
import assert from "node:assert/strict";
import { SandboxAbortedError, SandboxConfigurationError } from "../../lib/sandbox/errors.ts";
import { AcpAgentError, acpInitializeOf, startAcpSession } from "../../lib/acp/mod.ts";
import type { AcpSessionOptions, InitializeResponse } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, importAgent, messageText } from "./_acp.ts";

const request = { ...agentRequest("--auth=required"), env: { FIXTURE_KEY: "open-sesame" } };
const offered = ["fixture-key", "fixture-other"];

/** Open with `options` in a fresh sandbox; return the rejection (and check compute is gone). */
async function openingError(engine: Parameters<typeof withSandbox>[0], options: AcpSessionOptions): Promise<unknown> {
  let caught: unknown;
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    caught = await startAcpSession(sandbox, request, options).then(() => assert.fail("the session opened"), (error) => error);
    assert.equal(sandbox.state, "stopped");
  }, { image: nodeImage, policy: acpPolicy });
  return caught;
}

engineTest("startAcpSession: authenticate sends the chosen method before session/new, with the initialize answer to choose from", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const seen: InitializeResponse[] = [];
    const session = await startAcpSession(sandbox, request, {
      fileSystem: "sandbox",
      terminal: "sandbox",
      authenticate: (agent) => {
        seen.push(agent);
        return agent.authMethods?.find((method) => method.id === "fixture-key")?.id;
      },
    });
    assert.deepEqual(seen.map((agent) => agent.authMethods?.map((method) => method.id)), [offered]);
    const turn = session.prompt("grants");
    assert.equal(JSON.parse(messageText(await collect(turn.updates))).authenticated, "fixture-key");
    assert.equal(await turn.stopReason, "end_turn");
    // The authenticated agent's fs/* and terminal/* requests are served in the sandbox.
    const work = session.prompt("term - echo authenticated > out.txt; cat out.txt");
    assert.equal(JSON.parse(messageText(await collect(work.updates))).output.output, "authenticated\n");
    assert.equal(await work.stopReason, "end_turn");
    const read = session.prompt("read /workspace/work/out.txt");
    assert.equal(messageText(await collect(read.updates)), '{"content":"authenticated\\n"}');
    assert.equal(await read.stopReason, "end_turn");
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
});

engineTest("startAcpSession: an agent that requires authentication, a refused method and one not offered reject with the initialize answer", async (engine) => {
  const required = await openingError(engine, {});
  assert.ok(required instanceof AcpAgentError && required.code === "agent_error" && required.rpcCode === -32000, String(required));
  assert.equal(
    required.message,
    "Cannot open ACP session: the agent answered session/new with JSON-RPC error -32000: Authentication required: authenticate with fixture-key first",
  );
  assert.deepEqual(acpInitializeOf(required)?.authMethods?.map((method) => method.id), offered);

  const refused = await openingError(engine, { authenticate: () => "fixture-other" });
  assert.ok(refused instanceof AcpAgentError && refused.rpcCode === -32000, String(refused));
  assert.match(refused.message, /^Cannot open ACP session: the agent answered authenticate with JSON-RPC error -32000: .*the fixture refuses fixture-other$/);
  assert.equal(acpInitializeOf(refused)?.agentInfo?.name, "agentcell-fixture-agent");

  const unknown = await openingError(engine, { authenticate: () => "chatgpt" });
  assert.ok(unknown instanceof SandboxConfigurationError && unknown.code === "configuration", String(unknown));
  assert.equal(
    unknown.message,
    'Cannot open ACP session: options.authenticate chose "chatgpt", which the agent does not offer for authenticate (its initialize answer offers "fixture-key", "fixture-other"); ' +
      "return one of initialize.authMethods[].id, or undefined to send no authenticate",
  );
  assert.deepEqual(acpInitializeOf(unknown)?.authMethods?.map((method) => method.id), offered);

  const thrown = new Error("no key in the vault");
  const throwing = await openingError(engine, { authenticate: () => Promise.reject(thrown) });
  assert.ok(throwing instanceof SandboxAbortedError && throwing.cause === thrown, String(throwing));
  assert.equal(throwing.message, "Cannot open ACP session: options.authenticate threw; no authenticate was sent");
  assert.ok(acpInitializeOf(throwing) !== undefined);
}, { timeout: 300_000 });
