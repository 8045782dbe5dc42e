/**
 * The `allowlist` network kind of a sandbox policy: outbound connections only to named
 * hosts, through a proxy the guest cannot bypass. This file holds its shape, its bounds and
 * its zod schema; how a backend enforces it is the backend's (the Docker backend: an
 * internal network and a proxy container, see the README's "Egress allowlist").
 *
 * @module
 */
import { z } from "zod";
import { broadWildcardDefect } from "./_public_suffixes.ts";
import { DNS_LABEL, DNS_NAME } from "./_dns_name.ts";
import { normalizeRoute, type SandboxRoute, type SandboxRouteSettings, sandboxRoutesSchema, upstreamCaCertificatesSchema } from "./network_routes.ts";
import { expect, issueWording } from "../internal/zod_issues.ts";

/**
 * Most entries of `hosts`, of `addresses` and of `resolve` each: 256.
 */
export const MAX_ALLOWLIST_ENTRIES = 256;

/** Most addresses one `resolve` name may map to: 16. */
export const MAX_RESOLVE_ADDRESSES = 16;

/**
 * Largest `maxConnections`: 128 connections open at once through the proxy. Measured on the
 * proxy container's 128 MiB (Engine 28.5, runc, cgroup v1, Node 26 in the proxy): 127 tunnels
 * the guest pushes into while the upstream never reads peaked at 80 to 94 MiB of the
 * container's memory, so 128 leaves a margin; at 1,024 the proxy was OOM-killed at about 600.
 */
export const MAX_EGRESS_CONNECTIONS = 128;

/**
 * Most bytes of JSON that an allowlist's `hosts`, `addresses`, `resolve`, `routes` and `upstreamCaCertificates` may take
 * together: 96 KiB. The proxy container receives its configuration as one environment
 * string, and Linux bounds one such string at 128 KiB (`MAX_ARG_STRLEN`, 32 pages); the rest
 * is left for the host addresses and the bounds.
 */
export const MAX_ALLOWLIST_CONFIG_BYTES = 98_304;

/**
 * Outbound access only to listed hosts, through an egress proxy.
 *
 * The guest's own network has no route anywhere; the proxy (reachable through the
 * `HTTP_PROXY` / `HTTPS_PROXY` environment) accepts HTTP `CONNECT host:port` and
 * absolute-form `http://` requests whose host is listed, resolves the name itself and
 * refuses loopback, private, link-local, CGNAT, reserved and the host's own addresses
 * unless `addresses` allows them. TLS is never terminated: a listed host is allowed for
 * everything on it.
 *
 * @example
 * ```ts
 * import type { SandboxAllowlistNetwork } from "./network_allowlist.ts";
 *
 * const network: SandboxAllowlistNetwork = {
 *   kind: "allowlist",
 *   hosts: ["api.example.com", "*.pypi.org:443"],
 * };
 * ```
 */
