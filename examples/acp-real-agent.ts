/**
 * A real third-party ACP agent from npm in a hardened sandbox: `@zed-industries/claude-agent-acp`
 * (an ACP adapter of Claude Code) runs under the guest's Node, driven through
 * `@agentcell/docker/acp`, against a small local stand-in of the Anthropic Messages API
 * (`examples/_stand_in_model.ts`), so no model key and no model network are needed. The
 * stand-in makes the agent write one file with its `Write` tool: the agent asks permission
 * (0.23.1 sends the title `Write out/hello.txt` with `kind: "edit"`; other adapters send
 * `Write /workspace/work/out/hello.txt` and no `kind`: the host's rule allows both), the host
 * allows writes below `work/out`, and the file is written inside the sandbox (the agent is
 * offered `fileSystem: "sandbox"` and `terminal: "sandbox"`, never the host's). Then close
 * (an agent that does not exit on end of file has its process group ended), export,
 * destroy. Measured: about 4 s in all under Node and Deno.
 *
 * Not part of the default test suite: it needs the agent's npm tree (about 85 MB) and a
 * sandbox network that reaches a host port. Run it with:
 *
 *   npm install --prefix /tmp/claude-agent-acp @zed-industries/claude-agent-acp@0.23.1
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock AGENTCELL_IMAGE=sha256:… \
 *   AGENTCELL_ACP_AGENT_DIR=/tmp/claude-agent-acp node examples/acp-real-agent.ts
 *
 * AGENTCELL_IMAGE must be a guest image with `/usr/local/bin/node` (`bash
 * scripts/guest-images.sh node`). The tree is imported with `importDirectory(dir, { links:
 * "inside" })`, which keeps its `node_modules/.bin` links.
 *
 * How the agent reaches the stand-in: for now through policy `network: "outbound"` (a private
 * bridge with NAT, from which a listener on the host's 0.0.0.0 is reachable at the bridge's
 * gateway) with `ANTHROPIC_BASE_URL` pointing there and a dummy key in the agent's
 * environment. With the egress proxy's credentialed routes (issue 27, parts 1–4) the agent
 * would reach it through a route instead, and never hold a key.
 */
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, importDirectory, type SandboxImportEntry } from "../mod.ts";
import { startAcpSession } from "../lib/acp/mod.ts";
import { startStandIn } from "./_stand_in_model.ts";

const endpoint = process.env.AGENTCELL_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const imageDigest = process.env.AGENTCELL_IMAGE ?? "";
const agentDir = process.env.AGENTCELL_ACP_AGENT_DIR ?? "";
if (agentDir === "") {
  console.error("Set AGENTCELL_ACP_AGENT_DIR to a directory with @zed-industries/claude-agent-acp installed (see the comment at the top)");
  process.exit(2);
}
const scratch = await realpath(await mkdtemp(join(tmpdir(), "agentcell-acp-real-")));
await mkdir(join(scratch, "spill"));

const standIn = await startStandIn({ path: "/workspace/work/out/hello.txt", content: "hello from a real ACP agent\n", reply: "Wrote out/hello.txt." });
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: "acp-real-agent",
  spillDirectory: join(scratch, "spill"),
  imageDigest,
  user: { uid: 65534, gid: 65534 },
});
const sandbox = await backend.reserve(
  { policy: { resources: { cpus: 1, memoryBytes: 1024 * 1024 * 1024, pids: 256 }, network: "outbound" } },
  { record: async () => {/* persist each record before its effect; see the quick start */} },
).start();

/** The agent's npm tree as `agent/…`. */
async function* agentTree(): AsyncGenerator<SandboxImportEntry> {
  for await (const entry of importDirectory(agentDir, { links: "inside" })) yield { ...entry, path: `agent/${entry.path}` };
}

/** The default route's gateway in the guest (the bridge's address on the host), from /proc/net/route. */
async function gateway(): Promise<string> {
  const routes = (await sandbox.run("/bin/cat", ["/proc/net/route"])).stdoutText.split("\n").map((line) => line.split(/\s+/));
  const hex = routes.find((fields) => fields[1] === "00000000")?.[2] ?? "";
  return [6, 4, 2, 0].map((at) => parseInt(hex.slice(at, at + 2), 16)).join(".");
}

try {
  const imported = await sandbox.importTree(agentTree(), { deadlineAt: Date.now() + 300_000 });
  console.log(`--- imported the agent: ${imported.files} entries, ${imported.bytes} bytes`);
  await sandbox.run("/bin/mkdir", ["-p", "/workspace/work/out"]);
  const baseUrl = `http://${await gateway()}:${standIn.port}`;
  console.log(`--- the stand-in model API listens on the host, reached as ${baseUrl}`);

  const session = await startAcpSession(sandbox, {
    executable: "/usr/local/bin/node",
    args: ["agent/node_modules/@zed-industries/claude-agent-acp/dist/index.js"],
    env: {
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: "stand-in-key",
      CLAUDE_CODE_SHELL: "/bin/sh",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
    maxBufferedOutputBytes: 16 * 1024 * 1024,
  }, {
    fileSystem: "sandbox",
    terminal: "sandbox",
    exitTimeoutMs: 2_000,
    onPermissionRequest(request) {
      const allow = request.options.find((option) => option.kind === "allow_once");
      const { kind, locations, title = "" } = request.toolCall;
      const writes = (kind === undefined || kind === null || kind === "edit") && /^(Write|Edit) /.test(title ?? "");
      const named = locations?.length ? locations.map((location) => location.path) : [title?.split(" ").at(-1) ?? ""];
      const inOut = writes && named.every((path) => posix.resolve("/workspace/work", path).startsWith("/workspace/work/out/"));
      console.log(`    permission asked: ${title} (kind ${kind ?? "none"}) -> ${allow && inOut ? "allow" : "deny"}`);
      if (allow && inOut) request.select(allow.optionId);
      else request.deny();
    },
  });
  const info = session.agent.agentInfo;
  console.log(`--- session with ${info?.name} ${info?.version} (ACP ${session.agent.protocolVersion}), auth methods: ${JSON.stringify(session.agent.authMethods ?? [])}`);

  const turn = session.prompt("Write a greeting into out/hello.txt");
  try {
    for await (const update of turn.updates) {
      if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") console.log(`    message chunk: ${JSON.stringify(update.content.text)}`);
      else if (update.sessionUpdate === "tool_call") console.log(`    tool call: ${update.title}`);
    }
    console.log(`    stop reason: ${await turn.stopReason}`);
  } catch (error) {
    console.log(`    the turn failed: ${(error as Error).message}\n${session.stderrTail}`);
  }
  const receipt = await session.close();
  console.log(`--- closed: exit ${JSON.stringify(receipt.exit)}; model requests: ${standIn.requests.length}`);
  for await (const entry of await sandbox.exportTree({ kind: "subtree", path: "work/out" })) {
    if (entry.type !== "file") continue;
    console.log(`--- exported ${entry.path}: ${JSON.stringify(await new Response(entry.body).text())}`);
  }
} finally {
  await sandbox.destroy();
  await standIn.close();
  await rm(scratch, { recursive: true, force: true });
}
