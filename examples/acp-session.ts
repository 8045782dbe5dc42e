/**
 * ACP session: an Agent Client Protocol agent in a hardened sandbox, driven from the host
 * through `@agentcell/docker/acp`. The whole ownership sequence: start the sandbox, import the
 * agent and a task, open one ACP session, run two turns (printing the agent's message chunks
 * and answering its permission requests), close the session (compute stops, files stay),
 * export the artifacts, destroy the sandbox, and check that nothing is left.
 *
 * Run it with `npm run demo:acp`, or directly (Node ≥ 23.6, Deno or Bun):
 *
 *   AGENTCELL_ENGINE=unix:///run/agentcell-test-engine/docker.sock \
 *   AGENTCELL_IMAGE=sha256:… node examples/acp-session.ts
 *
 * AGENTCELL_IMAGE must be a guest image with `/usr/local/bin/node` (`npm run demo:acp`
 * prepares one: `bash scripts/guest-images.sh node`). The agent is this project's fixture
 * agent (tests/fixtures/acp/agent.ts), a scripted agent on the SDK's agent side that needs no
 * model: each prompt is a command such as `task <input> <output>`. It travels into the
 * workspace together with the JavaScript of its dependencies, because the guest has no
 * registry. For your own agent, import its files (or bake them into your image) and change
 * the process request.
 */
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, importDirectory, type SandboxImportEntry } from "../mod.ts";
import { DockerEngine } from "../lib/engine/mod.ts";
import { startAcpSession } from "../lib/acp/mod.ts";
import { agentFiles, agentRequest } from "../tests/fixtures/acp/agent_files.ts";

const endpoint = process.env.AGENTCELL_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const imageDigest = process.env.AGENTCELL_IMAGE ?? "";
const scratch = await realpath(await mkdtemp(join(tmpdir(), "agentcell-acp-")));
await mkdir(join(scratch, "spill"));
await mkdir(join(scratch, "task"));
await writeFile(join(scratch, "task/notes.txt"), "collect the logs\nwrite the summary\nship the report\n");

/** The agent with its dependencies, and the host's `task/` directory as `task/…`. */
async function* files(): AsyncGenerator<SandboxImportEntry> {
  yield* agentFiles();
  for await (const entry of importDirectory(join(scratch, "task"))) yield { ...entry, path: `task/${entry.path}` };
}

const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: "acp-example",
  spillDirectory: join(scratch, "spill"),
  imageDigest,
  user: { uid: 65534, gid: 65534 },
});
const sandbox = await backend.reserve(
  { policy: { resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 }, network: "isolated" } },
  { record: async () => {/* persist each record before its effect; see the quick start */} },
).start();

try {
  // The agent and the task go in before the process starts.
  const imported = await sandbox.importTree(files(), { quota: { bytes: 64 * 1024 * 1024 }, deadlineAt: Date.now() + 60_000 });
  console.log(`--- imported the agent and the task: ${imported.files} files, ${imported.bytes} bytes`);

  // One process, one connection, one session; nothing of the host is granted. Permission
  // requests come here: this host allows writes and edits of files below work/out only and
  // denies everything else. Agents differ in what they send: `kind` is optional (a real agent sends
  // `Write /workspace/work/out/hello.txt` and no kind), paths may be absolute or relative to
  // the session's cwd, and `locations` (when given) lists them; judge the paths, not the kind.
  const session = await startAcpSession(sandbox, agentRequest(), {
    onPermissionRequest(request) {
      const allow = request.options.find((option) => option.kind === "allow_once");
      const { kind, locations, title = "" } = request.toolCall;
      const writes = (kind === undefined || kind === null || kind === "edit") && /^(Write|Edit) /.test(title ?? "");
      const named = locations?.length ? locations.map((location) => location.path) : [title?.split(" ").at(-1) ?? ""];
      const inOut = writes && named.every((path) => posix.resolve("/workspace/work", path).startsWith("/workspace/work/out/"));
      console.log(`    permission asked: ${title} -> ${allow && inOut ? "allow" : "deny"}`);
      if (allow && inOut) request.select(allow.optionId);
      else request.deny();
    },
  });
  const info = session.agent.agentInfo;
  console.log(`--- session ${session.sessionId} with ${info?.name} ${info?.version} (ACP ${session.agent.protocolVersion})`);

  for (const prompt of ["task task/notes.txt out/summary.txt", "task task/notes.txt out/follow-up.txt"]) {
    console.log(`--- prompt: ${prompt}`);
    const turn = session.prompt(prompt);
    try {
      // A failed turn errors its updates stream with the error stopReason rejects with.
      for await (const update of turn.updates) {
        if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
          console.log(`    message chunk: ${JSON.stringify(update.content.text)}`);
        }
      }
      console.log(`    stop reason: ${await turn.stopReason}`);
    } catch (error) {
      console.log(`    the turn failed: ${(error as Error).message}`);
      throw error;
    }
  }

  // Release: stdin closes, the agent exits, compute is removed, the files stay.
  const receipt = await session.close();
  console.log(`--- closed: exit ${JSON.stringify(receipt.exit)}, ${receipt.stderrBytes} stderr bytes; sandbox ${sandbox.state}`);

  for await (const entry of await sandbox.exportTree({ kind: "subtree", path: "work/out" })) {
    if (entry.type !== "file") continue;
    console.log(`--- exported ${entry.path}\n${(await new Response(entry.body).text()).trimEnd()}`);
  }
} finally {
  await sandbox.destroy();
  await rm(scratch, { recursive: true, force: true });
}

// Every resource is gone, checked by its exact identity.
const engine = new DockerEngine(endpoint);
const { keeperId, volumeName, accessorId } = sandbox.resources;
const left = [];
for (const path of [`/containers/${keeperId}/json`, `/volumes/${volumeName}`, ...(accessorId ? [`/containers/${accessorId}/json`] : [])]) {
  if ((await engine.request("GET", path, { expect: [200, 404] })).status === 200) left.push(path);
}
console.log(`--- destroyed: state ${sandbox.state}; leftovers: ${left.length}`);
if (left.length > 0) process.exit(1);