export interface SandboxAllowlistNetwork {
  /** Always `"allowlist"`. */
  readonly kind: "allowlist";
  /**
   * Allowed hosts, 0 … 256 entries (at least one unless `routes` are given): an exact DNS name (`api.example.com`) or a wildcard
   * (`*.example.com` matches every subdomain, `a.example.com` and `a.b.example.com`, but not
   * `example.com` itself), each with an optional `:port` (1 … 65535; without one, every
   * port). Names compare case-insensitively; a trailing dot (`api.example.com.`) is
   * accepted and dropped. Addresses go in `addresses`, not here. A wildcard directly under a
   * top-level domain (`*.com`) or under a well-known public suffix (`*.co.uk`,
   * `*.github.io`) is refused unless `allowBroadWildcards` is `true`.
   */
  readonly hosts: readonly string[];
  /**
   * Accept wildcards that allow every site of a top-level domain (`*.com`, `*.test`) or of a
   * well-known multi-label public suffix (`*.co.uk`, `*.com.au`, `*.co.jp`, `*.github.io`; a
   * short list of the suffixes with the most registrations and the hosting platforms, not the
   * whole Public Suffix List). Without it such an entry is refused at `reserve()`
   * (`SandboxConfigurationError` naming `policy.network.hosts.N`). A consent checked at
   * validation only: the normalized settings do not carry it.
   *
   * @default {false}
   */
  readonly allowBroadWildcards?: boolean;
  /**
   * Destinations allowed by address even when they are not public: bare IPv4 or IPv6
   * addresses or CIDR ranges (`10.0.0.5`, `10.1.0.0/16`, `fd00::/8`), at most 256. A name on
   * `hosts` that resolves into one of them is allowed; a request for an address literal in
   * one of them is allowed on every port. A `/0` range (`0.0.0.0/0`, `::/0`) is refused: it
   * would turn every address check off. Other ranges are trusted as written: `0.0.0.0/1` with
   * `128.0.0.0/1`, or `::ffff:0:0/96` (every IPv4 address in IPv6 form, loopback included),
   * turn the checks off as well.
   *
   * @default {[]}
   */
  readonly addresses?: readonly string[];
  /**
   * Fixed answers the proxy uses instead of DNS for these names (tests, split-horizon
   * setups): name → 1 … 16 IPv4/IPv6 addresses, at most 256 names. The answers are checked
   * like DNS answers (a private address still needs `addresses`).
   *
   * @default {{}}
   */
  readonly resolve?: Readonly<Record<string, readonly string[]>>;
  /**
   * Most TCP connections from the guest to the proxy at once, 1 … 128 (what the proxy's
   * 128 MiB holds with margin when every tunnel is busy), counted when the
   * proxy accepts them (before any request, so silent connections count too). The next is
   * answered `503` at once and closed, with a `denied` event whose `host` is `""` and `port`
   * 0 (its request is never read); when as many refused connections are still closing, it is
   * closed without an answer.
   *
   * @default {64}
   */
  readonly maxConnections?: number;
  /**
   * A connection that has not sent a complete request head (a `CONNECT` or an absolute-form
   * request line with its headers) this long after the proxy accepted it is answered `408`
   * and closed, with a `denied` event ("no complete request head within … ms"), in
   * milliseconds (1,000 … 86,400,000). The same bound holds for the proxy's name lookup of
   * a request's host and for its connect to the upstream (refused `403` / answered `502`).
   *
   * @default {30000} thirty seconds
   */
  readonly headersTimeoutMs?: number;
  /**
   * A connection with no bytes either way for this long is closed, in milliseconds
   * (1,000 … 86,400,000).
   *
   * @default {300000} five minutes
   */
  readonly idleTimeoutMs?: number;
  /**
   * Most bytes per connection, both directions together; `0` = unbounded (0 … 2^53 − 1). A
   * `CONNECT` tunnel counts every byte after its request head, including bytes the guest sent
   * in the same packet; an absolute-form `http://` request counts its request body and its
   * response body. The chunk that would pass the bound is not forwarded: the connection is
   * closed and its `closed` event's reason is "more than N bytes".
   *
   * @default {0}
   */
  readonly maxBytesPerConnection?: number;
  /**
   * Credentialed routes, at most 16: named HTTPS upstreams the guest reaches at
   * `http://<proxy>:3128/<name>/` while the proxy adds headers with secret values given at
   * `start()` (never here). See {@linkcode SandboxRoute} and docs/egress.md, "Routes".
   *
   * @default {[]}
   */
  readonly routes?: readonly SandboxRoute[];
  /**
   * PEM certificates the proxy trusts for routes' upstreams, besides the proxy image's own
   * store and Node's bundled Mozilla roots: a private CA, or a test's self-signed certificate.
   * At most 16 of 16 KiB each.
   *
   * @default {[]}
   */
  readonly upstreamCaCertificates?: readonly string[];
}

/** An allowlist after normalisation: every field present, names lower-case, frozen. */
export interface SandboxAllowlistNetworkSettings {
  /** Always `"allowlist"`. */
  readonly kind: "allowlist";
  /** Allowed hosts, lower-case. */
  readonly hosts: readonly string[];
  /** Addresses and ranges allowed although not public. */
  readonly addresses: readonly string[];
  /** Fixed answers by lower-case name. */
  readonly resolve: Readonly<Record<string, readonly string[]>>;
  /** Most guest TCP connections at once. */
  readonly maxConnections: number;
  /** Time to a complete request head per connection, milliseconds. */
  readonly headersTimeoutMs: number;
  /** Idle bound per connection, milliseconds. */
  readonly idleTimeoutMs: number;
  /** Byte bound per connection; `0` = unbounded. */
  readonly maxBytesPerConnection: number;
  /** Credentialed routes. */
  readonly routes: readonly SandboxRouteSettings[];
  /** Extra PEM certificates trusted for routes' upstreams. */
  readonly upstreamCaCertificates: readonly string[];
}

const LABEL = DNS_LABEL;
const NAME = DNS_NAME;
const HOST_ENTRY = new RegExp(`^(\\*\\.)?((?:${LABEL}\\.)*${LABEL})(?::(\\d{1,5}))?$`, "iu");
const DOTTED = /^[\d.]+$/u;

