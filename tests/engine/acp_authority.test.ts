// What the ACP bridge grants the agent, on a real engine: by default no host file system, no
// terminal and no MCP servers (the capabilities say so and the methods are refused); given
// handlers are advertised and called with the agent's requests.
import assert from "node:assert/strict";
import { startAcpSession } from "../../lib/acp/mod.ts";
import type { AcpSessionOptions } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, importAgent, messageText } from "./_acp.ts";

/** Open a session with `options`, run each prompt, return each turn's message text. */
async function replies(options: AcpSessionOptions, prompts: readonly string[], engine: Parameters<typeof withSandbox>[0]): Promise<string[]> {
  const texts: string[] = [];
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox);
    const session = await startAcpSession(sandbox, agentRequest(), options);
    for (const prompt of prompts) {
      const turn = session.prompt(prompt);
      texts.push(messageText(await collect(turn.updates)));
      assert.equal(await turn.stopReason, "end_turn");
    }
    await session.close();
  }, { image: nodeImage, policy: acpPolicy });
  return texts;
}

engineTest("startAcpSession grants nothing by default: no fs, no terminal, no MCP servers, cwd /workspace/work", async (engine) => {
  const [grants, read, run] = await replies({}, ["grants", "read /etc/passwd", "run /bin/sh"], engine);
  assert.deepEqual(JSON.parse(grants), {
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, auth: { terminal: false } },
    clientInfo: { name: "@agentcell/docker", version: "0.2.0" },
    cwd: "/workspace/work",
    mcpServers: [],
  });
  assert.equal(read, 'error -32601 "Method not found": fs/read_text_file');
  assert.equal(run, 'error -32601 "Method not found": terminal/create');
});

engineTest("startAcpSession advertises and calls the handlers and MCP servers the caller grants", async (engine) => {
  const reads: unknown[] = [];
  const created: unknown[] = [];
  const refuse = () => Promise.reject(new Error("not in this test"));
  const mcpServers = [{ name: "notes", command: "/usr/local/bin/notes-mcp", args: ["--stdio"], env: [] }];
  const [grants, read, run] = await replies({
    cwd: "/workspace/work/task",
    mcpServers,
    clientInfo: { name: "my-host", version: "2.0.0" },
    fileSystem: {
      readTextFile: (request) => {
        reads.push(request);
        return { content: "granted content" };
      },
    },
    terminal: {
      create: (request) => {
        created.push(request);
        return { terminalId: "term-1" };
      },
      output: refuse,
      waitForExit: refuse,
      kill: refuse,
      release: refuse,
    },
  }, ["grants", "read /host/notes.md", "run make"], engine);
  assert.deepEqual(JSON.parse(grants), {
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: true, auth: { terminal: false } },
    clientInfo: { name: "my-host", version: "2.0.0" },
    cwd: "/workspace/work/task",
    mcpServers,
  });
  assert.equal(read, '{"content":"granted content"}');
  assert.deepEqual(reads, [{ sessionId: "fixture-session", path: "/host/notes.md" }]);
  assert.equal(run, '{"terminalId":"term-1"}');
  assert.deepEqual(created, [{ sessionId: "fixture-session", command: "make" }]);
});
