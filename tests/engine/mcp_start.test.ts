// The MCP server's check of its Engine at start: a config whose endpoint does not answer,
// whose profile does not admit the daemon, or whose image is not on the engine exits 1 with
// one line naming the config field and the fix, before it reads stdin (the test never writes
// to it) and before it makes anything (not even the records directory).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unmetDaemonRequirements } from "../../lib/docker/admission/daemon.ts";
import { DOCKER_SANDBOX_PROFILES } from "../../lib/docker/profiles.ts";
import type { McpServerConfig } from "../../lib/mcp/config.ts";
import { endpoint, engineTest, runtimeCommand } from "./_engine.ts";
import { type McpWorld, withMcpWorld } from "./_mcp.ts";

const MCP_MAIN = fileURLToPath(new URL("../../lib/mcp/main.ts", import.meta.url));
const CLI_MAIN = fileURLToPath(new URL("../../lib/cli/main.ts", import.meta.url));

/** Start `script` with `args`, stdin open and never written; its exit code and output. */
function start(script: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command, base] = runtimeCommand(script);
  const child = spawn(command, [...base, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code, stdout, stderr });
    })
  );
}

/** The server of `overrides` exits 1 at once, printing exactly `line`, and makes nothing. */
async function refusesToStart(overrides: Partial<McpServerConfig>, line: (world: McpWorld) => string | Promise<string>): Promise<void> {
  await withMcpWorld(overrides, async (world) => {
    const result = await start(MCP_MAIN, ["--config", world.file]);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, `agentcell-mcp: ${await line(world)}\n`);
    assert.equal(result.stdout, "", "no protocol message was written");
    assert.equal(await stat(world.records).then(() => true, () => false), false, "the records directory was not made");
  });
}

engineTest("MCP server with an endpoint that does not answer exits 1 at start naming mcp.endpoint and the fix", async () => {
  const absent = `unix://${join("/tmp", `agentcell-absent-${crypto.randomUUID()}.sock`)}`;
  await refusesToStart(
    { endpoint: absent },
    () =>
      `[engine] Cannot start the MCP server: mcp.endpoint ${absent} does not answer (ENOENT: no socket exists at that path): start the Docker daemon, or set mcp.endpoint to the unix:/// path of its socket`,
  );
});

engineTest("MCP server whose profile does not admit the daemon exits 1 at start naming mcp.profile and the profile that does", async (engine) => {
  const [version, info] = await Promise.all([engine.version(), engine.info()]);
  // The test engine runs the cgroupfs driver: the default profile linux-x64 (systemd) refuses it.
  const unmet = unmetDaemonRequirements(DOCKER_SANDBOX_PROFILES["linux-x64"], version, info);
  assert.notDeepEqual(unmet, [], "linux-x64 refuses the test engine");
  await refusesToStart(
    { profile: "linux-x64" },
    () =>
      `[unsupported] Cannot start the MCP server: mcp.profile linux-x64 does not admit the Docker daemon at ${endpoint} (agentcell doctor --endpoint ${endpoint} shows every profile's verdict): it needs ${
        unmet.join("; ")
      }; profile linux-x64-cgroupfs admits this daemon: set mcp.profile to "linux-x64-cgroupfs"`,
  );
});

engineTest("MCP server whose image is not on the engine exits 1 at start naming mcp.imageDigest and agentcell prepare-image", async () => {
  const absent = `sha256:${"0".repeat(64)}`;
  const message =
    `Cannot start the MCP server: mcp.imageDigest ${absent} is not an image of the Docker Engine at ${endpoint} (it never pulls or builds): run agentcell prepare-image --endpoint ${endpoint} SOURCE TAG first and set mcp.imageDigest to the ID it prints`;
  await refusesToStart({ imageDigest: absent }, () => `[unsupported] ${message}`);
  // `agentcell mcp --config FILE` is the same server: exit 1 and the same line, as the command words a failure.
  await withMcpWorld({ imageDigest: absent }, async (world) => {
    const result = await start(CLI_MAIN, ["mcp", "--config", world.file]);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, `SandboxUnsupportedError [unsupported]: ${message}\n`);
  });
});
