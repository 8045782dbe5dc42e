/**
 * Credentialed routes of an allowlist network: named HTTPS upstreams the guest reaches at a
 * plain-HTTP base URL on the egress proxy, which adds the named headers with secret values the
 * guest never holds. This file holds their shape, bounds and zod schema; the secret *values*
 * are given at `start()` (Docker backend: `reservation.start({ secrets })`), never in a policy,
 * which is recorded and digested. How a backend serves a route is the backend's (the Docker
 * backend: docs/egress.md, "Routes").
 *
 * @module
 */
import { z } from "zod";
import { DNS_NAME } from "./_dns_name.ts";
import { expect } from "../internal/zod_issues.ts";

/** Most routes of one allowlist: 16. */
export const MAX_ROUTES = 16;

/** Most headers one route sets: 16. */
export const MAX_ROUTE_HEADERS = 16;

/** Most `upstreamCaCertificates` entries: 16, each at most 16 KiB of PEM. */
export const MAX_UPSTREAM_CA_CERTIFICATES = 16;

/**
 * Header fields a route may not set: the ones that frame a request, name its target or concern
 * only one hop (RFC 9110 §7.6.1); the proxy owns them.
 */
export const ROUTE_RESERVED_HEADERS: readonly string[] = Object.freeze([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "te",
  "trailer",
  "upgrade",
]);

/**
 * Environment variables a route may not set: the guest's fixed ones and the proxy variables,
 * which the backend sets itself.
 */
export const ROUTE_RESERVED_ENV: readonly string[] = Object.freeze(["HOME", "TMPDIR", "PATH", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]);

/**
 * One header a route sets on every request it forwards: `prefix` followed by the value of the
 * secret named `secret` (given at `start()`).
 *
 * @example
 * ```ts
 * import type { SandboxRouteHeader } from "./network_routes.ts";
 *
 * const bearer: SandboxRouteHeader = { secret: "openai", prefix: "Bearer " };
 * ```
 */
export interface SandboxRouteHeader {
  /** Name of the secret whose value the header carries: 1 … 64 of `A-Z a-z 0-9 _ . -`. */
  readonly secret: string;
  /**
   * Text before the secret's value (`"Bearer "`), at most 256 printable ASCII characters.
   *
   * @default {""}
   */
  readonly prefix?: string;
}

/**
 * A credentialed route: the guest sends plain HTTP to `http://<proxy>:3128/<name>/<rest>`
 * (the URL is in the variables `baseUrlEnv` names); the proxy sends `<rest>` with its query to
 * `upstream` over TLS it originates and verifies, with `headers` set (an incoming header of
 * the same name is dropped), and to no other host.
 *
 * @example
 * ```ts
 * import type { SandboxRoute } from "./network_routes.ts";
 *
 * const anthropic: SandboxRoute = {
 *   name: "anthropic",
 *   upstream: "https://api.anthropic.com",
 *   headers: { "x-api-key": { secret: "anthropic" } },
 *   baseUrlEnv: ["ANTHROPIC_BASE_URL"],
 *   env: { ANTHROPIC_API_KEY: "agentcell-placeholder" },
 * };
 * ```
 */
export interface SandboxRoute {
  /** The route's path segment on the proxy: 1 … 63 lower-case letters, digits and inner hyphens, unique. */
  readonly name: string;
  /**
   * `https://host[:port][/path]`: a DNS name (not an address), no user, query or fragment.
   * A path is the prefix every forwarded path is put under. Its address is checked like an
   * allowlist destination's (`resolve` and `addresses` apply); it need not be on `hosts`.
   */
  readonly upstream: string;
  /** Headers to set, 1 … 16, by field name (case-insensitive; not `host`, framing or hop-by-hop fields). */
  readonly headers: Readonly<Record<string, SandboxRouteHeader>>;
  /**
   * Guest environment variables set to the route's base URL, `http://<proxy address>:3128/<name>`
   * (no trailing slash), e.g. `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `npm_config_registry`.
   *
   * @default {[]}
   */
  readonly baseUrlEnv?: readonly string[];
  /**
   * Guest environment variables with fixed values, e.g. a placeholder for the credential
   * variable a client insists on (`ANTHROPIC_API_KEY: "agentcell-placeholder"`). Never a secret:
   * they are in the keeper's configuration.
   *
   * @default {{}}
   */
  readonly env?: Readonly<Record<string, string>>;
}

