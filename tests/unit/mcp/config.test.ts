import assert from "node:assert/strict";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  DEFAULT_MCP_MAX_SANDBOXES,
  DEFAULT_MCP_TOOL_TIMEOUT_MS,
  loadMcpServerConfig,
  MAX_MCP_FILE_BYTES,
  MAX_MCP_OUTPUT_BYTES,
  MAX_MCP_SANDBOXES,
  MAX_MCP_TOOL_TIMEOUT_MS,
  parseMcpServerConfig,
} from "../../../lib/mcp/config.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

const valid = {
  endpoint: "unix:///var/run/docker.sock",
  imageDigest: `sha256:${"a".repeat(64)}`,
  recordsDirectory: "/var/lib/agentcell-mcp/records",
};

function rejects(input: unknown, message: string): void {
  assert.throws(() => parseMcpServerConfig(input), (error) => {
    assert.ok(error instanceof SandboxConfigurationError, String(error));
    assert.equal(error.code, "configuration");
    assert.equal(error.message, message);
    return true;
  });
}

test("parseMcpServerConfig fills in the defaults", () => {
  const settings = parseMcpServerConfig(valid);
  assert.equal(settings.namespace, "agentcell-mcp");
  assert.deepEqual(settings.user, { uid: 65534, gid: 65534 });
  assert.deepEqual(settings.ceiling, { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 });
  assert.equal(settings.network, "isolated");
  assert.equal(settings.maxSandboxes, DEFAULT_MCP_MAX_SANDBOXES);
  assert.equal(settings.toolTimeoutMs, DEFAULT_MCP_TOOL_TIMEOUT_MS);
  assert.equal(settings.exportRoot, undefined);
  assert.ok(Object.isFrozen(settings));
});

test("parseMcpServerConfig requires the records directory, absolute and canonical", () => {
  rejects({ ...valid, recordsDirectory: undefined }, "Cannot configure the MCP server: mcp.recordsDirectory is required");
  rejects({ ...valid, recordsDirectory: "records" }, "Cannot configure the MCP server: mcp.recordsDirectory must be an absolute path (the records directory): write its absolute, canonical path, e.g. /var/lib/agentcell-mcp/records");
  rejects({ ...valid, exportRoot: "/srv/out/" }, "Cannot configure the MCP server: mcp.exportRoot must not end with '/' (the export root): write its absolute, canonical path, e.g. /srv/agentcell-exports");
  rejects({ ...valid, spillDirectory: "/srv/../spill" }, "Cannot configure the MCP server: mcp.spillDirectory must be canonical (no empty, '.' or '..' segments) (the spill directory): write its absolute, canonical path, e.g. /var/lib/agentcell-mcp/spill");
});

test("parseMcpServerConfig refuses each bound pushed past, naming the field", () => {
  rejects({ ...valid, maxSandboxes: 0 }, `Cannot configure the MCP server: mcp.maxSandboxes must be an integer from 1 to ${MAX_MCP_SANDBOXES}`);
  rejects({ ...valid, maxSandboxes: MAX_MCP_SANDBOXES + 1 }, `Cannot configure the MCP server: mcp.maxSandboxes must be an integer from 1 to ${MAX_MCP_SANDBOXES}`);
  rejects({ ...valid, toolTimeoutMs: MAX_MCP_TOOL_TIMEOUT_MS + 1 }, `Cannot configure the MCP server: mcp.toolTimeoutMs must be an integer from 1 to ${MAX_MCP_TOOL_TIMEOUT_MS} ms`);
  rejects({ ...valid, maxOutputBytes: MAX_MCP_OUTPUT_BYTES + 1 }, `Cannot configure the MCP server: mcp.maxOutputBytes must be an integer from 1 to ${MAX_MCP_OUTPUT_BYTES} bytes`);
  rejects({ ...valid, maxFileBytes: MAX_MCP_FILE_BYTES + 1 }, `Cannot configure the MCP server: mcp.maxFileBytes must be an integer from 1 to ${MAX_MCP_FILE_BYTES} bytes`);
  rejects({ ...valid, maxExportBytes: -1 }, `Cannot configure the MCP server: mcp.maxExportBytes must be an integer from 0 to ${Number.MAX_SAFE_INTEGER} bytes`);
  rejects({ ...valid, models: "all" }, "Cannot configure the MCP server: mcp.models is not a known field");
  rejects(
    { ...valid, user: 65534 },
    'Cannot configure the MCP server: mcp.user must be an object { "uid": N, "gid": N } of an unprivileged user, e.g. { "uid": 65534, "gid": 65534 }',
  );
});

