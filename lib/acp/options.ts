/**
 * Options of {@linkcode startAcpSession}: what the bridge grants the agent (nothing of the
 * host unless given), its bounds and its deadlines, validated by
 * {@linkcode normalizeAcpSessionOptions}.
 *
 * @module
 */
import type {
  AuthMethodId,
  CreateTerminalRequest,
  CreateTerminalResponse,
  Implementation,
  InitializeResponse,
  KillTerminalRequest,
  KillTerminalResponse,
  McpServer,
  ReadTextFileRequest,
  ReadTextFileResponse,
  ReleaseTerminalRequest,
  ReleaseTerminalResponse,
  TerminalOutputRequest,
  TerminalOutputResponse,
  WaitForTerminalExitRequest,
  WaitForTerminalExitResponse,
  WriteTextFileRequest,
  WriteTextFileResponse,
} from "./protocol.ts";
import { z } from "zod";
import { MAX_TIMER_MS } from "../internal/long_timer.ts";
import { pathDefect } from "../internal/path_defects.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";
import type { AcpPermissionRequest } from "./permission.ts";

const MIB = 1024 * 1024;

/** Default `cwd` of the ACP session: the Docker sandbox's working directory. */
export const DEFAULT_ACP_CWD = "/workspace/work";
/** Default `openTimeoutMs`: 60 s for `initialize` and `session/new` together. */
export const DEFAULT_ACP_OPEN_TIMEOUT_MS = 60_000;
/** Default `exitTimeoutMs`: 5 s for the agent to exit after its stdin closed. */
export const DEFAULT_ACP_EXIT_TIMEOUT_MS = 5_000;
/** Default `maxMessageBytes`: 8 MiB per ACP message (one line of the agent's stdout). */
export const DEFAULT_ACP_MAX_MESSAGE_BYTES = 8 * MIB;
/** Default `maxBufferedUpdateBytes`: 8 MiB of a turn's unread updates. */
export const DEFAULT_ACP_MAX_BUFFERED_UPDATE_BYTES = 8 * MIB;
/** Default `stderrTailBytes`: the last 64 KiB of the agent's stderr are kept. */
export const DEFAULT_ACP_STDERR_TAIL_BYTES = 64 * 1024;
/** `terminal: "sandbox"`: most output bytes a terminal keeps (its tail), and the default of `outputByteLimit`: 1 MiB. */
export const ACP_TERMINAL_OUTPUT_MAX_BYTES = 1024 * 1024;
/** `terminal: "sandbox"`: most terminals held at once (running or exited, until `terminal/release`): 16. */
export const ACP_MAX_TERMINALS = 16;
/** Largest byte bound accepted by the options: 1 GiB. */
export const MAX_ACP_BOUND_BYTES = 1024 * MIB;
/** Largest deadline accepted, in milliseconds: 2^31 − 1 (one timer's range). */
export const MAX_ACP_TIMEOUT_MS: number = MAX_TIMER_MS;

/**
 * The `clientInfo` the bridge sends in `initialize` unless told otherwise.
 *
 * @example
 * ```ts
 * import { DEFAULT_ACP_CLIENT_INFO } from "./options.ts";
 *
 * console.log(DEFAULT_ACP_CLIENT_INFO.name); // "@agentcell/docker"
 * ```
 */
export const DEFAULT_ACP_CLIENT_INFO: Readonly<Implementation> = Object.freeze({ name: "@agentcell/docker", version: "0.2.0" });

/** A handler result, sync or async. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Host file access offered to the agent (ACP "File System": `fs/read_text_file`,
 * `fs/write_text_file`). Each handler given is advertised in `clientCapabilities.fs` and runs
 * **with the caller's own host authority**: the agent chooses the paths, which name files of
 * the caller's choosing, not the sandbox's workspace. The bridge passes the requests through
 * unchanged; confine them yourself. `signal` aborts when the agent withdraws the request or the
 * session closes.
 *
 * @example
 * ```ts ignore
 * // ignore: a fragment: the handlers are the caller's own host code
 * const fileSystem: AcpFileSystemHandlers = {
 *   readTextFile: async ({ path }) => ({ content: await readFile(confine(path), "utf8") }),
 * };
 * ```
 */
