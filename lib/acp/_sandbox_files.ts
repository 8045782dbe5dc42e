/**
 * `fileSystem: "sandbox"`: the agent's `fs/read_text_file` and `fs/write_text_file` served
 * inside the sandbox, through its guest file reader and writer (`readFile`, `writeFile`: they
 * run as the sandbox user in the guest's own view), never with host authority. Paths are the
 * agent's absolute guest paths, confined to the workspace.
 *
 * @module
 */
import * as acp from "@agentclientprotocol/sdk";
import { SandboxConfigurationError, SandboxError } from "../sandbox/errors.ts";
import type { Sandbox } from "../sandbox/backend.ts";
import type { SandboxGuestFiles } from "../sandbox/guest_files.ts";
import { pathDefect } from "../internal/path_defects.ts";
import { WORKSPACE_PATH } from "../docker/guest_paths.ts";
import type { AcpFileSystemHandlers } from "./options.ts";

/** A sandbox that can read and write single guest files while compute runs. */
export type GuestFileSandbox = Sandbox & SandboxGuestFiles;

/**
 * The workspace-relative path of an agent's absolute guest `path`.
 *
 * @throws {RequestError} `-32602` (invalid params) naming the path when it is not a canonical
 *   absolute path strictly inside the workspace
 */
export function workspacePath(path: unknown, action: string): string {
  const defect = typeof path !== "string" ? "must be a string" : pathDefect(path, true);
  if (defect === undefined && (path as string).startsWith(`${WORKSPACE_PATH}/`)) return (path as string).slice(WORKSPACE_PATH.length + 1);
  throw acp.RequestError.invalidParams(
    { path },
    `Cannot ${action}: path ${JSON.stringify(path)} ${defect ?? `must be inside ${WORKSPACE_PATH} (the sandbox's workspace)`}; ` +
      `give an absolute guest path below ${WORKSPACE_PATH}/, such as ${WORKSPACE_PATH}/work/notes.txt`,
  );
}

/**
 * The JSON-RPC error a failed guest file operation answers: a missing file is `-32002`
 * (resource not found), a refused path `-32602`, anything else `-32603` with the message.
 */
export function guestFileError(error: unknown, path: string): acp.RequestError {
  if (error instanceof acp.RequestError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SandboxConfigurationError && message.includes("does not exist")) return acp.RequestError.resourceNotFound(path);
  if (error instanceof SandboxConfigurationError) return acp.RequestError.invalidParams({ path }, message);
  return acp.RequestError.internalError(error instanceof SandboxError ? { code: error.code } : undefined, message);
}

/**
 * Lines `line` (1-based) … `line + limit − 1` of `text`, each with its line ending; the whole
 * text when neither is given (ACP v1 "File System" § Reading Files).
 */
export function textLines(text: string, line: number | null | undefined, limit: number | null | undefined): string {
  if ((line === undefined || line === null) && (limit === undefined || limit === null)) return text;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const first = Math.max(1, line ?? 1) - 1;
  return lines.slice(first, limit === undefined || limit === null ? undefined : first + Math.max(0, limit)).join("");
}

/**
 * Handlers that answer `fs/*` inside `sandbox`: reads of at most `maxBytes` bytes (UTF-8,
 * malformed bytes become U+FFFD), writes that replace the file atomically as the sandbox user
 * (mode `0o644`; only where the sandbox user may write, `/workspace/work` and below).
 *
 * @param sandbox The running sandbox.
 * @param maxBytes Largest file read, bytes.
 */
export function sandboxFileSystem(sandbox: GuestFileSandbox, maxBytes: number): AcpFileSystemHandlers {
  return {
    readTextFile: async ({ path, line, limit }, signal) => {
      const relative = workspacePath(path, "read text file");
      try {
        const bytes = await sandbox.readFile(relative, { maxBytes, signal });
        return { content: textLines(new TextDecoder().decode(bytes), line, limit) };
      } catch (error) {
        throw guestFileError(error, path);
      }
    },
    writeTextFile: async ({ path, content }, signal) => {
      const relative = workspacePath(path, "write text file");
      try {
        await sandbox.writeFile(relative, content, { signal });
      } catch (error) {
        throw guestFileError(error, path);
      }
    },
  };
}

/**
 * Whether `sandbox` can serve `fileSystem: "sandbox"`.
 *
 * @throws {SandboxConfigurationError} when it has no `readFile` and `writeFile`
 */
export function assertGuestFiles(sandbox: Sandbox): asserts sandbox is GuestFileSandbox {
  const files = sandbox as Partial<SandboxGuestFiles>;
  if (typeof files.readFile !== "function" || typeof files.writeFile !== "function") {
    throw new SandboxConfigurationError(
      'Cannot start ACP session: options.fileSystem "sandbox" needs a sandbox with readFile and writeFile (the Docker backend\'s has them); ' +
        "give handlers of your own instead",
    );
  }
}
