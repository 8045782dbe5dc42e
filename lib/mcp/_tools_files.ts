/**
 * The file tools of the MCP server: `sandbox_read_file`, `sandbox_write_file` and
 * `sandbox_list_directory` work inside the guest as the sandbox user, on workspace-relative
 * paths (the library refuses anything else: absolute paths, `..`); `sandbox_export` stops
 * compute and writes a subtree into a new directory under the operator's export root.
 *
 * @module
 */
import { lstat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { exportToDirectory } from "../docker/files/export_to_directory.ts";
import { SandboxConfigurationError, SandboxQuotaError, SandboxUnsupportedError } from "../sandbox/errors.ts";
import { parseSandboxRelativePath } from "../sandbox/paths.ts";
import { isUtf8 } from "../streams/utf8.ts";
import { MAX_MCP_LIST_ENTRIES, type McpServerSettings } from "./config.ts";
import type { McpSandboxes } from "./_sandboxes.ts";
import { type McpLog, toolCall } from "./_tool_call.ts";

const sandboxId = z.string().max(64).describe("The sandbox's ID (from sandbox_create or sandbox_list)");
const guestPath = z.string().max(4096).describe(
  "A path relative to /workspace, e.g. work/notes.txt (work/ is where commands run); no leading /, no '..'",
);

/**
 * Lists one guest directory, one entry a line: type (d, f, l or o), size in bytes (files),
 * name. `$1` is the workspace-relative path, `$2` the most entries to print.
 */
const LIST_SCRIPT = [
  'cd /workspace && cd -- "./$1" || exit 3',
  "n=0",
  "for f in * .*; do",
  '  case "$f" in .|..) continue ;; esac',
  '  if [ -L "$f" ]; then t=l; elif [ -d "$f" ]; then t=d; elif [ -f "$f" ]; then t=f; elif [ -e "$f" ]; then t=o; else continue; fi',
  '  n=$((n + 1)); if [ "$n" -gt "$2" ]; then printf "more\\0"; exit 0; fi',
  '  s=; if [ "$t" = f ]; then s=$(wc -c < "$f" 2>/dev/null | tr -d " "); fi',
  // One record per entry, ended by a NUL: a name may hold any byte but NUL and "/".
  '  printf "%s\\t%s\\t%s\\0" "$t" "$s" "$f"',
  "done",
].join("\n");

/**
 * The check of `sandbox_export` before the stop: exit 3 when `/workspace/$1` is not a
 * directory (or a symlink to one), 4 with the first offending path on stdout when the subtree
 * holds an entry that is neither a regular file nor a directory; 0 otherwise, and when the
 * image has no `find` (what the export itself checks after the stop still holds).
 */
const PROBE_SCRIPT = 'd="/workspace/$1"; { [ -d "$d" ] && [ ! -L "$d" ]; } || exit 3; ' +
  'command -v find >/dev/null 2>&1 || exit 0; o=$(find "$d" ! -type f ! -type d 2>/dev/null | head -n 1); [ -z "$o" ] || { printf "%s\\n" "${o#/workspace/}"; exit 4; }';

const TYPES: Readonly<Record<string, string>> = { d: "directory", f: "file", l: "symlink", o: "other" };

/** Register the four file tools. */
export function registerFileTools(server: McpServer, settings: McpServerSettings, sandboxes: McpSandboxes, log: McpLog): void {
  const timeoutMs = settings.toolTimeoutMs;
  const maxFileBytes = settings.maxFileBytes;
  const encoding = z.enum(["utf8", "base64"]).optional();
  const writeEncoding = encoding.describe("How content is given: utf8 text (default) or base64 bytes");
  const readEncoding = encoding.describe("How the content is answered: utf8 text (default; a file that is not UTF-8 is refused) or base64 bytes");

  server.registerTool("sandbox_read_file", {
    title: "Read a file of a sandbox",
    description: `Read one file of a running sandbox (at most ${maxFileBytes} bytes; larger files are refused).`,
    inputSchema: z.strictObject({ sandboxId, path: guestPath, encoding: readEncoding }),
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, toolCall("sandbox_read_file", timeoutMs, log, async (args, call) => {
    const bytes = await sandboxes.get(args.sandboxId).readFile(args.path, { maxBytes: maxFileBytes, signal: call.signal, deadlineAt: call.deadlineAt }).catch((error) => {
      // The library's fix names its own option; here the bound is the server's.
      if (error instanceof SandboxQuotaError) {
        throw new SandboxQuotaError(
          `Cannot read file ${args.path}: it is larger than the ${maxFileBytes} bytes this server moves in one call (maxFileBytes in its configuration); copy it out with sandbox_export`,
          { cause: error },
        );
      }
      throw error;
    });
    if (args.encoding === "base64") return btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(""));
    if (!isUtf8(bytes)) {
      throw new SandboxConfigurationError(`Cannot read file ${args.path} as utf8: it is not UTF-8 text (${bytes.byteLength} bytes); read it with encoding "base64"`);
    }
    return new TextDecoder().decode(bytes);
  }));

  server.registerTool("sandbox_write_file", {
    title: "Write a file into a sandbox",
    description: `Write one file into a running sandbox (created or replaced atomically, at most ${maxFileBytes} bytes; parent directories are made).`,
    inputSchema: z.strictObject({
      sandboxId,
      path: guestPath,
      content: z.string().max(2 * maxFileBytes).describe("The file's content"),
      encoding: writeEncoding,
    }),
    annotations: { destructiveHint: true, openWorldHint: false },
  }, toolCall("sandbox_write_file", timeoutMs, log, async (args, call) => {
    let data: Uint8Array;
    try {
      data = args.encoding === "base64" ? Uint8Array.from(atob(args.content), (char) => char.charCodeAt(0)) : new TextEncoder().encode(args.content);
    } catch {
      throw new SandboxConfigurationError('Cannot write file: content is not valid base64 (encoding "base64"); give base64 text, or use encoding "utf8"');
    }
    if (data.byteLength > maxFileBytes) {
      throw new SandboxQuotaError(
        `Cannot write file: content is ${data.byteLength} bytes, above the ${maxFileBytes} bytes this server moves in one call (maxFileBytes in its configuration)`,
      );
    }
    const receipt = await sandboxes.get(args.sandboxId).writeFile(args.path, data, { signal: call.signal, deadlineAt: call.deadlineAt });
    return `wrote ${receipt.bytes} bytes to /workspace/${args.path}`;
  }));

  server.registerTool("sandbox_list_directory", {
    title: "List a directory of a sandbox",
    description: `List one directory of a running sandbox: type, size and name of each entry (at most ${MAX_MCP_LIST_ENTRIES}).`,
    inputSchema: z.strictObject({ sandboxId, path: guestPath.default("work") }),
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, toolCall("sandbox_list_directory", timeoutMs, log, async (args, call) => {
    const path = parseSandboxRelativePath(args.path, "path");
    const sandbox = sandboxes.get(args.sandboxId);
    const result = await sandbox.run("/bin/sh", ["-c", LIST_SCRIPT, "sh", path, String(MAX_MCP_LIST_ENTRIES)], {
      maxOutputBytes: MAX_MCP_LIST_ENTRIES * 4400,
      signal: call.signal,
      timeoutMs: Math.max(1, call.deadlineAt - Date.now()),
    });
    if (result.exit.code === 3) {
      throw new SandboxConfigurationError(`Cannot list directory: /workspace/${path} is not a directory of the sandbox (or it cannot be entered)`);
    }
    if (result.exit.code !== 0) throw new SandboxConfigurationError(`Cannot list directory: the guest's listing failed (exit code ${result.exit.code}): ${result.stderrText.trim()}`);
    const records = result.stdoutText.split("\0").filter(Boolean);
    const more = records.at(-1) === "more";
    const rows = (more ? records.slice(0, -1) : records).map((record) => {
      const [type = "", size = "", ...rest] = record.split("\t");
      const name = rest.join("\t");
      // A name with a control character (a newline, a tab) is shown JSON-quoted, so no name
      // can forge a row or the TRUNCATED line.
      // deno-lint-ignore no-control-regex
      const shown = /[\u0000-\u001f\u007f]/u.test(name) ? JSON.stringify(name) : name;
      return `${(TYPES[type] ?? type).padEnd(9)} ${size === "" ? "-".padStart(12) : size.padStart(12)} ${shown}`;
    });
    const head = `/workspace/${path}: ${rows.length} entr${rows.length === 1 ? "y" : "ies"}${more ? `, TRUNCATED: only the first ${MAX_MCP_LIST_ENTRIES} shown` : ""}`;
    return [head, ...rows].join("\n");
  }));

  server.registerTool("sandbox_export", {
    title: "Export files of a sandbox to the host",
    description: settings.exportRoot === undefined
      ? "Export a subtree of a sandbox to the host: not available, the operator configured no export root."
      : "Export a subtree of a sandbox into a new directory on the host, under the operator's export root. This STOPS the sandbox's compute first " +
        `(no more commands; its files stay until sandbox_destroy). Regular files and directories only, at most ${settings.maxExportBytes} bytes.`,
    inputSchema: z.strictObject({
      sandboxId,
      path: guestPath.default("work").describe("The subtree to export, relative to /workspace (default work)"),
      target: z.string().max(255 * 16).describe("Name of a new directory under the export root, e.g. results/run-1 (relative; its parent must exist)"),
    }),
    annotations: { destructiveHint: true, openWorldHint: false },
  }, toolCall("sandbox_export", timeoutMs, log, async (args, call) => {
    const root = settings.exportRoot;
    if (root === undefined) {
      throw new SandboxConfigurationError("Cannot export files: this server has no export root (exportRoot in its configuration), so nothing may be written to the host");
    }
    const path = parseSandboxRelativePath(args.path, "path");
    let target: string;
    try {
      target = parseSandboxRelativePath(args.target, "target");
    } catch (error) {
      throw new SandboxConfigurationError(
        `Cannot export files: target must name a new directory inside the export root ${root} (${(error as Error).message.replace(/^Cannot parse sandbox path: /u, "")})`,
        { cause: error },
      );
    }
    const sandbox = sandboxes.get(args.sandboxId);
    const host = join(root, target);
    // What can be known before the stop is checked before it: the stop cannot be undone.
    if (await lstat(host).then(() => true, () => false)) {
      throw new SandboxConfigurationError(`Cannot export files: target ${target} already exists under the export root ${root}; name a new directory`);
    }
    if (!(await lstat(dirname(host)).then((stats) => stats.isDirectory(), () => false))) {
      throw new SandboxConfigurationError(`Cannot export files: the parent of target ${target} is not a directory under the export root ${root}; make it first or name another target`);
    }
    if (sandbox.state === "running") {
      // Exit 3: not a directory; exit 4: an entry that is neither a file nor a directory (the
      // export refuses it, after the stop). Without `find` in the image only the first is
      // known here; the export's own check still holds after the stop.
      const probe = await sandbox.run("/bin/sh", ["-c", PROBE_SCRIPT, "sh", path], {
        signal: call.signal,
        timeoutMs: Math.max(1, call.deadlineAt - Date.now()),
        maxOutputBytes: 8192,
      });
      if (probe.exit.kind === "exited" && probe.exit.code === 3) {
        throw new SandboxConfigurationError(`Cannot export files: /workspace/${path} is not a directory of the sandbox; name one (default work)`);
      }
      if (probe.exit.kind === "exited" && probe.exit.code === 4) {
        const first = probe.stdoutText.split("\n")[0];
        throw new SandboxUnsupportedError(
          `Cannot export files: ${JSON.stringify(first)} is neither a regular file nor a directory (a symlink, a FIFO, a socket or a device), which an export refuses; ` +
            "remove it with sandbox_run, or export a subtree without it (nothing was stopped)",
        );
      }
    }
    await sandbox.stop();
    const bound = (error: unknown): never => {
      // The library's quota is the server's maxExportBytes here.
      if (error instanceof SandboxQuotaError) {
        throw new SandboxQuotaError(
          `${error.message}: the ${settings.maxExportBytes} bytes this server exports in one call (maxExportBytes in its configuration); export a smaller subtree`,
          { cause: error },
        );
      }
      throw error;
    };
    const entries = await sandbox.exportTree({ kind: "subtree", path }, {
      signal: call.signal,
      deadlineAt: call.deadlineAt,
      quota: { bytes: settings.maxExportBytes },
    }).catch(bound);
    const written = await exportToDirectory(entries, host, { base: path }).catch(bound);
    return `exported /workspace/${path} to ${host}: ${written.files} entries, ${written.bytes} bytes; the sandbox's compute is stopped (destroy it with sandbox_destroy)`;
  }));
}