const ip = z.union([z.ipv4(), z.ipv6()]);
const ipOrCidr = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]);

/** A `hosts` entry without the trailing dot of its name (`api.example.com.:443` → `api.example.com:443`). */
function withoutTrailingDot(entry: string): string {
  return entry.replace(/\.(?=(?::\d+)?$)/u, "");
}

/** Why a `hosts` entry is not one, or `undefined` when it is. */
function hostEntryDefect(entry: string): string | undefined {
  const match = HOST_ENTRY.exec(withoutTrailingDot(entry));
  if (!match || match[2].length > 253) {
    if (ipOrCidr.safeParse(entry.replace(/^\[|\](?::\d+)?$/gu, "")).success || ip.safeParse(entry.split(":")[0]).success) {
      return "must be a DNS name, not an address: list addresses in policy.network.addresses";
    }
    return "must be a DNS name (api.example.com) or a wildcard (*.example.com), optionally with :port";
  }
  if (DOTTED.test(match[2])) return "must be a DNS name, not an address: list addresses in policy.network.addresses";
  if (match[3] !== undefined && (Number(match[3]) < 1 || Number(match[3]) > 65535)) return "must have a port from 1 to 65535";
  return undefined;
}

const hostEntry = z.string({ error: expect("must be a string") }).max(300, { error: "must be at most 300 characters" })
  .superRefine((entry, context) => {
    const defect = hostEntryDefect(entry);
    if (defect) context.addIssue({ code: "custom", message: defect });
  });

const addressEntry = z.string({ error: expect("must be a string") }).refine((entry) => ipOrCidr.safeParse(entry).success, {
  error: "must be an IPv4 or IPv6 address or CIDR range (10.0.0.5, 10.1.0.0/16, fd00::/8)",
}).refine((entry) => !/\/0+$/u.test(entry), {
  error: "must not be a /0 range (every address): list the ranges the guest needs (10.1.0.0/16)",
});

const resolveName = z.string().max(254).refine((name) => NAME.test(name.replace(/\.$/u, "")), { error: "must be a DNS name without wildcard or port" });
const resolveAddress = z.string({ error: expect("must be a string") }).refine((entry) => ip.safeParse(entry).success, {
  error: "must be an IPv4 or IPv6 address",
});

function integer(minimum: number, maximum: number, unit: string): z.ZodNumber {
  const error = expect(`must be an integer from ${minimum} to ${maximum} ${unit}`);
  return z.number({ error }).int({ error }).min(minimum, { error }).max(maximum, { error });
}

/**
 * zod schema of {@linkcode SandboxAllowlistNetwork} (the `network` field of a policy when it
 * is an object). Messages are "must …" sentences naming the fix.
 */
export const sandboxAllowlistNetworkSchema: z.ZodType<SandboxAllowlistNetwork> = z.strictObject({
  kind: z.literal("allowlist", { error: expect('must be "allowlist"') }),
  hosts: z.array(hostEntry, { error: expect("must be an array of host names") })
    .max(MAX_ALLOWLIST_ENTRIES, { error: `must list at most ${MAX_ALLOWLIST_ENTRIES} hosts (use wildcards such as *.example.com)` }),
  addresses: z.array(addressEntry, { error: expect("must be an array of addresses") })
    .max(MAX_ALLOWLIST_ENTRIES, { error: `must list at most ${MAX_ALLOWLIST_ENTRIES} addresses (use CIDR ranges)` })
    .optional(),
  resolve: z.record(
    resolveName,
    z.array(resolveAddress, { error: expect("must be an array of addresses") })
      .min(1, { error: "must list at least one address" })
      .max(MAX_RESOLVE_ADDRESSES, { error: `must list at most ${MAX_RESOLVE_ADDRESSES} addresses` }),
    { error: expect("must be an object of name → addresses") },
  ).refine((map) => Object.keys(map).length <= MAX_ALLOWLIST_ENTRIES, {
    error: `must map at most ${MAX_ALLOWLIST_ENTRIES} names`,
  }).optional(),
  maxConnections: integer(1, MAX_EGRESS_CONNECTIONS, "connections").optional(),
  headersTimeoutMs: integer(1_000, 86_400_000, "milliseconds").optional(),
  idleTimeoutMs: integer(1_000, 86_400_000, "milliseconds").optional(),
  maxBytesPerConnection: integer(0, Number.MAX_SAFE_INTEGER, "bytes").optional(),
  allowBroadWildcards: z.boolean({ error: expect("must be a boolean") }).optional(),
  routes: sandboxRoutesSchema.optional(),
  upstreamCaCertificates: upstreamCaCertificatesSchema.optional(),
}).superRefine((allowlist, context) => {
  if (allowlist.hosts.length === 0 && (allowlist.routes ?? []).length === 0) {
    context.addIssue({ code: "custom", path: ["hosts"], message: 'must list at least one host (use "isolated" for no network), unless routes are given' });
  }
  if (allowlist.allowBroadWildcards !== true) {
    allowlist.hosts.forEach((entry, index) => {
      const match = HOST_ENTRY.exec(withoutTrailingDot(entry));
      const defect = match?.[1] === undefined ? undefined : broadWildcardDefect(match[2].toLowerCase());
      if (defect) context.addIssue({ code: "custom", path: ["hosts", index], message: defect });
    });
  }
  const bytes = new TextEncoder().encode(JSON.stringify([allowlist.hosts, allowlist.addresses, allowlist.resolve, allowlist.routes, allowlist.upstreamCaCertificates])).length;
  if (bytes > MAX_ALLOWLIST_CONFIG_BYTES) {
    context.addIssue({
      code: "custom",
      message: `takes ${bytes} bytes of JSON (hosts, addresses, resolve, routes and upstreamCaCertificates together), more than ${MAX_ALLOWLIST_CONFIG_BYTES}: the proxy receives it as one environment string, which Linux bounds at 128 KiB; list fewer or shorter entries (use wildcards and CIDR ranges)`,
    });
  }
});

