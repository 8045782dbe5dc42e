// The MCP server (`@agentcell/docker/mcp`), started with this lane's runtime and driven by
// the SDK's own Client over stdio: the tools and their schemas, a sandbox's whole life,
// refusals past the operator's authority, a deadline, and reclaiming after a SIGKILL.
import assert from "node:assert/strict";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { parseMcpServerConfig } from "../../lib/mcp/config.ts";
import { McpSandboxes } from "../../lib/mcp/_sandboxes.ts";
import { connect, type McpConnection, type McpWorld, sandboxIdOf, withMcpWorld } from "./_mcp.ts";
import { assertNamespaceEmpty, resourcesOf } from "./_namespace.ts";
import { engineTest, eventually } from "./_engine.ts";

/** Run `fn` with a connected server of `world`; close it, then reclaim whatever is left. */
async function withServer(world: McpWorld, fn: (connection: McpConnection) => Promise<void>): Promise<void> {
  const connection = await connect(world);
  try {
    await fn(connection);
  } finally {
    await connection.client.close();
    // Whatever a failed test left: the records name it.
    await new McpSandboxes(parseMcpServerConfig(world.config)).reclaim();
  }
}

const TOOLS = [
  "sandbox_create",
  "sandbox_destroy",
  "sandbox_export",
  "sandbox_list",
  "sandbox_list_directory",
  "sandbox_read_file",
  "sandbox_run",
  "sandbox_write_file",
];

engineTest("MCP server lists its tools with their input schemas, the ceiling as maxima", async () => {
  await withMcpWorld({}, async (world) => {
    await withServer(world, async ({ client }) => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), TOOLS);
      const schema = (name: string) => tools.find((tool) => tool.name === name)!.inputSchema as { properties: Record<string, Record<string, unknown>>; required?: string[] };
      assert.equal(schema("sandbox_create").properties.memoryBytes.maximum, 128 * 1024 * 1024);
      assert.equal(schema("sandbox_create").properties.pids.maximum, 64);
      assert.deepEqual(schema("sandbox_run").required?.sort(), ["command", "sandboxId"]);
      assert.equal(schema("sandbox_run").properties.command.type, "array");
      assert.deepEqual(schema("sandbox_write_file").required?.sort(), ["content", "path", "sandboxId"]);
      assert.deepEqual(schema("sandbox_export").required?.sort(), ["sandboxId", "target"]);
    });
  });
});

