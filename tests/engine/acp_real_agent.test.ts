// A real third-party ACP agent from npm completes a turn in a sandbox, with its model API
// reached through a credentialed route whose key it never sees: `@zed-industries/
// claude-agent-acp` (pinned by tests/fixtures/acp-agent, installed by scripts/acp-agent.sh
// into AGENTCELL_TEST_ACP_AGENT_DIR) runs under the node guest's Node in an allowlist sandbox
// that lists no host at all; its `ANTHROPIC_BASE_URL` is the route `anthropic`, whose upstream
// is the test's stand-in of the Messages API over HTTPS (a fresh self-signed certificate for
// model.test, trusted through upstreamCaCertificates) on the host. The stand-in scripts one
// `Write` tool call: the agent asks permission, writes the file inside the sandbox
// (`fileSystem: "sandbox"`), and ends the turn. The stand-in saw the secret on every request;
// the guest's environment holds only the placeholder.
import assert from "node:assert/strict";
import process from "node:process";
import { importDirectory } from "../../lib/docker/files/import_directory.ts";
import type { SandboxImportEntry } from "../../lib/sandbox/transfer.ts";
import { startAcpSession } from "../../lib/acp/mod.ts";
import { startStandIn } from "../../examples/_stand_in_model.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { hostAddress } from "./_egress.ts";
import { withSandbox } from "./_sandbox.ts";
import { selfSignedCertificate } from "../fixtures/tls_certificate.ts";

const agentDir = process.env.AGENTCELL_TEST_ACP_AGENT_DIR ?? "";
const SECRET = `sk-ant-agentcell-${crypto.randomUUID()}`;
const PLACEHOLDER = "agentcell-placeholder";

engineTest("A real ACP agent from npm (claude-agent-acp) writes a file in the sandbox through a route whose key it never sees", async (engine) => {
  assert.ok(agentDir !== "", "set AGENTCELL_TEST_ACP_AGENT_DIR to the agent's tree (bash scripts/acp-agent.sh prints it)");
  const { certPem, keyPem } = await selfSignedCertificate("model.test");
  const standIn = await startStandIn(
    { path: "/workspace/work/out/hello.txt", content: "hello from a real ACP agent\n", reply: "Wrote out/hello.txt." },
    { tls: { key: keyPem, cert: certPem } },
  );
  const address = hostAddress();
  const policy = {
    resources: { cpus: 1, memoryBytes: 1024 * 1024 * 1024, pids: 256 },
    network: {
      kind: "allowlist" as const,
      hosts: [],
      addresses: [address],
      resolve: { "model.test": [address] },
      upstreamCaCertificates: [certPem],
      routes: [{
        name: "anthropic",
        upstream: `https://model.test:${standIn.port}`,
        headers: { "x-api-key": { secret: "anthropic" } },
        baseUrlEnv: ["ANTHROPIC_BASE_URL"],
        env: { ANTHROPIC_API_KEY: PLACEHOLDER },
      }],
    },
  };
  try {
    await withSandbox(engine, async (sandbox) => {
      async function* agentTree(): AsyncGenerator<SandboxImportEntry> {
        for await (const entry of importDirectory(agentDir, { links: "inside" })) yield { ...entry, path: `agent/${entry.path}` };
      }
      await sandbox.importTree(agentTree(), { deadlineAt: Date.now() + 300_000 });
      await sandbox.run("/bin/mkdir", ["-p", "/workspace/work/out"]);
      const asked: string[] = [];
      const session = await startAcpSession(sandbox, {
        // Without the proxy variables: with HTTP(S)_PROXY set, claude-agent-acp 0.23.1 hands
        // Node's fetch (undici 8.10 in Node 26) a proxy dispatcher of the undici 6 it bundles,
        // whose old handler API fails every request with UND_ERR_INVALID_ARG (measured; the
        // bundle has no onRequestStart). The agent's bug, not the route's: the route is reached
        // directly at its base URL, which NO_PROXY names anyway.
        executable: "/bin/sh",
        args: ["-c", 'unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy; exec /usr/local/bin/node agent/node_modules/@zed-industries/claude-agent-acp/dist/index.js'],
        env: { CLAUDE_CODE_SHELL: "/bin/sh", DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" },
        maxBufferedOutputBytes: 16 * 1024 * 1024,
      }, {
        fileSystem: "sandbox",
        terminal: "sandbox",
        exitTimeoutMs: 2_000,
        onPermissionRequest(request) {
          const title = request.toolCall.title ?? "";
          asked.push(title);
          const allow = request.options.find((option) => option.kind === "allow_once");
          // Writes below work/out only, however the agent names the path.
          const named = request.toolCall.locations?.length ? request.toolCall.locations.map((location) => location.path) : [title.split(" ").at(-1) ?? ""];
          const inOut = /^(Write|Edit) /u.test(title) && named.every((path) => (path.startsWith("/") ? path : `/workspace/work/${path}`).startsWith("/workspace/work/out/"));
          if (allow && inOut) request.select(allow.optionId);
          else request.deny();
        },
      });
      const turn = session.prompt("Write a greeting into out/hello.txt");
      const kinds = new Set<string>();
      for await (const update of turn.updates) kinds.add(update.sessionUpdate);
      assert.equal(await turn.stopReason, "end_turn", `${[...kinds].join(", ")}\n${session.stderrTail}`);
      assert.ok(kinds.has("tool_call"), `the agent called its tool: ${[...kinds].join(", ")}`);
      assert.ok(asked.some((title) => /^Write /u.test(title)), `the agent asked to write: ${JSON.stringify(asked)}`);
      assert.equal(new TextDecoder().decode(await sandbox.readFile("work/out/hello.txt")), "hello from a real ACP agent\n");

      // Every model request came through the route with the secret; the agent held only the placeholder.
      const messages = standIn.requests.filter((request) => request.path.startsWith("/v1/messages"));
      assert.ok(messages.length >= 2, `the agent asked the model (tool call, then the answer): ${JSON.stringify(standIn.requests.map((request) => request.path))}`);
      assert.ok(standIn.requests.every((request) => request.apiKey === SECRET), "every request to the upstream carried the secret");
      const environs = await sandbox.run("/bin/sh", ["-c", "for p in /proc/[0-9]*; do cat $p/environ; echo; done 2>/dev/null; env"]);
      assert.ok(environs.stdoutText.includes(`ANTHROPIC_API_KEY=${PLACEHOLDER}`));
      assert.ok(!environs.stdoutText.includes(SECRET), "no guest environment holds the secret");
      // Closing the session stops compute (the files stay for export).
      const closed = await session.close();
      assert.notEqual(closed.exit.kind, "unavailable", JSON.stringify(closed.exit));
      assert.equal(sandbox.state, "stopped");
    }, { policy, image: nodeImage, config: { proxyImageDigest: nodeImage }, start: { secrets: { anthropic: SECRET } } });
  } finally {
    await standIn.close();
  }
}, { timeout: 300_000 });