export interface AcpFileSystemHandlers {
  /**
   * Answers `fs/read_text_file`.
   *
   * @default {undefined} not offered (the agent gets "method not found")
   */
  readonly readTextFile?: (request: ReadTextFileRequest, signal: AbortSignal) => MaybePromise<ReadTextFileResponse>;
  /**
   * Answers `fs/write_text_file`.
   *
   * @default {undefined} not offered
   */
  readonly writeTextFile?: (request: WriteTextFileRequest, signal: AbortSignal) => MaybePromise<WriteTextFileResponse | void>;
}

/**
 * Host terminals offered to the agent (ACP "Terminals": `terminal/create`, `terminal/output`,
 * `terminal/wait_for_exit`, `terminal/kill`, `terminal/release`; all five, as the capability
 * `clientCapabilities.terminal` means all of them). The handlers run commands **with the
 * caller's own host authority**, outside the sandbox, unless the caller routes them
 * elsewhere.
 *
 * @example
 * ```ts ignore
 * // ignore: a fragment: the handlers are the caller's own host code
 * const terminal: AcpTerminalHandlers = { create, output, waitForExit, kill, release };
 * ```
 */
export interface AcpTerminalHandlers {
  /** Answers `terminal/create`. */
  readonly create: (request: CreateTerminalRequest, signal: AbortSignal) => MaybePromise<CreateTerminalResponse>;
  /** Answers `terminal/output`. */
  readonly output: (request: TerminalOutputRequest, signal: AbortSignal) => MaybePromise<TerminalOutputResponse>;
  /** Answers `terminal/wait_for_exit`. */
  readonly waitForExit: (request: WaitForTerminalExitRequest, signal: AbortSignal) => MaybePromise<WaitForTerminalExitResponse>;
  /** Answers `terminal/kill`. */
  readonly kill: (request: KillTerminalRequest, signal: AbortSignal) => MaybePromise<KillTerminalResponse | void>;
  /** Answers `terminal/release`. */
  readonly release: (request: ReleaseTerminalRequest, signal: AbortSignal) => MaybePromise<ReleaseTerminalResponse | void>;
}

/**
 * Options of {@linkcode startAcpSession}. Everything is optional; the defaults grant the agent
 * nothing of the host: no file system, no terminal, no MCP servers, and every permission
 * request denied.
 *
 * @example
 * ```ts
 * import type { AcpSessionOptions } from "./options.ts";
 *
 * const options: AcpSessionOptions = {
 *   openTimeoutMs: 30_000,
 *   onPermissionRequest: (request) => request.deny(),
 * };
 * ```
 */