const NAMED_NETWORKS = z.enum(["isolated", "outbound"]);

/**
 * zod schema of a policy's `network`: `"isolated"`, `"outbound"` or an allowlist object. An
 * object is checked against {@linkcode sandboxAllowlistNetworkSchema} alone, so its issues
 * keep their own paths and sentences (`policy.network.hosts is required`) instead of one
 * union failure; hand-dispatched because a zod union reports a failed object branch as a
 * union failure whenever a field is missing.
 */
export const sandboxNetworkSchema: z.ZodType<"isolated" | "outbound" | SandboxAllowlistNetwork> = z.unknown().superRefine((value, context) => {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    // `{ kind: "outbound" }` or `{ kind: "isolated" }`: those two are plain strings.
    const kind = (value as { kind?: unknown }).kind;
    if (kind === "outbound" || kind === "isolated") {
      context.addIssue({ code: "custom", message: `must be the string "${kind}", not an object with kind "${kind}" (only the allowlist is an object)` });
      return;
    }
    const result = sandboxAllowlistNetworkSchema.safeParse(value, { error: issueWording });
    for (const issue of result.error?.issues ?? []) {
      const path = issue.code === "unrecognized_keys" ? [...issue.path, issue.keys[0]] : issue.path;
      context.addIssue({ code: "custom", path, message: issue.message });
    }
  } else if (!NAMED_NETWORKS.safeParse(value).success) {
    context.addIssue({ code: "custom", message: 'must be "isolated", "outbound" or { kind: "allowlist", hosts: [...] }' });
  }
}) as z.ZodType<"isolated" | "outbound" | SandboxAllowlistNetwork>;

/**
 * Fill the defaults of a parsed allowlist and freeze it (names lower-case).
 *
 * @param parsed an allowlist that passed {@linkcode sandboxAllowlistNetworkSchema}
 * @returns the settings
 */
export function normalizeAllowlist(parsed: SandboxAllowlistNetwork): SandboxAllowlistNetworkSettings {
  const resolve: Record<string, readonly string[]> = {};
  for (const [name, addresses] of Object.entries(parsed.resolve ?? {})) {
    resolve[name.toLowerCase().replace(/\.$/u, "")] = Object.freeze([...addresses]);
  }
  return Object.freeze({
    kind: "allowlist",
    hosts: Object.freeze(parsed.hosts.map((host) => withoutTrailingDot(host).toLowerCase())),
    addresses: Object.freeze([...(parsed.addresses ?? [])]),
    resolve: Object.freeze(resolve),
    maxConnections: parsed.maxConnections ?? 64,
    headersTimeoutMs: parsed.headersTimeoutMs ?? 30_000,
    idleTimeoutMs: parsed.idleTimeoutMs ?? 300_000,
    maxBytesPerConnection: parsed.maxBytesPerConnection ?? 0,
    routes: Object.freeze((parsed.routes ?? []).map(normalizeRoute)),
    upstreamCaCertificates: Object.freeze([...(parsed.upstreamCaCertificates ?? [])]),
  });
}
