/**
 * The operator's configuration of the MCP server: the authority the model chooses within
 * (endpoint, profile, image, namespace, directories, the policy ceiling, the network, how
 * many sandboxes at once, the export root) and the bounds of every answer. Validated with
 * zod; the file is JSON.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { canonicalPathDefect } from "../docker/config.ts";
import type { DockerSandboxProfile } from "../docker/profiles.ts";
import { expect, parseConfiguration } from "../internal/zod_issues.ts";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import type { SandboxNetwork, SandboxResources } from "../sandbox/policy.ts";
import { reasonOf } from "../internal/reason.ts";

/** Namespace of the MCP server's sandboxes when the configuration names none. */
export const DEFAULT_MCP_NAMESPACE = "agentcell-mcp";
/** Sandboxes at once when the configuration says nothing (`maxSandboxes`). */
export const DEFAULT_MCP_MAX_SANDBOXES = 4;
/** Most sandboxes at once a configuration may allow. */
export const MAX_MCP_SANDBOXES = 64;
/** Deadline of one tool call when the configuration says nothing (`toolTimeoutMs`): 60 s. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;
/** Longest deadline of one tool call a configuration may set: 1 hour. */
export const MAX_MCP_TOOL_TIMEOUT_MS = 3_600_000;
/** Bytes of stdout, and of stderr, an answer shows when the configuration says nothing: 64 KiB. */
export const DEFAULT_MCP_OUTPUT_BYTES = 64 * 1024;
/** Largest `maxOutputBytes` a configuration may set: 1 MiB per stream. */
export const MAX_MCP_OUTPUT_BYTES = 1024 * 1024;
/** Bytes one file read or write moves when the configuration says nothing: 1 MiB. */
export const DEFAULT_MCP_FILE_BYTES = 1024 * 1024;
/** Largest `maxFileBytes` a configuration may set: 16 MiB. */
export const MAX_MCP_FILE_BYTES = 16 * 1024 * 1024;
/** Bytes one `sandbox_export` writes to the host when the configuration says nothing: 1 GiB. */
export const DEFAULT_MCP_EXPORT_BYTES = 1024 * 1024 * 1024;
/** Entries one directory listing shows: 1,000. */
export const MAX_MCP_LIST_ENTRIES = 1000;
/** Characters of one line the server logs to stderr, the rest cut: 2,048. */
export const MAX_MCP_LOG_LINE = 2048;

/** The operator's configuration of the MCP server (the JSON of its config file). */
export interface McpServerConfig {
  /** Docker Engine endpoint, `unix:///absolute/path.sock`. */
  readonly endpoint: string;
  /** Execution profile (see the README's Profiles). @default "linux-x64" */
  readonly profile?: DockerSandboxProfile;
  /** Exact local image ID of every sandbox (`sha256:` and 64 lowercase hex digits). */
  readonly imageDigest: string;
  /** Namespace of the sandboxes' names and labels. @default "agentcell-mcp" */
  readonly namespace?: string;
  /** Guest identity of the agent's processes. @default {{ uid: 65534, gid: 65534 }} */
  readonly user?: { readonly uid: number; readonly gid: number };
  /**
   * Spill directory of large exports (absolute, canonical, owned by the server's user).
   *
   * @default {undefined} a private one per sandbox, made and removed by `openSandbox`
   */
  readonly spillDirectory?: string;
  /**
   * Where every sandbox is recorded before its resources exist (a file recovery store:
   * absolute, canonical, private to the server's user, created 0700 when missing). At start,
   * the server reclaims what the records of a previous, crashed server name.
   */
  readonly recordsDirectory: string;
  /**
   * Host directory under which `sandbox_export` may create directories (absolute, canonical,
   * an existing directory). Without it, the tool refuses every call.
   *
   * @default {undefined} no export to the host
   */
  readonly exportRoot?: string;
  /**
   * The most one sandbox may get; a `sandbox_create` that asks for more is refused. A
   * sandbox that asks for nothing gets the ceiling.
   *
   * @default {{ cpus: 1, memoryBytes: 268435456, pids: 128 }}
   */
  readonly ceiling?: SandboxResources;
  /**
   * The network of every sandbox (the model does not choose it): `"isolated"`, `"outbound"`
   * or an allowlist (which needs `proxyImageDigest`).
   *
   * @default {"isolated"}
   */
  readonly network?: SandboxNetwork;
  /** Egress proxy image of an allowlist network (see `DockerSandboxBackendConfig`). */
  readonly proxyImageDigest?: string;
  /** Sandboxes at once, 1 … 64. @default 4 */
  readonly maxSandboxes?: number;
  /** Deadline of every tool call in milliseconds, 1 … 3,600,000. @default 60000 */
  readonly toolTimeoutMs?: number;
  /** Bytes of stdout, and of stderr, one `sandbox_run` answer shows, 1 … 1 MiB. @default 65536 */
  readonly maxOutputBytes?: number;
  /** Bytes one `sandbox_read_file` or `sandbox_write_file` moves, 1 … 16 MiB. @default 1048576 */
  readonly maxFileBytes?: number;
  /** Content bytes one `sandbox_export` writes to the host, 0 … 2^53 − 1. @default 1073741824 */
  readonly maxExportBytes?: number;
}

