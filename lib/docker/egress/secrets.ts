/**
 * The values of the secrets an allowlist's routes name, given at `reservation.start({ secrets })`
 * (an object or a provider function), checked here and handed only to the egress proxy's
 * stdin (`acquire_egress.ts`). They never enter a policy, a record, an event, an error
 * message, a container's configuration or the guest: errors name a secret, never its value.
 *
 * @module
 */
import { SandboxConfigurationError } from "../../sandbox/errors.ts";
import type { SandboxNetworkSettings } from "../../sandbox/policy.ts";
import { routeSecretNames } from "../../sandbox/network_routes.ts";
import type { SandboxStartOptions } from "../../sandbox/start_options.ts";

/** Longest secret value: 8,192 characters. */
export const MAX_SECRET_LENGTH = 8192;

/**
 * Secret values by name: an object, or a function that returns one (called once per start,
 * after validation of the request and before any resource is created).
 */
export type DockerSandboxSecrets =
  | Readonly<Record<string, string>>
  | (() => Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>);

/**
 * Options of a Docker sandbox reservation's `start()`.
 *
 * @example
 * ```ts
 * import type { DockerSandboxStartOptions } from "./secrets.ts";
 *
 * const options: DockerSandboxStartOptions = { secrets: () => ({ anthropic: "sk-ant-…" }) };
 * ```
 */
export interface DockerSandboxStartOptions extends SandboxStartOptions {
  /**
   * The values of the secrets `policy.network.routes` name (exactly those: a missing or an
   * extra name is refused), each a string of 1 … 8,192 printable ASCII characters (or tab). Only
   * the egress proxy receives them, on its stdin; the guest reaches them only through a route.
   *
   * @default {undefined} no secrets (refused when a route names one)
   */
  readonly secrets?: DockerSandboxSecrets;
}

/**
 * The checked secrets for `network`'s routes.
 *
 * @returns the values of exactly the names the routes use (empty without routes)
 * @throws {SandboxConfigurationError} a name missing, one no route names, a value that is not
 *   a string of 1 … 8,192 printable ASCII characters (or tab), secrets without routes, or a
 *   provider that throws (its error is the `cause`; the message quotes no value)
 */
export async function resolveRouteSecrets(network: SandboxNetworkSettings, given: DockerSandboxSecrets | undefined): Promise<Readonly<Record<string, string>>> {
  const routes = typeof network === "object" ? network.routes : [];
  const needed = routeSecretNames(routes);
  const fail = (reason: string, cause?: unknown): never => {
    throw new SandboxConfigurationError(`Cannot start sandbox: ${reason}`, cause === undefined ? undefined : { cause });
  };
  if (given === undefined) {
    if (needed.length > 0) fail(`options.secrets is required: policy.network.routes name the secret ${needed[0]}; pass its value in reservation.start({ secrets })`);
    return {};
  }
  if (needed.length === 0) fail("options.secrets is given, but no route of policy.network names a secret: remove it, or add routes");
  let values: unknown;
  try {
    values = typeof given === "function" ? await given() : given;
  } catch (error) {
    fail("the options.secrets provider failed", error);
  }
  if (typeof values !== "object" || values === null || Array.isArray(values)) fail("options.secrets must be an object of secret name → value (or a function returning one)");
  const record = values as Record<string, unknown>;
  const chosen: Record<string, string> = {};
  for (const name of needed) {
    if (!Object.hasOwn(record, name)) fail(`options.secrets.${name} is required: a route of policy.network.routes names it`);
    const value = record[name];
    // Printable ASCII and tab: what a header value carries unchanged (node:http refuses control
    // characters, and writes characters past U+00FF mangled).
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_SECRET_LENGTH || !/^[\t\x20-\x7e]+$/u.test(value)) {
      fail(`options.secrets.${name} must be a string of 1 to ${MAX_SECRET_LENGTH} printable ASCII characters (a header value)`);
    }
    chosen[name] = value as string;
  }
  const extra = Object.keys(record).find((name) => !needed.includes(name));
  if (extra !== undefined) fail(`options.secrets.${extra.slice(0, 64)} is not named by any route of policy.network.routes: remove it`);
  return Object.freeze(chosen);
}
