/**
 * `agentcell doctor`: talk to the endpoint and say what it is: the Engine and API version,
 * the cgroup version and driver, whether gVisor's `runsc` is registered, IPv4 forwarding,
 * and for every profile whether it admits the daemon or what it finds unmet.
 *
 * @module
 */
import { IPV4_FORWARDING_FIX } from "../docker/admission/daemon.ts";
import { MAX_API_VERSION, MIN_API_VERSION, negotiateApiVersion } from "../engine/api_version.ts";
import { DockerEngine } from "../engine/client.ts";
import { COMMON_HELP, parse, profileVerdicts, UsageError, withEndpoint } from "./_options.ts";

/** Help of `doctor`. */
export const DOCTOR_HELP = `agentcell doctor [--endpoint URL]

Talk to the Docker Engine and print what the sandbox needs to know of it: the Engine and API
version, cgroup version and driver, whether gVisor's runsc is registered, IPv4 forwarding,
and which profile admits the daemon (or what each one finds unmet). Exits 0 when a profile
admits it, 1 when none does or the Engine cannot be reached.

${COMMON_HELP.split("\n").filter((line) => /--endpoint|--help/u.test(line)).join("\n")}`;

/** Run `doctor`; resolves with the exit code. */
export async function doctor(args: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parse(args, { endpoint: { type: "string" } });
  if (positionals.length > 0) throw new UsageError(`Cannot run doctor: unexpected argument ${JSON.stringify(positionals[0])} (it takes only --endpoint)`);
  const { endpoint, version, info } = await withEndpoint(values, async (endpoint) => {
    const engine = new DockerEngine(endpoint);
    const [version, info] = await Promise.all([engine.version({ timeoutMs: 10_000 }), engine.info({ timeoutMs: 10_000 })]);
    return { endpoint, version, info };
  });
  let api: string;
  try {
    api = `API ${version.ApiVersion} (negotiated ${negotiateApiVersion(version.ApiVersion)})`;
  } catch {
    api = `API ${version.ApiVersion}: below ${MIN_API_VERSION}, the oldest this library speaks`;
  }
  const runsc = info.Runtimes?.runsc;
  out(`endpoint         ${endpoint}`);
  out(`engine           ${version.Version}, ${api}; this library speaks ${MIN_API_VERSION} … ${MAX_API_VERSION}`);
  out(`daemon           ${info.OperatingSystem}, ${info.OSType}/${info.Architecture}, kernel ${version.KernelVersion ?? "unknown"}`);
  out(`cgroup           v${info.CgroupVersion}, driver ${info.CgroupDriver}`);
  out(`runsc            ${runsc === undefined ? "not registered (profile linux-x64-gvisor needs it)" : `registered${runsc.path ? ` (${runsc.path})` : ""}`}`);
  out(
    `ipv4 forwarding  ${
      info.IPv4Forwarding === undefined ? "not reported" : info.IPv4Forwarding ? "on" : `off: outbound and allowlist networks are refused; ${IPV4_FORWARDING_FIX}`
    }`,
  );
  const verdicts = profileVerdicts(version, info);
  out("profiles:");
  const width = Math.max(...verdicts.map((verdict) => verdict.name.length));
  for (const { name, unmet } of verdicts) out(`  ${name.padEnd(width)}  ${unmet.length === 0 ? "admits this daemon" : `no: needs ${unmet.join("; ")}`}`);
  const admitting = verdicts.filter((verdict) => verdict.unmet.length === 0);
  if (admitting.length === 0) {
    out("no profile admits this daemon: see the unmet requirements above (docs/profiles.md)");
    return 1;
  }
  out(`use --profile ${admitting[0].name}${admitting.length > 1 ? ` (also admitting: ${admitting.slice(1).map((v) => v.name).join(", ")})` : ""}`);
  return 0;
}