/** The validated configuration, defaults filled in, frozen. */
export interface McpServerSettings extends Required<Omit<McpServerConfig, "profile" | "spillDirectory" | "exportRoot" | "proxyImageDigest">> {
  /** The profile, when configured (else the backend's default). */
  readonly profile: DockerSandboxProfile | undefined;
  /** The spill directory, when configured. */
  readonly spillDirectory: string | undefined;
  /** The export root, when configured. */
  readonly exportRoot: string | undefined;
  /** The proxy image, when configured. */
  readonly proxyImageDigest: string | undefined;
}

const hostDirectory = (what: string, example: string) =>
  z.string({ error: expect(`must be a string: the absolute path of the ${what}, e.g. ${example}`) }).refine((path) => canonicalPathDefect(path) === undefined, {
    error: (issue) => `${canonicalPathDefect(issue.input as string)} (the ${what}): write its absolute, canonical path, e.g. ${example}`,
  });

const integer = (min: number, max: number, unit: string) =>
  z.number({ error: `must be an integer from ${min} to ${max}${unit}` }).int({ error: `must be an integer from ${min} to ${max}${unit}` })
    .min(min, { error: `must be an integer from ${min} to ${max}${unit}` }).max(max, { error: `must be an integer from ${min} to ${max}${unit}` });

const configSchema = z.strictObject({
  endpoint: z.string({ error: expect("must be a string: unix:///absolute/path.sock") }),
  profile: z.string().optional(),
  imageDigest: z.string({ error: expect("must be a string: the exact sha256: ID of a local image") }),
  namespace: z.string().optional(),
  user: z.strictObject({ uid: z.number(), gid: z.number() }, { error: expect('must be an object { "uid": N, "gid": N } of an unprivileged user, e.g. { "uid": 65534, "gid": 65534 }') })
    .optional(),
  spillDirectory: hostDirectory("spill directory", "/var/lib/agentcell-mcp/spill").optional(),
  recordsDirectory: hostDirectory("records directory", "/var/lib/agentcell-mcp/records"),
  exportRoot: hostDirectory("export root", "/srv/agentcell-exports").optional(),
  ceiling: z.strictObject({ cpus: z.number(), memoryBytes: z.number(), pids: z.number() }).optional(),
  network: z.unknown().optional(),
  proxyImageDigest: z.string().optional(),
  maxSandboxes: integer(1, MAX_MCP_SANDBOXES, "").optional(),
  toolTimeoutMs: integer(1, MAX_MCP_TOOL_TIMEOUT_MS, " ms").optional(),
  maxOutputBytes: integer(1, MAX_MCP_OUTPUT_BYTES, " bytes").optional(),
  maxFileBytes: integer(1, MAX_MCP_FILE_BYTES, " bytes").optional(),
  maxExportBytes: integer(0, Number.MAX_SAFE_INTEGER, " bytes").optional(),
});

/**
 * Validate an MCP server configuration and fill in its defaults. Inert: no I/O. The
 * backend's fields (endpoint, profile, image, namespace, user, ceiling, network) are checked
 * again by the backend when the server starts, with its own messages.
 *
 * @param input the parsed JSON of the config file
 * @returns the settings, frozen
 * @throws {SandboxConfigurationError} naming the first invalid field (`mcp.<field>`)
 */
export function parseMcpServerConfig(input: unknown): McpServerSettings {
  const config = parseConfiguration(configSchema, input, "configure the MCP server", "mcp") as McpServerConfig;
  return Object.freeze({
    endpoint: config.endpoint,
    profile: config.profile,
    imageDigest: config.imageDigest,
    namespace: config.namespace ?? DEFAULT_MCP_NAMESPACE,
    user: config.user ?? { uid: 65534, gid: 65534 },
    spillDirectory: config.spillDirectory,
    recordsDirectory: config.recordsDirectory,
    exportRoot: config.exportRoot,
    ceiling: config.ceiling ?? { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 },
    network: config.network ?? "isolated",
    proxyImageDigest: config.proxyImageDigest,
    maxSandboxes: config.maxSandboxes ?? DEFAULT_MCP_MAX_SANDBOXES,
    toolTimeoutMs: config.toolTimeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS,
    maxOutputBytes: config.maxOutputBytes ?? DEFAULT_MCP_OUTPUT_BYTES,
    maxFileBytes: config.maxFileBytes ?? DEFAULT_MCP_FILE_BYTES,
    maxExportBytes: config.maxExportBytes ?? DEFAULT_MCP_EXPORT_BYTES,
  });
}

/**
 * Read and validate the JSON config file at `file`.
 *
 * @param file path of the config file
 * @returns the settings
 * @throws {SandboxConfigurationError} when the file cannot be read or is not JSON (the
 *   message names the file), or names an invalid field
 */
export async function loadMcpServerConfig(file: string): Promise<McpServerSettings> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new SandboxConfigurationError(`Cannot read the MCP server configuration ${file}: ${reasonOf(error)}`, { cause: error });
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new SandboxConfigurationError(`Cannot read the MCP server configuration ${file}: it is not JSON (${reasonOf(error)})`, { cause: error });
  }
  return parseMcpServerConfig(input);
}