engineTest("MCP server: create, run echo hi, write and read a file, list, export under the export root, destroy", async (engine) => {
  await withMcpWorld({}, async (world) => {
    await withServer(world, async ({ call, stderr }) => {
      const created = await call("sandbox_create", { memoryBytes: 64 * 1024 * 1024 });
      assert.equal(created.isError, false, created.text);
      const sandboxId = sandboxIdOf(created.text);
      assert.deepEqual((await readdir(world.records)).sort(), [`${sandboxId}.json`, `${sandboxId}.lock`].sort(), "recorded in the records directory");

      const ran = await call("sandbox_run", { sandboxId, command: ["/bin/echo", "hi"] });
      assert.equal(ran.text, "exit code 0\n--- stdout: 3 bytes\nhi\n--- stderr: empty\n");

      const wrote = await call("sandbox_write_file", { sandboxId, path: "work/out/note.txt", content: "hello from the model\n" });
      assert.equal(wrote.text, "wrote 21 bytes to /workspace/work/out/note.txt");
      assert.deepEqual(await call("sandbox_read_file", { sandboxId, path: "work/out/note.txt" }), { text: "hello from the model\n", isError: false });
      const listed = await call("sandbox_list_directory", { sandboxId, path: "work/out" });
      assert.match(listed.text, /^\/workspace\/work\/out: 1 entry\nfile +21 note\.txt$/u);
      // A name the guest chose with a newline is one row, JSON-quoted (it cannot forge rows).
      await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "mkdir -p /workspace/work/odd && : > \"/workspace/work/odd/$(printf 'a\\nmore')\" && : > /workspace/work/odd/plain"] });
      const odd = await call("sandbox_list_directory", { sandboxId, path: "work/odd" });
      assert.equal(odd.isError, false, odd.text);
      assert.match(odd.text, /^\/workspace\/work\/odd: 2 entries\nfile +0 "a\\nmore"\nfile +0 plain$/u);
      // Bytes that are not UTF-8 are never garbled silently: a read as utf8 is refused, output says so.
      await call("sandbox_write_file", { sandboxId, path: "work/bin", content: "/wB4", encoding: "base64" });
      assert.deepEqual(await call("sandbox_read_file", { sandboxId, path: "work/bin" }), {
        isError: true,
        text: '[configuration] Cannot read file work/bin as utf8: it is not UTF-8 text (3 bytes); read it with encoding "base64"',
      });
      assert.deepEqual(await call("sandbox_read_file", { sandboxId, path: "work/bin", encoding: "base64" }), { text: "/wB4", isError: false });
      const binary = await call("sandbox_run", { sandboxId, command: ["/bin/cat", "/workspace/work/bin"] });
      assert.match(binary.text, /^exit code 0\n--- stdout: 3 bytes, NOT UTF-8 text: invalid bytes shown as U\+FFFD \(redirect it to a file and read that with sandbox_read_file, encoding base64\)\n/u);
      const notBase64 = await call("sandbox_write_file", { sandboxId, path: "work/x", content: "!!!", encoding: "base64" });
      assert.equal(notBase64.isError, true);
      assert.match(notBase64.text, /Cannot write file: content is not valid base64 \(encoding "base64"\); give base64 text, or use encoding "utf8"/u);

      const listing = await call("sandbox_list");
      assert.match(listing.text, new RegExp(`^1 of at most 1 sandboxes\\n${sandboxId} running `, "u"));

      const exported = await call("sandbox_export", { sandboxId, path: "work/out", target: "result" });
      assert.equal(exported.isError, false, exported.text);
      assert.equal(await readFile(join(world.exportRoot, "result", "note.txt"), "utf8"), "hello from the model\n");
      // After the export's stop, a command is refused with what the model can still do.
      const after = await call("sandbox_run", { sandboxId, command: ["/bin/true"] });
      assert.equal(after.isError, true);
      assert.match(after.text, /^\[stopped\] .* \(its commands and file tools are over: destroy it with sandbox_destroy, and make a new one with sandbox_create\)$/u);

      assert.deepEqual(await call("sandbox_destroy", { sandboxId }), { text: `sandbox ${sandboxId} is destroyed`, isError: false });
      await assertNamespaceEmpty(engine, world.namespace);
      assert.deepEqual(await readdir(world.records), [], "the record goes with the sandbox");
      assert.match(stderr(), /sandbox_run \{"sandboxId":"[0-9a-f]{32}","command":\["\/bin\/echo","hi"\]\} -> ok in \d+ ms/u, "every call is logged");
    });
  });
}, { timeout: 180_000 });