/** A route after normalisation: header names lower-case, every field present, frozen. */
export interface SandboxRouteSettings {
  /** The route's path segment. */
  readonly name: string;
  /** The upstream URL as the WHATWG URL parser writes it (`https://api.example.com/v1`, no trailing slash unless the path is `/`). */
  readonly upstream: string;
  /** Headers by lower-case name, `prefix` filled. */
  readonly headers: Readonly<Record<string, Required<SandboxRouteHeader>>>;
  /** Variables set to the base URL. */
  readonly baseUrlEnv: readonly string[];
  /** Variables with fixed values. */
  readonly env: Readonly<Record<string, string>>;
}

const ROUTE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/u;
const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/u;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/u;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/u;

/** Why `text` is not a route upstream, or `undefined` when it is one. */
function upstreamDefect(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an https:// URL (https://api.example.com)";
  }
  if (url.protocol !== "https:") return "must be an https:// URL: the proxy adds credentials only over TLS it verifies";
  if (url.username !== "" || url.password !== "") return "must not carry a user or password: put credentials in headers";
  if (url.search !== "" || url.hash !== "" || text.includes("?") || text.includes("#")) return "must not have a query or fragment";
  if (!DNS_NAME.test(url.hostname) || /^[\d.]+$/u.test(url.hostname)) return "must name its host by a DNS name, not an address";
  return undefined;
}

/** Why `name` may not be a route's environment variable, or `undefined`. */
function envNameDefect(name: string): string | undefined {
  if (!ENV_NAME.test(name)) return "must be an environment variable name (letters, digits and _, not starting with a digit)";
  if (ROUTE_RESERVED_ENV.includes(name.toUpperCase())) return "must not be HOME, TMPDIR, PATH or a proxy variable (the backend sets those)";
  return undefined;
}

/** Why `name` may not be a header a route sets, or `undefined`. */
function headerNameDefect(name: string): string | undefined {
  if (!HEADER_NAME.test(name)) return "must be an HTTP field name";
  if (ROUTE_RESERVED_HEADERS.includes(name.toLowerCase())) return "must not be host, a framing or a hop-by-hop field";
  return undefined;
}

/**
 * Refine a record's keys with `defect` (zod words a failed key schema as the record's own
 * error, without the key's reason), each issue at the key's path.
 */
function keysChecked(defect: (key: string) => string | undefined) {
  return (map: Record<string, unknown>, context: z.RefinementCtx) => {
    for (const key of Object.keys(map)) {
      const reason = defect(key);
      if (reason) context.addIssue({ code: "custom", path: [key], message: reason });
    }
  };
}

const envName = z.string({ error: expect("must be a string") }).superRefine((name, context) => {
  const reason = envNameDefect(name);
  if (reason) context.addIssue({ code: "custom", message: reason });
});

const header = z.strictObject({
  secret: z.string({ error: expect("must be a string") }).refine((name) => SECRET_NAME.test(name), {
    error: "must be a secret name of 1 to 64 letters, digits, _, . or -",
  }),
  prefix: z.string({ error: expect("must be a string") }).max(256, { error: "must be at most 256 characters" })
    .refine((prefix) => /^[\x20-\x7e]*$/u.test(prefix), { error: "must be printable ASCII" }).optional(),
});