export interface AcpSessionOptions {
  /**
   * `clientInfo` sent in `initialize` (`name`, `version`, optional `title`).
   *
   * @default {{ name: "@agentcell/docker", version: "0.2.0" }}
   */
  readonly clientInfo?: Implementation;
  /**
   * The session's working directory in the guest, sent in `session/new`: an absolute
   * canonical path.
   *
   * @default {"/workspace/work"}
   */
  readonly cwd?: string;
  /**
   * MCP servers for `session/new`. **Grants the caller's own authority**: the agent connects
   * to them (stdio servers run inside the sandbox; HTTP/SSE servers need a network the policy
   * allows) with whatever headers and environment they carry.
   *
   * @default {[]}
   */
  readonly mcpServers?: readonly McpServer[];
  /**
   * File access for the agent: `"sandbox"` answers `fs/read_text_file` and
   * `fs/write_text_file` **inside the sandbox** with its guest file reader and writer (as the
   * sandbox user, in the guest's own view): paths must be absolute guest paths inside
   * `/workspace` (others are answered `-32602`), a missing file `-32002`; reads are bounded
   * by `maxMessageBytes` and honour `line` and `limit`; writes replace the file atomically
   * (mode `0o644`) where the sandbox user may write (`/workspace/work`). The sandbox must have
   * `readFile` and `writeFile` (the Docker backend's has). Handlers of your own (see
   * {@linkcode AcpFileSystemHandlers}) instead **grant the caller's own host authority.**
   *
   * @default {undefined} not offered: `clientCapabilities.fs` is all `false`
   */
  readonly fileSystem?: AcpFileSystemHandlers | "sandbox";
  /**
   * Terminals for the agent: `"sandbox"` runs each `terminal/create` as a **sandbox
   * process**: `/bin/sh -c <command>` when it has no `args`, else `<command>` with the literal
   * `args` (looked up in `PATH`), in its `cwd` (default the session's `cwd`; confined as a
   * process `cwd`), with its `env`, stderr into stdout and stdin at end of file; its output
   * is read all the time and its last `outputByteLimit` bytes are kept (at most and by
   * default 1 MiB, `ACP_TERMINAL_OUTPUT_MAX_BYTES`; `truncated` says when earlier bytes were
   * dropped); at most 16 terminals are held until `terminal/release`
   * (`ACP_MAX_TERMINALS`), and each counts against `policy.maxConcurrentProcesses` while it
   * runs (policy `processes: "one"` leaves no room: every create fails). `terminal/kill` and
   * `terminal/release` of a running one end its process group. Handlers of your own (see
   * {@linkcode AcpTerminalHandlers}) instead **grant the caller's own host authority.**
   *
   * @default {undefined} not offered: `clientCapabilities.terminal` is `false`
   */
  readonly terminal?: AcpTerminalHandlers | "sandbox";
  /**
   * Picks the authentication method before the session opens (ACP v1 "Initialization" §
   * Authentication): called with the agent's `initialize` answer once it arrived; return one
   * of its `authMethods[].id` and the bridge sends `authenticate { methodId }` before
   * `session/new`, or `undefined` to send none. The method's credential is whatever the agent
   * reads for it (an environment variable of the agent's request, a file imported into the
   * sandbox): `authenticate` only names the method. An id the agent did not offer (or one of
   * type `"terminal"`, which ACP forbids passing to `authenticate`) rejects opening with
   * `SandboxConfigurationError`; a callback that throws rejects it with `SandboxAbortedError`
   * (its `cause` the thrown error); an agent that refuses `authenticate` rejects it with
   * `AcpAgentError` (`rpcCode`). Every such error carries the `initialize` answer
   * (`acpInitializeOf(error)`).
   *
   * @default {undefined} no `authenticate`: `session/new` follows `initialize`
   */
  readonly authenticate?: (agent: InitializeResponse) => MaybePromise<AuthMethodId | undefined>;
  /**
   * Called for each `session/request_permission`; answer with `request.select(optionId)` or
   * `request.deny()`, now or later. A callback that throws (or rejects) before answering
   * denies the request, cancels the turn, and makes the turn's `stopReason` reject with a
   * `SandboxAbortedError` whose `cause` is the thrown error.
   *
   * @default {undefined} every request is denied (`reject_once`, else `reject_always`, else `cancelled`)
   */
  readonly onPermissionRequest?: (request: AcpPermissionRequest) => MaybePromise<void>;
  /**
   * Deadline for opening, in milliseconds from the process start: `initialize`,
   * `authenticate` (when chosen) and `session/new` must all be answered within it. Integer from 1 to 2^31 − 1.
   *
   * @default {60000}
   */
  readonly openTimeoutMs?: number;
  /**
   * How long `close()` waits for the agent's answer to `session/close` (sent when it
   * advertises `sessionCapabilities.close`) and for its exit after its stdin was closed, in
   * milliseconds, before it ends the agent's process group (receipt `killed`, `requested`)
   * and stops compute. Once the agent answered `session/close` the exit wait is at most
   * 500 ms (`ACP_CLOSED_SESSION_EXIT_GRACE_MS`). Integer from 1 to 2^31 − 1.
   *
   * @default {5000}
   */
  readonly exitTimeoutMs?: number;
  /**
   * Longest ACP message the agent may send, in bytes (one line of JSON on its stdout): an
   * integer from 1 to 1 GiB. A longer one ends the session with an `AcpAgentError`.
   *
   * @default {8388608} 8 MiB
   */
  readonly maxMessageBytes?: number;
  /**
   * Most bytes (UTF-8 JSON) of one turn's updates that may wait unread in `turn.updates`: an
   * integer from 1 to 1 GiB. Past it the turn fails with a `SandboxOutputLimitError` and is
   * cancelled.
   *
   * @default {8388608} 8 MiB
   */
  readonly maxBufferedUpdateBytes?: number;
  /**
   * How many of the last bytes of the agent's stderr are kept (`session.stderrTail`): an
   * integer from 1 to 1 GiB. stderr is always read, so it never fills the sandbox's output
   * bound; older bytes are dropped and counted (`session.stderrBytes`).
   *
   * @default {65536} 64 KiB
   */
  readonly stderrTailBytes?: number;
  /**
   * Cancels opening: an abort before the session is open stops compute and rejects with a
   * `SandboxAbortedError`. An abort after `startAcpSession` resolved has no effect.
   *
   * @default {undefined}
   */
  readonly signal?: AbortSignal;
}