engineTest("MCP server refuses calls past the ceiling, the sandbox count, the workspace and the export root, each with a clear message", async (engine) => {
  await withMcpWorld({ maxFileBytes: 1024 }, async (world) => {
    await withServer(world, async ({ call }) => {
      const big = await call("sandbox_create", { memoryBytes: 1024 * 1024 * 1024 });
      assert.equal(big.isError, true);
      assert.match(big.text, /must be at most 134217728 bytes, the operator's ceiling \(ceiling\.memoryBytes in the server's configuration\): ask for less at memoryBytes/u);
      // Each bound of a resource, and an empty command, names the field and the fix.
      const tiny = await call("sandbox_create", { cpus: 0 });
      assert.equal(tiny.isError, true);
      assert.match(tiny.text, /must be at least 0\.01 CPUs, the least a sandbox runs with: ask for more, or leave cpus out to get the ceiling/u);
      const fraction = await call("sandbox_create", { pids: 8.5 });
      assert.equal(fraction.isError, true);
      assert.match(fraction.text, /must be a whole number of PIDs: ask for an integer, or leave pids out to get the ceiling/u);
      assert.deepEqual(await resourcesOf(engine, world.namespace), [], "nothing was created");
      const empty = await call("sandbox_run", { sandboxId: "x", command: [] });
      assert.equal(empty.isError, true);
      assert.match(empty.text, /must name the executable: an argument vector such as \["\/bin\/sh", "-c", "ls -l"\]/u);
      // A command's own timeout past the tool's deadline names the setting and the fix.
      const late = await call("sandbox_run", { sandboxId: "x", command: ["/bin/true"], timeoutMs: 99_999_999 });
      assert.equal(late.isError, true);
      assert.match(late.text, /must be at most \d+ ms, the tool's deadline \(toolTimeoutMs in the server's configuration\): ask for less, or leave it out to get the whole deadline at timeoutMs/u);

      // A field the tool does not take is refused, not dropped (the model asked for something).
      const unknown = await call("sandbox_create", { network: "outbound" });
      assert.equal(unknown.isError, true, unknown.text);
      assert.match(unknown.text, /network/u);
      const sandboxId = sandboxIdOf((await call("sandbox_create")).text);
      assert.deepEqual(await call("sandbox_create"), {
        isError: true,
        text: "[quota] Cannot create sandbox: 1 sandbox runs already, the most this server allows (maxSandboxes in its configuration): destroy one first with sandbox_destroy",
      });
      assert.deepEqual(await call("sandbox_read_file", { sandboxId, path: "/etc/passwd" }), {
        isError: true,
        text: "[configuration] Cannot read file: path must be relative (not start with /)",
      });
      const up = await call("sandbox_write_file", { sandboxId, path: "../escape.txt", content: "x" });
      assert.equal(up.isError, true);
      assert.match(up.text, /^\[configuration\] Cannot write file: path must not contain a '\.\.' segment/u);
      const outside = await call("sandbox_export", { sandboxId, path: "work", target: "../../escaped" });
      assert.equal(outside.isError, true);
      assert.equal(
        outside.text,
        `[configuration] Cannot export files: target must name a new directory inside the export root ${world.exportRoot} (target must not contain a '..' segment)`,
      );
      // A file past maxFileBytes is refused naming the server's bound, not the library's option.
      await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "head -c 2000 /dev/zero > /workspace/work/big"] });
      assert.equal(
        (await call("sandbox_read_file", { sandboxId, path: "work/big" })).text,
        "[quota] Cannot read file work/big: it is larger than the 1024 bytes this server moves in one call (maxFileBytes in its configuration); copy it out with sandbox_export",
      );
      // Refusals known before the stop leave the sandbox running.
      await mkdir(join(world.exportRoot, "taken"));
      const taken = await call("sandbox_export", { sandboxId, path: "work", target: "taken" });
      assert.equal(taken.text, `[configuration] Cannot export files: target taken already exists under the export root ${world.exportRoot}; name a new directory`);
      const orphan = await call("sandbox_export", { sandboxId, path: "work", target: "no/such" });
      assert.match(orphan.text, /^\[configuration\] Cannot export files: the parent of target no\/such is not a directory under the export root /u);
      const missing = await call("sandbox_export", { sandboxId, path: "work/none", target: "fresh" });
      assert.equal(missing.text, "[configuration] Cannot export files: /workspace/work/none is not a directory of the sandbox; name one (default work)");
      // An entry the export would refuse after the stop is refused before it, naming it.
      await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "mkdir -p /workspace/work/linked && ln -s /etc/passwd /workspace/work/linked/pw"] });
      const linked = await call("sandbox_export", { sandboxId, path: "work/linked", target: "linked" });
      assert.deepEqual(linked, {
        isError: true,
        text: '[unsupported] Cannot export files: "work/linked/pw" is neither a regular file nor a directory (a symlink, a FIFO, a socket or a device), which an export refuses; remove it with sandbox_run, or export a subtree without it (nothing was stopped)',
      });
      // Output past what the server keeps stops the command at the bound, whether or not it
      // had already exited; the answer says so, never "killed" with exit code 0.
      const flood = await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "head -c 300000 /dev/zero"] });
      assert.equal(flood.isError, false, flood.text);
      assert.match(
        flood.text,
        /^stopped at the output limit \(exit code \d+\): its output passed the 131072 bytes the server keeps \(twice maxOutputBytes\); the rest was dropped and what still ran was killed\n--- stdout: \d+ bytes, TRUNCATED: the first 65536 shown/u,
      );
      // A command the kernel's OOM killer ended is said to be one (busybox sort holds its input).
      const hog = await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "head -c 300000000 /dev/zero | sort > /dev/null"] });
      assert.match(hog.text, /^exit code 137: killed by the kernel's out-of-memory killer \(the sandbox's memory is 134217728 bytes\)\n/u);
      assert.equal((await call("sandbox_run", { sandboxId, command: ["/bin/echo", "still running"] })).text, "exit code 0\n--- stdout: 14 bytes\nstill running\n--- stderr: empty\n");
      assert.deepEqual(await call("sandbox_run", { sandboxId: "0".repeat(32), command: ["/bin/true"] }), {
        isError: true,
        text: '[configuration] Cannot find sandbox "00000000000000000000000000000000": no sandbox of this server has that ID (it was destroyed, or never created); list them with sandbox_list',
      });
      await call("sandbox_destroy", { sandboxId });
    });
  });
}, { timeout: 180_000 });

