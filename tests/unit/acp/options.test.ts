import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";
import {
  type AcpSessionOptions,
  DEFAULT_ACP_CLIENT_INFO,
  DEFAULT_ACP_EXIT_TIMEOUT_MS,
  DEFAULT_ACP_MAX_BUFFERED_UPDATE_BYTES,
  DEFAULT_ACP_MAX_MESSAGE_BYTES,
  DEFAULT_ACP_OPEN_TIMEOUT_MS,
  DEFAULT_ACP_STDERR_TAIL_BYTES,
  normalizeAcpSessionOptions,
} from "../../../lib/acp/mod.ts";

/** Normalises options the type system would refuse. */
function normalizeUntyped(options: unknown) {
  return normalizeAcpSessionOptions(options as AcpSessionOptions);
}

test("normalizeAcpSessionOptions fills every default: nothing granted", () => {
  const options = normalizeAcpSessionOptions({});
  assert.deepEqual(options, {
    clientInfo: { name: "@agentcell/docker", version: "0.2.0" },
    cwd: "/workspace/work",
    mcpServers: [],
    fileSystem: undefined,
    terminal: undefined,
    authenticate: undefined,
    onPermissionRequest: undefined,
    openTimeoutMs: 60_000,
    exitTimeoutMs: 5_000,
    maxMessageBytes: 8 * 1024 * 1024,
    maxBufferedUpdateBytes: 8 * 1024 * 1024,
    stderrTailBytes: 64 * 1024,
    signal: undefined,
  });
  assert.ok(Object.isFrozen(options) && Object.isFrozen(options.mcpServers));
  assert.deepEqual(
    [DEFAULT_ACP_OPEN_TIMEOUT_MS, DEFAULT_ACP_EXIT_TIMEOUT_MS, DEFAULT_ACP_MAX_MESSAGE_BYTES, DEFAULT_ACP_MAX_BUFFERED_UPDATE_BYTES, DEFAULT_ACP_STDERR_TAIL_BYTES],
    [60_000, 5_000, 8_388_608, 8_388_608, 65_536],
  );
});

test("DEFAULT_ACP_CLIENT_INFO names this package at its deno.json version", async () => {
  const manifest = JSON.parse(await readFile(new URL("../../../deno.json", import.meta.url), "utf8"));
  assert.deepEqual(DEFAULT_ACP_CLIENT_INFO, { name: manifest.name, version: manifest.version });
});

test("normalizeAcpSessionOptions keeps granted handlers and servers as given", () => {
  const fileSystem = { readTextFile: () => ({ content: "" }) };
  const mcpServers = [
    { name: "stdio", command: "/bin/mcp", args: [], env: [{ name: "TOKEN", value: "x" }] },
    { type: "http" as const, name: "web", url: "http://mcp.internal/", headers: [] },
  ];
  const options = normalizeAcpSessionOptions({ fileSystem, mcpServers, cwd: "/workspace/work/task", maxMessageBytes: 1 });
  assert.equal(options.fileSystem, fileSystem);
  assert.deepEqual(options.mcpServers, mcpServers);
  assert.equal(options.cwd, "/workspace/work/task");
  assert.equal(options.maxMessageBytes, 1);
  const inside = normalizeAcpSessionOptions({ fileSystem: "sandbox", terminal: "sandbox" });
  assert.equal(inside.fileSystem, "sandbox");
  assert.equal(inside.terminal, "sandbox");
});

const rejected: [unknown, string][] = [
  [null, "options must be an object"],
  [{ bogus: 1 }, "options.bogus is not a known field"],
  [{ openTimeoutMs: 0 }, "options.openTimeoutMs must be an integer from 1 to 2147483647 milliseconds"],
  [{ exitTimeoutMs: 2 ** 31 }, "options.exitTimeoutMs must be an integer from 1 to 2147483647 milliseconds"],
  [{ exitTimeoutMs: 1.5 }, "options.exitTimeoutMs must be an integer from 1 to 2147483647 milliseconds"],
  [{ maxMessageBytes: 0 }, "options.maxMessageBytes must be an integer from 1 to 1073741824 bytes"],
  [{ maxBufferedUpdateBytes: 2 ** 30 + 1 }, "options.maxBufferedUpdateBytes must be an integer from 1 to 1073741824 bytes"],
  [{ stderrTailBytes: "1" }, "options.stderrTailBytes must be an integer from 1 to 1073741824 bytes"],
  [{ cwd: "work" }, "options.cwd must be absolute (start with /)"],
  [{ cwd: "/workspace/../etc" }, "options.cwd must not contain a '..' segment"],
  [{ mcpServers: "x" }, "options.mcpServers must be an array of MCP servers"],
  [
    { mcpServers: [{ type: "http", name: "a", url: "u" }] },
    'options.mcpServers.0 must be an ACP McpServer: { name, command, args, env } (stdio) or { type: "http" | "sse", name, url, headers }',
  ],
  [{ fileSystem: { readTextFile: 1 } }, "options.fileSystem.readTextFile must be a function"],
  [{ fileSystem: { exec: () => 1 } }, "options.fileSystem.exec is not a known field"],
  [{ terminal: { create: () => 1 } }, "options.terminal.output is required"],
  [{ terminal: "host" }, 'options.terminal must be "sandbox" or an object of handlers'],
  [{ fileSystem: "guest" }, 'options.fileSystem must be "sandbox" or an object of handlers'],
  [{ onPermissionRequest: "deny" }, "options.onPermissionRequest must be a function"],
  [{ authenticate: "fixture-key" }, "options.authenticate must be a function"],
  [{ signal: {} }, "options.signal must be an AbortSignal"],
  [{ clientInfo: { name: "x" } }, "options.clientInfo.version is required"],
];

for (const [options, reason] of rejected) {
  test(`normalizeAcpSessionOptions rejects ${JSON.stringify(options)}`, () => {
    assert.throws(
      () => normalizeUntyped(options),
      (error) =>
        error instanceof SandboxConfigurationError && error.code === "configuration" &&
        error.message === `Cannot start ACP session: ${reason}`,
    );
  });
}