/** {@linkcode AcpSessionOptions} with every default filled. */
export interface NormalizedAcpSessionOptions {
  /** See {@linkcode AcpSessionOptions.clientInfo}. */
  readonly clientInfo: Implementation;
  /** See {@linkcode AcpSessionOptions.cwd}. */
  readonly cwd: string;
  /** See {@linkcode AcpSessionOptions.mcpServers}. */
  readonly mcpServers: readonly McpServer[];
  /** See {@linkcode AcpSessionOptions.fileSystem}. */
  readonly fileSystem: AcpFileSystemHandlers | "sandbox" | undefined;
  /** See {@linkcode AcpSessionOptions.terminal}. */
  readonly terminal: AcpTerminalHandlers | "sandbox" | undefined;
  /** See {@linkcode AcpSessionOptions.authenticate}. */
  readonly authenticate: ((agent: InitializeResponse) => MaybePromise<AuthMethodId | undefined>) | undefined;
  /** See {@linkcode AcpSessionOptions.onPermissionRequest}. */
  readonly onPermissionRequest: ((request: AcpPermissionRequest) => MaybePromise<void>) | undefined;
  /** See {@linkcode AcpSessionOptions.openTimeoutMs}. */
  readonly openTimeoutMs: number;
  /** See {@linkcode AcpSessionOptions.exitTimeoutMs}. */
  readonly exitTimeoutMs: number;
  /** See {@linkcode AcpSessionOptions.maxMessageBytes}. */
  readonly maxMessageBytes: number;
  /** See {@linkcode AcpSessionOptions.maxBufferedUpdateBytes}. */
  readonly maxBufferedUpdateBytes: number;
  /** See {@linkcode AcpSessionOptions.stderrTailBytes}. */
  readonly stderrTailBytes: number;
  /** See {@linkcode AcpSessionOptions.signal}. */
  readonly signal: AbortSignal | undefined;
}

const handler = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", {
  error: expect("must be a function"),
});
const bytes = (what: string) => {
  const sentence = expect(`must be an integer from 1 to ${MAX_ACP_BOUND_BYTES} ${what}`);
  return z.number({ error: sentence }).int({ error: sentence }).min(1, { error: sentence }).max(MAX_ACP_BOUND_BYTES, { error: sentence });
};
const timeout = () => {
  const sentence = expect(`must be an integer from 1 to ${MAX_ACP_TIMEOUT_MS} milliseconds`);
  return z.number({ error: sentence }).int({ error: sentence }).min(1, { error: sentence }).max(MAX_ACP_TIMEOUT_MS, { error: sentence });
};
const text = z.string({ error: expect("must be a string") });
const meta = z.record(z.string(), z.unknown()).nullable().optional();
const nameValue = z.looseObject({ name: text, value: text, _meta: meta });
const mcpServer = z.union([
  z.looseObject({ type: z.literal("http"), name: text, url: text, headers: z.array(nameValue), _meta: meta }),
  z.looseObject({ type: z.literal("sse"), name: text, url: text, headers: z.array(nameValue), _meta: meta }),
  z.looseObject({ name: text, command: text, args: z.array(text), env: z.array(nameValue), _meta: meta }),
], {
  error: expect("must be an ACP McpServer: { name, command, args, env } (stdio) or { type: \"http\" | \"sse\", name, url, headers }"),
});

const cwd = text.superRefine((path, context) => {
  const defect = pathDefect(path, true);
  if (defect !== undefined) context.addIssue({ code: "custom", message: defect, input: path });
});