const route = z.strictObject({
  name: z.string({ error: expect("must be a string") }).refine((name) => ROUTE_NAME.test(name), {
    error: "must be 1 to 63 lower-case letters, digits and inner hyphens (anthropic)",
  }),
  upstream: z.string({ error: expect("must be a string") }).max(2048, { error: "must be at most 2048 characters" }).superRefine((text, context) => {
    const defect = upstreamDefect(text);
    if (defect) context.addIssue({ code: "custom", message: defect });
  }),
  headers: z.record(z.string(), header, { error: expect("must be an object of field name → { secret, prefix? }") }).superRefine(keysChecked(headerNameDefect)).refine((map) => Object.keys(map).length >= 1 && Object.keys(map).length <= MAX_ROUTE_HEADERS, {
    error: `must set 1 to ${MAX_ROUTE_HEADERS} headers`,
  }).refine((map) => new Set(Object.keys(map).map((name) => name.toLowerCase())).size === Object.keys(map).length, {
    error: "must not name a field twice (names are case-insensitive)",
  }),
  baseUrlEnv: z.array(envName, { error: expect("must be an array of variable names") }).max(16, { error: "must list at most 16 variables" }).optional(),
  env: z.record(z.string(), z.string({ error: expect("must be a string") }).max(4096, { error: "must be at most 4096 characters" }).refine((value) => !value.includes("\0"), {
    error: "must not contain NUL",
  }), { error: expect("must be an object of name → value") }).superRefine(keysChecked(envNameDefect)).refine((map) => Object.keys(map).length <= 16, { error: "must set at most 16 variables" }).optional(),
});

/**
 * zod schema of an allowlist's `routes`: at most {@linkcode MAX_ROUTES}, unique names, and no
 * environment variable set twice across them.
 */
export const sandboxRoutesSchema: z.ZodType<readonly SandboxRoute[]> = z.array(route, { error: expect("must be an array of routes") })
  .max(MAX_ROUTES, { error: `must list at most ${MAX_ROUTES} routes` })
  .superRefine((routes, context) => {
    const names = new Set<string>();
    const variables = new Set<string>();
    routes.forEach((entry, index) => {
      if (names.has(entry.name)) context.addIssue({ code: "custom", path: [index, "name"], message: `must be unique: "${entry.name}" is taken by an earlier route` });
      names.add(entry.name);
      for (const name of [...(entry.baseUrlEnv ?? []), ...Object.keys(entry.env ?? {})]) {
        if (variables.has(name)) context.addIssue({ code: "custom", path: [index], message: `must not set ${name} again: an earlier variable of the routes sets it` });
        variables.add(name);
      }
    });
  });

/** zod schema of an allowlist's `upstreamCaCertificates`: PEM texts, at most {@linkcode MAX_UPSTREAM_CA_CERTIFICATES} of 16 KiB each. */
export const upstreamCaCertificatesSchema: z.ZodType<readonly string[]> = z.array(
  z.string({ error: expect("must be a string") }).max(16_384, { error: "must be at most 16384 characters" })
    .refine((pem) => /^-----BEGIN CERTIFICATE-----\r?\n[\s\S]+\n-----END CERTIFICATE-----\s*$/u.test(pem.trim() + "\n"), {
      error: "must be one PEM certificate (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)",
    }),
  { error: expect("must be an array of PEM certificates") },
).max(MAX_UPSTREAM_CA_CERTIFICATES, { error: `must list at most ${MAX_UPSTREAM_CA_CERTIFICATES} certificates` });

/**
 * Fill a parsed route's defaults and freeze it.
 *
 * @param parsed a route that passed {@linkcode sandboxRoutesSchema}
 * @returns its settings
 */
export function normalizeRoute(parsed: SandboxRoute): SandboxRouteSettings {
  const url = new URL(parsed.upstream);
  const path = url.pathname === "/" ? "/" : url.pathname.replace(/\/+$/u, "");
  const headers: Record<string, Required<SandboxRouteHeader>> = {};
  for (const [name, value] of Object.entries(parsed.headers)) headers[name.toLowerCase()] = Object.freeze({ secret: value.secret, prefix: value.prefix ?? "" });
  return Object.freeze({
    name: parsed.name,
    upstream: `${url.origin}${path === "/" ? "" : path}`,
    headers: Object.freeze(headers),
    baseUrlEnv: Object.freeze([...(parsed.baseUrlEnv ?? [])]),
    env: Object.freeze({ ...(parsed.env ?? {}) }),
  });
}

/** The secret names `routes` refer to, each once, in order of first use. */
export function routeSecretNames(routes: readonly SandboxRouteSettings[]): string[] {
  return [...new Set(routes.flatMap((entry) => Object.values(entry.headers).map((value) => value.secret)))];
}
