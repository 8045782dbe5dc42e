/**
 * What the `agentcell` command's subcommands share: the options that name the authority
 * (endpoint, profile, image, namespace, records directory), their defaults from the
 * environment (the command reads it; the library never does), the profile that admits the
 * daemon, and parsing with `node:util` `parseArgs` (a standard parser every runtime ships,
 * so no hand-written one and no dependency).
 *
 * @module
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { DOCKER_SANDBOX_PROFILES } from "../docker/profiles.ts";
import type { DockerSandboxProfile } from "../docker/profiles.ts";
import { unmetDaemonRequirements } from "../docker/admission/daemon.ts";
import { DockerEngine } from "../engine/client.ts";
import { DockerEngineError } from "../engine/errors.ts";
import type { EngineInfo, EngineVersion } from "../engine/system.ts";
import { connectFaultOf } from "../docker/_engine_errors.ts";
import { SandboxConfigurationError, SandboxEngineError } from "../sandbox/errors.ts";

/** A usage mistake: the command prints it with the subcommand's help and exits 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Options every sandbox command takes. */
export const COMMON_OPTIONS = {
  endpoint: { type: "string" },
  profile: { type: "string" },
  namespace: { type: "string" },
} as const satisfies ParseArgsConfig["options"];

/** Help lines of {@linkcode COMMON_OPTIONS}. */
export const COMMON_HELP = [
  "  --endpoint URL     Docker Engine socket, unix:///… (default $AGENTCELL_ENGINE, else unix:///var/run/docker.sock)",
  "  --profile NAME     execution profile (default $AGENTCELL_PROFILE, else the first profile that admits the daemon; see doctor)",
  "  --namespace NAME   namespace of the sandbox's names and labels (default agentcell)",
  "  -h, --help         this help",
].join("\n");

/**
 * Parse `args` with `options`, strictly (unknown options are usage errors).
 *
 * @throws {UsageError} for an unknown option or a missing value
 */
export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(
  args: readonly string[],
  options: O,
): { values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>["values"]; positionals: string[] } {
  try {
    const parsed = parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
    return { values: parsed.values, positionals: parsed.positionals };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** The endpoint: the option, `$AGENTCELL_ENGINE`, or the Docker default socket. */
export function endpointOf(values: { endpoint?: string }): string {
  return values.endpoint ?? process.env.AGENTCELL_ENGINE ?? "unix:///var/run/docker.sock";
}

/** Where {@linkcode endpointOf} took the endpoint from, for messages. */
function endpointSource(values: { endpoint?: string }): string {
  if (values.endpoint !== undefined) return "given by --endpoint";
  if (process.env.AGENTCELL_ENGINE !== undefined) return "from AGENTCELL_ENGINE";
  return "the default: no --endpoint given and AGENTCELL_ENGINE unset";
}

/**
 * Run `work`, the part of a command that talks to the Engine, with the endpoint of `values`;
 * a socket it cannot connect to (absent, refused, not a socket, not permitted) fails as
 * "Cannot reach the Docker Engine at <url> (<where the URL came from>): <code>: <meaning>;
 * <fix>", naming `--endpoint` and `AGENTCELL_ENGINE`. Every other failure passes through.
 *
 * @throws {SandboxEngineError} for a socket that cannot be connected to
 */
export async function withEndpoint<T>(values: { endpoint?: string }, work: (endpoint: string) => Promise<T>): Promise<T> {
  const endpoint = endpointOf(values);
  try {
    return await work(endpoint);
  } catch (error) {
    // An endpoint that is no unix:// URL: the Engine client's own words, with where it came from.
    if (error instanceof DockerEngineError && error.code === "invalid_endpoint") {
      throw new SandboxConfigurationError(`${error.message.replace(/^Cannot use Engine endpoint: the endpoint/u, `Cannot use Engine endpoint ${endpoint} (${endpointSource(values)}): it`)}`, { cause: error });
    }
    const fault = connectFaultOf(error);
    if (fault === undefined) throw error;
    const fix = fault.systemCode === "EACCES"
      ? "run as a user the socket admits (its owner or group), or pass --endpoint (or set AGENTCELL_ENGINE) to another socket"
      : "start the Docker daemon, or pass --endpoint unix:///path/of/docker.sock (or set AGENTCELL_ENGINE) to the socket of one that runs";
    throw new SandboxEngineError(`Cannot reach the Docker Engine at ${endpoint} (${endpointSource(values)}): ${fault.systemCode}: ${fault.meaning}; ${fix}`, { cause: error });
  }
}

/** The image: the option or `$AGENTCELL_IMAGE`. */
export function imageOf(values: { image?: string }): string {
  const image = values.image ?? process.env.AGENTCELL_IMAGE;
  if (image === undefined || image === "") {
    throw new UsageError("Cannot open a sandbox: pass --image sha256:… (or set AGENTCELL_IMAGE); agentcell prepare-image SOURCE [TAG] makes one from a local image");
  }
  return image;
}

/**
 * A host directory named on the command line, relative to the working directory as a shell
 * user expects: made absolute and normalised (`node:path` `resolve`), symbolic links left in
 * place for the library's own checks (the records store refuses one).
 */
export function directoryOption(value: string): string {
  return resolve(value);
}

/** Where `run` and `shell` record their sandbox: `$XDG_STATE_HOME/agentcell/records` (else `~/.local/state/…`). */
export function defaultRecordsDirectory(): string {
  const state = process.env.XDG_STATE_HOME;
  return join(state !== undefined && state.startsWith("/") ? state : join(homedir(), ".local", "state"), "agentcell", "records");
}

/** Each profile of the table with what it finds unmet on this daemon (empty: it admits it). */
export function profileVerdicts(version: EngineVersion, info: EngineInfo): { name: DockerSandboxProfile; unmet: string[] }[] {
  return (Object.keys(DOCKER_SANDBOX_PROFILES) as DockerSandboxProfile[]).map((name) => ({
    name,
    unmet: unmetDaemonRequirements(DOCKER_SANDBOX_PROFILES[name], version, info),
  }));
}

/** The profile named by the option or `$AGENTCELL_PROFILE`, else `undefined` (no I/O). */
export function namedProfileOf(values: { profile?: string }): DockerSandboxProfile | undefined {
  const named = values.profile ?? process.env.AGENTCELL_PROFILE;
  return named === undefined || named === "" ? undefined : named as DockerSandboxProfile;
}

/**
 * The first profile of the table that admits the daemon at `endpoint` (asks the Engine).
 *
 * @throws {SandboxConfigurationError} when no profile admits the daemon (the message says run doctor)
 */
export async function admittingProfileOf(endpoint: string): Promise<DockerSandboxProfile> {
  const engine = new DockerEngine(endpoint);
  const [version, info] = await Promise.all([engine.version({ timeoutMs: 10_000 }), engine.info({ timeoutMs: 10_000 })]);
  const admitting = profileVerdicts(version, info).find((verdict) => verdict.unmet.length === 0);
  if (admitting === undefined) {
    throw new SandboxConfigurationError(`Cannot choose a profile: none admits the daemon at ${endpoint}; run agentcell doctor to see what each one finds unmet`);
  }
  return admitting.name;
}