/**
 * `"sandbox"`, or an object `handlers` accepts; its issues keep their field paths
 * (`options.terminal.output is required`).
 */
function sandboxOr<T extends z.ZodType>(handlers: T): z.ZodType<"sandbox" | z.infer<T>> {
  return z.unknown().superRefine((value, context) => {
    if (value === "sandbox") return;
    if (typeof value === "string") {
      context.addIssue({ code: "custom", message: 'must be "sandbox" or an object of handlers', input: value });
      return;
    }
    for (const { message, ...issue } of handlers.safeParse(value).error?.issues ?? []) {
      // An unknown field is worded by the parse's own error map ("is not a known field").
      context.addIssue({ ...issue, ...(issue.code === "unrecognized_keys" ? {} : { message }), input: value } as never);
    }
  }) as unknown as z.ZodType<"sandbox" | z.infer<T>>;
}

const optionsSchema = z.strictObject({
  clientInfo: z.looseObject({ name: text, version: text, title: text.nullable().optional(), _meta: meta }).optional(),
  cwd: cwd.optional(),
  mcpServers: z.array(mcpServer, { error: expect("must be an array of MCP servers") }).optional(),
  fileSystem: sandboxOr(z.strictObject({ readTextFile: handler.optional(), writeTextFile: handler.optional() })).optional(),
  terminal: sandboxOr(z.strictObject({ create: handler, output: handler, waitForExit: handler, kill: handler, release: handler })).optional(),
  authenticate: handler.optional(),
  onPermissionRequest: handler.optional(),
  openTimeoutMs: timeout().optional(),
  exitTimeoutMs: timeout().optional(),
  maxMessageBytes: bytes("bytes").optional(),
  maxBufferedUpdateBytes: bytes("bytes").optional(),
  stderrTailBytes: bytes("bytes").optional(),
  signal: z.instanceof(AbortSignal, { error: expect("must be an AbortSignal") }).optional(),
});

/**
 * Validate {@linkcode AcpSessionOptions} and fill the defaults. Handler objects are kept as
 * given (the bridge calls them as methods of their object); `mcpServers` are checked for the
 * ACP shape and sent as given.
 *
 * @param options The caller's options (untrusted: checked at run time).
 * @returns The options with defaults.
 * @throws {SandboxConfigurationError} `configuration`: a field is unknown, of the wrong type or
 *   out of range; the message names it, e.g. "Cannot start ACP session:
 *   options.exitTimeoutMs must be an integer from 1 to 2147483647 milliseconds"
 *
 * @example
 * ```ts
 * import { normalizeAcpSessionOptions } from "./options.ts";
 *
 * const options = normalizeAcpSessionOptions({});
 * console.log(options.cwd, options.mcpServers); // "/workspace/work" []
 * ```
 */
export function normalizeAcpSessionOptions(options: AcpSessionOptions): NormalizedAcpSessionOptions {
  parseConfiguration(optionsSchema, options, "start ACP session", "options");
  return Object.freeze({
    clientInfo: options.clientInfo ?? DEFAULT_ACP_CLIENT_INFO,
    cwd: options.cwd ?? DEFAULT_ACP_CWD,
    mcpServers: Object.freeze([...(options.mcpServers ?? [])]),
    fileSystem: options.fileSystem,
    terminal: options.terminal,
    authenticate: options.authenticate,
    onPermissionRequest: options.onPermissionRequest,
    openTimeoutMs: options.openTimeoutMs ?? DEFAULT_ACP_OPEN_TIMEOUT_MS,
    exitTimeoutMs: options.exitTimeoutMs ?? DEFAULT_ACP_EXIT_TIMEOUT_MS,
    maxMessageBytes: options.maxMessageBytes ?? DEFAULT_ACP_MAX_MESSAGE_BYTES,
    maxBufferedUpdateBytes: options.maxBufferedUpdateBytes ?? DEFAULT_ACP_MAX_BUFFERED_UPDATE_BYTES,
    stderrTailBytes: options.stderrTailBytes ?? DEFAULT_ACP_STDERR_TAIL_BYTES,
    signal: options.signal,
  });
}
