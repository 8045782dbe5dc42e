/**
 * The MCP server's check of its Engine at start, before it reads stdin: the endpoint
 * answers, the profile admits this host and the daemon, the image is there and admissible,
 * and the network and ceiling fit the daemon. Without it a server with a daemon it cannot use
 * would answer `initialize` and then fail every `sandbox_create`. The judgements are the
 * backend's own admission (`lib/docker/admission/`, as a sandbox's start runs them); this
 * file only observes the Engine once and names the field of the config file to fix.
 *
 * @module
 */
import process from "node:process";
import { admitDaemon, admitForwarding, admitHost, admitResources } from "../docker/admission/daemon.ts";
import { admitImage } from "../docker/admission/image.ts";
import { admitEgress } from "../docker/egress/admission.ts";
import { asSandboxError, connectFaultOf, rephrased } from "../docker/_engine_errors.ts";
import type { DockerSandboxBackendSettings } from "../docker/config.ts";
import { DockerEngine } from "../engine/client.ts";
import { inspectImage } from "../engine/images.ts";
import type { EngineInfo, EngineVersion } from "../engine/system.ts";
import { reasonOf } from "../internal/reason.ts";
import { SandboxError, SandboxUnsupportedError } from "../sandbox/errors.ts";
import type { SandboxPolicy } from "../sandbox/policy.ts";

/** Deadline of each Engine call of the start check, milliseconds (as `agentcell doctor`). */
export const MCP_START_CHECK_TIMEOUT_MS = 10_000;

const ACTION = "Cannot start the MCP server";

/**
 * The backend's field names in a reused message, as the MCP config file names them: the
 * backend's `config.<field>` is the file's `<field>` (the server passes only fields of the
 * file: endpoint, profile, imageDigest, namespace, user, spillDirectory, proxyImageDigest),
 * the policy's network and resources are the file's `network` and `ceiling`.
 */
function fileTerms(message: string): string {
  return message.replaceAll(/\bconfig\.(?=[a-zA-Z])/gu, "mcp.")
    .replaceAll(/\bpolicy\.network\b/gu, "mcp.network").replaceAll(/\bpolicy\.resources\./gu, "mcp.ceiling.");
}

/**
 * Run the backend's inert checks of the server's configuration (`check`: the backend's
 * construction and a reservation of the ceiling and network, no I/O) and answer a refusal
 * as the configuration's: "Cannot configure the MCP server: mcp.<field> …", the same class,
 * code and fix as the backend's.
 *
 * @throws {SandboxConfigurationError} / {SandboxUnsupportedError} naming the file's field
 */
export function admitMcpConfig(check: () => void): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof SandboxError)) throw error;
    const reason = error.message.replace(/^Cannot [^:]*: /u, "");
    throw rephrased(error, fileTerms(`Cannot configure the MCP server: ${reason}`), error);
  }
}

/**
 * `error` (an admission's refusal, "Cannot <inner>: <reason>") as the start's refusal: the same
 * class and code, "Cannot start the MCP server: <lead>: <reason>" in the config file's terms.
 */
function refusal(error: unknown, lead: string, inner: string): SandboxError {
  const typed = asSandboxError(error, inner);
  return rephrased(typed, fileTerms(`${ACTION}: ${lead}: ${reasonOf(typed, inner)}`), error);
}

/**
 * Check the Engine of `settings` for the MCP server (see the module doc). Reads `GET
 * /version`, `GET /info` and the image's inspect (and the proxy image's, for an allowlist);
 * creates nothing.
 *
 * @param settings the server's backend settings (normalised: the profile row)
 * @param policy the ceiling and network every sandbox gets, normalised
 * @throws {SandboxEngineError} (or `SandboxDeadlineError`) "Cannot start the MCP server:
 *   mcp.endpoint <url> does not answer (…): …" when the Engine cannot be reached
 * @throws {SandboxUnsupportedError} naming `mcp.profile` (host or daemon refused),
 *   `mcp.imageDigest` (absent, or refused by image admission), `mcp.network` (IPv4
 *   forwarding off) or `mcp.proxyImageDigest`
 * @throws {SandboxConfigurationError} naming `mcp.ceiling` when it exceeds the daemon's host
 */
export async function admitMcpEngine(settings: DockerSandboxBackendSettings, policy: SandboxPolicy): Promise<void> {
  const { endpoint, imageDigest, profile } = settings;
  const engine = new DockerEngine(endpoint);
  const options = { timeoutMs: MCP_START_CHECK_TIMEOUT_MS };
  try {
    admitHost(profile, { platform: process.platform, arch: process.arch });
  } catch (error) {
    throw refusal(error, `mcp.profile ${profile.name} does not fit this host`, `use profile ${profile.name}`);
  }
  let version: EngineVersion, info: EngineInfo;
  try {
    [version, info] = await Promise.all([engine.version(options), engine.info(options)]);
  } catch (error) {
    const fault = connectFaultOf(error);
    const typed = asSandboxError(error, "start the MCP server");
    const why = fault === undefined ? reasonOf(typed, "start the MCP server") : `${fault.systemCode}: ${fault.meaning}`;
    throw rephrased(
      typed,
      `${ACTION}: mcp.endpoint ${endpoint} does not answer (${why}): start the Docker daemon, or set mcp.endpoint to the unix:/// path of its socket`,
      error,
    );
  }
  try {
    admitDaemon(profile, version, info);
  } catch (error) {
    throw refusal(error, `mcp.profile ${profile.name} does not admit the Docker daemon at ${endpoint} (agentcell doctor --endpoint ${endpoint} shows every profile's verdict)`, `admit the Docker daemon for profile ${profile.name}`);
  }
  try {
    admitForwarding(policy, info);
  } catch (error) {
    throw refusal(error, `mcp.network cannot be given by the Docker daemon at ${endpoint}`, "start sandbox");
  }
  try {
    admitResources(policy, info);
  } catch (error) {
    throw refusal(error, `mcp.ceiling exceeds the host of the Docker daemon at ${endpoint}`, "start sandbox");
  }
  const allowlist = typeof policy.network === "object";
  const [image, proxyImage] = await Promise.all([
    inspectImage(engine, imageDigest, options),
    allowlist && settings.proxyImageDigest !== undefined ? inspectImage(engine, settings.proxyImageDigest, options) : undefined,
  ]).catch((error) => {
    throw refusal(error, `the Docker daemon at ${endpoint} failed to inspect the images`, "inspect image");
  });
  if (image === undefined) {
    throw new SandboxUnsupportedError(
      `${ACTION}: mcp.imageDigest ${imageDigest} is not an image of the Docker Engine at ${endpoint} (it never pulls or builds): ` +
        `run agentcell prepare-image --endpoint ${endpoint} SOURCE TAG first and set mcp.imageDigest to the ID it prints`,
    );
  }
  try {
    admitImage(imageDigest, image, profile);
  } catch (error) {
    throw refusal(error, `mcp.imageDigest ${imageDigest} is not admitted`, `admit image ${imageDigest}`);
  }
  if (allowlist && settings.proxyImageDigest !== undefined) {
    try {
      admitEgress(version, settings.proxyImageDigest, proxyImage, profile);
    } catch (error) {
      throw refusal(error, `the allowlist of mcp.network cannot run on the Docker daemon at ${endpoint}`, "start sandbox");
    }
  }
}