test("loadMcpServerConfig names the file it cannot read or parse", async () => {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-mcp-config-")));
  try {
    const file = join(directory, "mcp.json");
    await assert.rejects(loadMcpServerConfig(file), (error) => {
      assert.ok(error instanceof SandboxConfigurationError);
      assert.match(error.message, new RegExp(`^Cannot read the MCP server configuration ${file}: .*ENOENT`, "u"));
      return true;
    });
    await writeFile(file, "{ not json");
    await assert.rejects(loadMcpServerConfig(file), (error) => {
      assert.ok(error instanceof SandboxConfigurationError);
      assert.match(error.message, new RegExp(`^Cannot read the MCP server configuration ${file}: it is not JSON \\(`, "u"));
      return true;
    });
    await writeFile(file, JSON.stringify(valid));
    assert.equal((await loadMcpServerConfig(file)).recordsDirectory, valid.recordsDirectory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});

test("startMcpServer refuses an exportRoot that is not a directory before it serves anything", async () => {
  const { startMcpServer } = await import("../../../lib/mcp/server.ts");
  const missing = join(tmpdir(), `agentcell-no-export-root-${crypto.randomUUID()}`);
  await assert.rejects(
    startMcpServer({ ...valid, exportRoot: missing }, { transport: undefined as never }),
    (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === `Cannot start the MCP server: mcp.exportRoot ${missing} is not a directory: make it, or leave exportRoot out of the configuration to offer no export`,
  );
});

test("startMcpServer names the config file's field and the fix for a backend field it refuses, before it asks the Engine", async () => {
  const { startMcpServer } = await import("../../../lib/mcp/server.ts");
  // An endpoint with no socket behind it: a refusal that reached the Engine would say it does not answer.
  const base = { ...valid, endpoint: `unix://${join(tmpdir(), `agentcell-no-engine-${crypto.randomUUID()}.sock`)}` };
  const cases: [Record<string, unknown>, string][] = [
    [{ user: { uid: 0, gid: 0 } }, "Cannot configure the MCP server: mcp.user.uid must be a non-root ID from 1 to 262143 (0 is root): use an unprivileged ID such as 65534"],
    [{ ceiling: { cpus: 0, memoryBytes: 64 * 1024 * 1024, pids: 32 } }, "Cannot configure the MCP server: mcp.ceiling.cpus must be a number of CPUs from 0.01 to 1024"],
    [{ namespace: "Bad NS" }, "Cannot configure the MCP server: mcp.namespace must be 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit"],
    [
      { network: { kind: "allowlist", hosts: ["example.com"] } },
      "Cannot configure the MCP server: mcp.network is an allowlist, which needs an egress proxy image: set mcp.proxyImageDigest to the exact ID of a local image with Node.js 23.6 or newer as node",
    ],
  ];
  for (const [fields, message] of cases) {
    await assert.rejects(startMcpServer({ ...base, ...fields } as never, { transport: undefined as never }), (error) => {
      assert.ok(error instanceof SandboxConfigurationError, String(error));
      assert.equal(error.message, message);
      return true;
    });
  }
});

test("boundedLog keeps every written line, prefix and cut note included, within MAX_MCP_LOG_LINE", async () => {
  const { boundedLog } = await import("../../../lib/mcp/_tool_call.ts");
  const { MAX_MCP_LOG_LINE } = await import("../../../lib/mcp/config.ts");
  const lines: string[] = [];
  const log = boundedLog((text) => lines.push(text));
  log(`sandbox_write_file ${"x".repeat(70_000)}`);
  log("short\nline");
  assert.equal(lines.length, 2);
  assert.ok(lines[0].endsWith("more characters cut)\n"), lines[0].slice(-60));
  assert.ok(lines[0].length - 1 <= MAX_MCP_LOG_LINE, `${lines[0].length - 1} characters`);
  assert.match(lines[1], /^agentcell-mcp \S+ short line\n$/u);
});

test("errorText words a process-count refusal as the model can act on it: the server's bound, wait", async () => {
  const { errorText } = await import("../../../lib/mcp/_tool_call.ts");
  const { SandboxQuotaError } = await import("../../../lib/sandbox/errors.ts");
  const refusal = new SandboxQuotaError(
    "Cannot start process: 16 processes already run in this sandbox (policy.maxConcurrentProcesses 16); wait for one to exit, or raise policy.maxConcurrentProcesses (up to 1024)",
  );
  assert.equal(errorText(refusal), "[quota] Cannot start process: 16 processes already run in this sandbox (the most this server's sandboxes run at once); wait for one to exit");
});