engineTest("MCP server ends a command that would run forever at the tool's deadline, with what it wrote and what it moved out of its group", async () => {
  await withMcpWorld({ toolTimeoutMs: 8_000 }, async (world) => {
    await withServer(world, async ({ call }) => {
      const sandboxId = sandboxIdOf((await call("sandbox_create")).text);
      const ran = await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", "setsid sleep 1000001 & echo started; exec sleep 1000000"] });
      assert.equal(ran.isError, false, ran.text);
      assert.match(ran.text, /^killed \(timeout, exit code \d+\): it ran until its timeout of \d+ ms \(the tool's deadline, or the timeoutMs asked for\)\n--- stdout: 8 bytes\nstarted\n/u);
      // The process it moved into a session of its own (setsid) ended with it. The guest's
      // /proc is scanned for it (its own scan does not match: the pattern is split).
      const scan = 'for d in /proc/[0-9]*; do tr "\\0" " " < $d/cmdline 2>/dev/null; echo; done | grep -c "sleep 100000""1" || true';
      await eventually("the setsid process to be gone", async () => (await call("sandbox_run", { sandboxId, command: ["/bin/sh", "-c", scan] })).text.startsWith("exit code 0\n--- stdout: 2 bytes\n0\n") ? true : undefined);
      // The sandbox still works after the deadline.
      assert.equal((await call("sandbox_run", { sandboxId, command: ["/bin/echo", "after"] })).text, "exit code 0\n--- stdout: 6 bytes\nafter\n--- stderr: empty\n");
      await call("sandbox_destroy", { sandboxId });
    });
  });
}, { timeout: 180_000 });

engineTest("MCP server SIGKILLed with a sandbox running: its next start reclaims it from the records", async (engine) => {
  await withMcpWorld({}, async (world) => {
    const first = await connect(world);
    let sandboxId: string;
    try {
      sandboxId = sandboxIdOf((await first.call("sandbox_create")).text);
      assert.notDeepEqual(await resourcesOf(engine, world.namespace), []);
    } finally {
      const pid = first.transport.pid!;
      process.kill(pid, "SIGKILL");
      await eventually("the server to be gone", () => {
        try {
          process.kill(pid, 0);
          return undefined;
        } catch {
          return true;
        }
      });
      await first.client.close();
    }
    assert.deepEqual((await readdir(world.records)).filter((name) => name.endsWith(".json")), [`${sandboxId}.json`], "the record outlives the server");
    assert.notDeepEqual(await resourcesOf(engine, world.namespace), [], "and so does the sandbox");
    await withServer(world, async ({ stderr, call }) => {
      assert.match(stderr(), /start: .*records: 1 reclaimed, 0 pending, 0 refused/u);
      assert.equal((await call("sandbox_list")).text, "0 of at most 1 sandboxes");
    });
    await assertNamespaceEmpty(engine, world.namespace);
    assert.deepEqual(await readdir(world.records), []);
  });
}, { timeout: 180_000 });
