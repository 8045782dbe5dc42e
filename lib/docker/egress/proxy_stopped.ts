/**
 * The stop cause of an allowlist sandbox whose egress proxy stopped on its own: what the
 * Engine recorded about the proxy's end (`State.OOMKilled`, `State.ExitCode` of
 * `GET /containers/{id}/json`, Engine API v1.44), read before anything removes it.
 *
 * @module
 */
import { SandboxStoppedError } from "../../sandbox/errors.ts";
import { PROXY_LIMITS } from "./proxy_container.ts";

/** What is known about the proxy's end. */
export interface ProxyEnd {
  /**
   * Exit status: the `wait` answer's `StatusCode` (128 + N for signal N); `undefined` when the
   * proxy was removed from outside (the wait answered 404).
   */
  readonly exitCode: number | undefined;
  /**
   * `State.OOMKilled` of the proxy's inspect: `true` when the kernel's OOM killer ended it,
   * `undefined` when the inspect could not be read (the proxy was removed from outside).
   */
  readonly oomKilled: boolean | undefined;
}

/** Signal names by number (Linux x86-64 and arm64) for the ones a stop usually carries. */
const SIGNALS: Readonly<Record<number, string>> = Object.freeze({ 1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM" });

function exitText(exitCode: number | undefined): string {
  if (exitCode === undefined) return "removed from outside, exit code unknown";
  if (exitCode <= 128 || exitCode > 128 + 64) return `exit code ${exitCode}`;
  const signal = exitCode - 128;
  return `exit code ${exitCode}: killed by signal ${signal}${SIGNALS[signal] ? ` (${SIGNALS[signal]})` : ""}`;
}

/**
 * The `SandboxStoppedError` (code `stopped`) for a proxy that stopped on its own, naming
 * whether it was OOM-killed and its exit code.
 */
export function proxyStoppedError(end: ProxyEnd): SandboxStoppedError {
  const base = "Cannot continue: the egress proxy container stopped on its own";
  const limit = `${PROXY_LIMITS.memoryBytes / (1024 * 1024)} MiB`;
  const reason = end.oomKilled === true
    ? `it was OOM-killed at its ${limit} memory limit, ${exitText(end.exitCode)}; lower network.maxConnections to hold fewer busy tunnels`
    : end.oomKilled === false
    ? `not OOM-killed, ${exitText(end.exitCode)}`
    : `${exitText(end.exitCode)}; whether it was OOM-killed is unknown: its state could not be read`;
  return new SandboxStoppedError(`${base} (${reason}), so the sandbox was stopped`, end.oomKilled === true ? { oomKilled: true } : undefined);
}
