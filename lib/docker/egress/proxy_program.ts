/**
 * The egress proxy program: ours, run by the JS runtime of a caller-supplied image inside the
 * sandbox's proxy container, passed as this one file's text on its command line (it imports
 * only `node:` modules, so it needs nothing else in the image; see `proxy_container.ts`). It speaks HTTP `CONNECT host:port` (tunnels, e.g.
 * HTTPS; TLS is never terminated) and absolute-form HTTP requests (`GET http://host/…`),
 * and lets a request through only when
 *
 * 1. its host matches the allowlist: an exact name (`api.example.com`), a wildcard
 *    (`*.example.com` matches `a.example.com` and `a.b.example.com`, not `example.com`), an
 *    optional port (`api.example.com:443`; without one, any port), or an explicitly allowed
 *    address; and
 * 2. every address the name resolves to (the proxy resolves names itself, through the
 *    runtime's resolver or the configured override) is a public unicast address, or is
 *    explicitly allowed. Loopback, private, link-local, unique-local, CGNAT, multicast,
 *    reserved and unspecified ranges are refused, and so are the addresses the controller
 *    names as the host's own. The proxy connects to the checked address itself, so a name
 *    that resolves differently a moment later cannot redirect it.
 *
 * Credentialed routes (`routes`): a request for `/<name>/…` on the proxy itself (origin-form,
 * absolute-form to the proxy's own address and port, or inside a `CONNECT` to it, where the
 * tunnel ends at the routes) goes to that route's HTTPS upstream only, over TLS the proxy
 * originates and verifies, with the route's headers set from secrets read once from stdin
 * (never from the environment or the command line); answers, redirects included, are passed
 * on as they are.
 *
 * Bounds: TCP connections at once (silent ones too), time to a complete request head (the
 * same time bounds a name lookup and an upstream connect), idle time per connection, bytes per connection (optional; tunnels and absolute-form requests
 * alike), request head size (16 KiB, node:http's default). Each decision is one JSON line on stdout
 * (`{"event":"allowed"|"denied"|"closed",…}`), read by the controller through the Engine.
 *
 * The controller does not load this module's code: it reads the file's text
 * (`program_source.ts`) for the proxy container's command line and imports only its types
 * (`import type`, erased when the code is stripped). The unit tests import it for its
 * functions. Importing it starts nothing: the proxy starts only when this file is the main
 * program — its text passed to `node --input-type=module-typescript -e`, as in the proxy
 * container, or `node proxy_program.ts` — and `AGENTCELL_EGRESS_CONFIG` is set (JSON of
 * {@linkcode EgressProxyConfig}, which the controller puts in the container's environment);
 * it then writes its decisions to stdout.
 *
 * @module
 */
import { lookup } from "node:dns/promises";
import { type ClientRequest, createServer as createHttpServer, type IncomingMessage, request as httpRequest, type Server as HttpServer, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect, createServer as createTcpServer, isIP, type Server as TcpServer, type Socket } from "node:net";
import process from "node:process";
// A namespace import: `getCACertificates` is missing before Node 23.10, and a named import of
// a missing export would fail the whole program at link time.
import * as tls from "node:tls";

/**
 * What the proxy enforces (validated by the controller before it is written): the policy's
 * `SandboxAllowlistNetworkSettings` plus the port and the host's addresses. Declared here,
 * not imported, because this file runs alone in the proxy container (only `node:` imports).
 */
export interface EgressProxyConfig {
  /** TCP port to listen on (all interfaces of the proxy container). */
  readonly port: number;
  /** Allowed hosts: `name`, `*.suffix`, either with `:port`. */
  readonly hosts: readonly string[];
  /** Explicitly allowed destinations by address: `10.0.0.5`, `10.1.0.0/16`, `fd00::/8`. */
  readonly addresses: readonly string[];
  /** Addresses that are the host's own (its gateways and interfaces): always refused unless explicitly allowed. */
  readonly hostAddresses: readonly string[];
  /** Fixed name → addresses answers used instead of the resolver (tests, split horizon). */
  readonly resolve: Readonly<Record<string, readonly string[]>>;
  /** Most guest TCP connections open at once (counted when accepted, before any request). */
  readonly maxConnections: number;
  /**
   * A connection without a complete request head this long after it was accepted is closed
   * (`408`), milliseconds; the same bound holds for a name lookup and an upstream connect.
   */
  readonly headersTimeoutMs: number;
  /** A connection with no bytes either way for this long is closed, milliseconds. */
  readonly idleTimeoutMs: number;
  /**
   * Most bytes per connection in both directions together; `0` = unbounded. A tunnel counts
   * every byte after the CONNECT head (the bytes sent in its packet too); an absolute-form
   * request counts its request body and its response body.
   */
  readonly maxBytesPerConnection: number;
  /** Credentialed routes, served at `/<name>/` on the proxy itself (origin-form, or through a CONNECT to the proxy's own address). */
  readonly routes: readonly EgressRoute[];
  /** PEM certificates trusted for routes' upstreams besides the image's system store and the runtime's bundled roots. */
  readonly upstreamCaCertificates: readonly string[];
}

/**
 * One credentialed route as the proxy serves it: requests under `/<name>/` go to
 * `https://<host>:<port><basePath>…` with `headers` set from the secrets (given on stdin).
 */
export interface EgressRoute {
  /** The path segment. */
  readonly name: string;
  /** The upstream's DNS name (TLS server name, `Host` field, and the name resolved and checked). */
  readonly host: string;
  /** The upstream's port. */
  readonly port: number;
  /** Path prefix on the upstream: `""` or `/v1` (no trailing slash). */
  readonly basePath: string;
  /** Headers by lower-case name: `prefix` + the value of secret `secret`. */
  readonly headers: Readonly<Record<string, { readonly secret: string; readonly prefix: string }>>;
}

/** One decision of the proxy, as written on stdout. */
export interface EgressEvent {
  /** `allowed` (a connection was opened), `denied` (refused), `closed` (an allowed one ended). */
  readonly event: "allowed" | "denied" | "closed";
  /** Requested host (a name or an address literal); `""` when a connection was refused before its request (count, head timeout). */
  readonly host: string;
  /** Requested port; `0` when there was none. */
  readonly port: number;
  /** The address connected to, for `allowed` and `closed`. */
  readonly address?: string;
  /** Why a request was denied or a connection closed. */
  readonly reason?: string;
  /** Bytes from the guest to the destination, for `closed` (a tunnel's bytes, or a request's body). */
  readonly bytesOut?: number;
  /** Bytes from the destination to the guest, for `closed` (a tunnel's bytes, or a response's body). */
  readonly bytesIn?: number;
  /** The route's name, for a request of a credentialed route (`allowed`, `closed`, `denied`). */
  readonly route?: string;
  /** The upstream's status, for the `closed` event of a route request that got an answer. */
  readonly status?: number;
  /** Milliseconds from the route request's head to its end, for its `closed` event. */
  readonly durationMs?: number;
}

type Cidr = { readonly family: 4 | 6; readonly bits: bigint; readonly prefix: number };

function parseAddress(text: string): { family: 4 | 6; bits: bigint } | undefined {
  const family = isIP(text);
  if (family === 4) {
    return { family, bits: text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n) };
  }
  if (family !== 6) return undefined;
  let address = text.toLowerCase();
  const zone = address.indexOf("%");
  if (zone >= 0) address = address.slice(0, zone);
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) becomes two groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/u.exec(address);
  if (tail) {
    const v4 = parseAddress(tail[1])!.bits;
    address = address.slice(0, -tail[1].length) + `${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = rest !== undefined && rest !== "" ? rest.split(":") : [];
  const groups = rest === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return { family, bits: groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n) };
}

function parseCidr(text: string): Cidr | undefined {
  const [address, prefixText] = text.split("/");
  const parsed = parseAddress(address);
  if (!parsed) return undefined;
  const width = parsed.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width) return undefined;
  return { family: parsed.family, bits: parsed.bits, prefix };
}

/**
 * The parsed ranges of a list of the configuration (`addresses`, `hostAddresses`), parsed once
 * per list: the configuration is fixed for the proxy's life, so no check parses again.
 */
const RANGES = new WeakMap<readonly string[], readonly Cidr[]>();
function ranges(list: readonly string[]): readonly Cidr[] {
  let parsed = RANGES.get(list);
  if (!parsed) {
    parsed = list.flatMap((text) => parseCidr(text) ?? []);
    RANGES.set(list, parsed);
  }
  return parsed;
}

function inCidr(address: { family: 4 | 6; bits: bigint }, cidr: Cidr): boolean {
  if (address.family !== cidr.family) return false;
  const width = BigInt(cidr.family === 4 ? 32 : 128);
  const shift = width - BigInt(cidr.prefix);
  return (address.bits >> shift) === (cidr.bits >> shift);
}

/**
 * Ranges that are never a public destination (IANA special-purpose registries, IPv4 and
 * IPv6). Hand-written rather than `net.BlockList` because this program must run on any JS
 * runtime an image brings, and not every runtime's `node:net` has `BlockList`.
 */
const NON_PUBLIC: readonly Cidr[] = [
  "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
  "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
  "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
  "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
  "100:0:0:1::/64", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16",
  "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
].map((text) => parseCidr(text)!);

/** Loopback ranges, named apart in a refusal (IPv4 `127.0.0.0/8`, IPv6 `::1`, and both mapped). */
const LOOPBACK: readonly Cidr[] = ["127.0.0.0/8", "::1/128", "::ffff:127.0.0.0/104"].map((text) => parseCidr(text)!);

/**
 * Why `address` may not be connected to, or `undefined` when it may: public unicast, or
 * inside an explicitly allowed range. A loopback address is reported as such ("not a public
 * address (loopback)"), other non-public ones as "not a public address (private, link-local or
 * reserved)", and the host's own public addresses as "one of the host's own addresses".
 */
export function addressDefect(address: string, config: Pick<EgressProxyConfig, "addresses" | "hostAddresses">): string | undefined {
  const parsed = parseAddress(address);
  if (!parsed) return `${address} is not an IP address`;
  if (ranges(config.addresses).some((cidr) => inCidr(parsed, cidr))) return undefined;
  if (LOOPBACK.some((cidr) => inCidr(parsed, cidr))) return `${address} is not a public address (loopback)`;
  if (NON_PUBLIC.some((cidr) => inCidr(parsed, cidr))) return `${address} is not a public address (private, link-local or reserved)`;
  if (ranges(config.hostAddresses).some((cidr) => inCidr(parsed, cidr))) {
    return `${address} is one of the host's own addresses`;
  }
  return undefined;
}

/**
 * Whether `host:port` is on the allowlist: an exact name, a `*.suffix` wildcard (subdomains
 * only), either with an optional `:port`. Names compare case-insensitively, without a
 * trailing dot.
 */
export function hostAllowed(host: string, port: number, hosts: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/u, "");
  return hosts.some((entry) => {
    const at = entry.lastIndexOf(":");
    const pattern = (at > 0 && !entry.includes("]") && /^\d+$/u.test(entry.slice(at + 1)) ? entry.slice(0, at) : entry).toLowerCase();
    const entryPort = pattern === entry.toLowerCase() ? undefined : Number(entry.slice(at + 1));
    if (entryPort !== undefined && entryPort !== port) return false;
    if (pattern.startsWith("*.")) return name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1;
    return name === pattern;
  });
}

/** Split `host:port` (`[v6]:port` too). */
function splitAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]+)):(\d{1,5})$/u.exec(authority);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: match[1] ?? match[2], port };
}

/** A name lookup: every address `host` resolves to, in the resolver's order. */
export type LookupAll = (host: string) => Promise<readonly string[]>;

/** The runtime's resolver (`getaddrinfo` on Node), every answer in its own order. */
const systemLookup: LookupAll = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Decide on `host:port`: the address to connect to, or why not. A name lookup that has not
 * answered within `headersTimeoutMs` is given up ("does not resolve within N ms"): the
 * resolver has no bound of its own, and the request's setup is bounded like its head.
 *
 * @param resolveName the resolver (the tests pass a scripted one)
 */
export async function decide(
  host: string,
  port: number,
  config: EgressProxyConfig,
  resolveName: LookupAll = systemLookup,
): Promise<{ address: string } | { denied: string }> {
  const literal = isIP(host) !== 0;
  if (literal) {
    const parsed = parseAddress(host);
    const allowedByAddress = parsed !== undefined && ranges(config.addresses).some((cidr) => inCidr(parsed, cidr));
    if (!allowedByAddress && !hostAllowed(host, port, config.hosts)) return { denied: `${host} is not on the allowlist` };
    const defect = addressDefect(host, config);
    return defect ? { denied: defect } : { address: host };
  }
  if (!hostAllowed(host, port, config.hosts)) return { denied: `${host}:${port} is not on the allowlist` };
  return await checkedAddress(host, config, resolveName);
}

/**
 * The address to connect to for the name `host`, or why not: its fixed answers (`resolve`) or
 * the resolver's (given up after `headersTimeoutMs`), every one of them acceptable to
 * {@linkcode addressDefect}. The allowlist is not consulted (a route's upstream is allowed by
 * its route).
 */
export async function checkedAddress(
  host: string,
  config: EgressProxyConfig,
  resolveName: LookupAll = systemLookup,
): Promise<{ address: string } | { denied: string }> {
  let addresses: readonly string[];
  const key = host.toLowerCase().replace(/\.$/u, "");
  // Own keys only: a listed name such as `constructor` must not find `Object.prototype`'s.
  const fixed = Object.hasOwn(config.resolve, key) ? config.resolve[key] : undefined;
  if (fixed) addresses = fixed;
  else {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, config.headersTimeoutMs, undefined)));
    try {
      const answer = await Promise.race([resolveName(host), late]);
      if (answer === undefined) return { denied: `${host} does not resolve within ${config.headersTimeoutMs} ms` };
      addresses = answer;
    } catch (error) {
      return { denied: `${host} does not resolve (${(error as Error).message})` };
    } finally {
      clearTimeout(timer);
    }
  }
  if (addresses.length === 0) return { denied: `${host} resolves to no address` };
  // Every answer must be acceptable: a name that also points inside is refused as a whole.
  for (const address of addresses) {
    const defect = addressDefect(address, config);
    if (defect) return { denied: `${host} resolves to ${defect}` };
  }
  return { address: addresses[0] };
}

/** Longest host name decided on or reported: a DNS name has at most 253 characters (RFC 1035 §2.3.4). */
const MAX_HOST_LENGTH = 253;
/**
 * Stream high-water mark of both sockets of a tunnel (the guest's and the upstream's), bytes:
 * 16 KiB instead of the runtime's default (64 KiB on Node ≥ 22). A socket stops reading once
 * its readable side holds this much, and a relay pauses its source once the other side's
 * write queue holds this much, so a tunnel whose far end does not read holds about this much
 * per direction in the proxy (plus one read of the kernel's), not four times as much. Most
 * of the proxy's memory under busy tunnels is read buffers waiting for a garbage collection,
 * which this does not change: measured in the proxy container, 127 busy tunnels peaked at
 * 80 to 94 MiB either way (see `MAX_EGRESS_CONNECTIONS`).
 */
const SOCKET_HIGH_WATER_MARK = 16_384;
/** Largest request head node:http parses (its default `maxHeaderSize`), bytes. */
const MAX_HEAD_BYTES = 16_384;
/** How long a refused socket may linger after its answer before it is destroyed. */
const REFUSED_LINGER_MS = 2_000;
/** Request headers that concern the hop to the proxy and are not forwarded (RFC 9110 §7.6.1). */
const HOP_HEADERS = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"];

/**
 * Longest `reason` an event carries, characters: a reason may quote what the guest sent (a
 * URL's scheme, a request target), and an event line must stay far below the controller's
 * line bound (16 KiB, `MAX_EGRESS_LINE_LENGTH`) and its schema's 4,096-character reason, or a
 * guest could end the host's reading of every later decision with one request.
 */
export const MAX_REASON_LENGTH = 512;

/** `event` with its host and reason cut to their bounds (`…` marks a cut). */
function bounded(event: EgressEvent): EgressEvent {
  const reason = event.reason !== undefined && event.reason.length > MAX_REASON_LENGTH ? `${event.reason.slice(0, MAX_REASON_LENGTH)}…` : event.reason;
  return { ...event, host: shown(event.host), ...(reason === undefined ? {} : { reason }) };
}

/**
 * Fields that frame a request or name its target. A request whose `Connection` header names
 * one is refused: stripping it as hop-by-hop would change how the upstream reads the body
 * (`Connection: content-length` would turn the body into a second request).
 */
const FRAMING_HEADERS = new Set(["content-length", "transfer-encoding", "host"]);

/**
 * Why a request with a body cannot be forwarded as framed, or `undefined`: a `Connection` field
 * that names a framing field (`400`), or a `Transfer-Encoding` other than `chunked` alone
 * (`501`: RFC 9112 §6.1, chunked is last, and a server answers a coding it does not understand
 * with 501; node:http would read such a body to the connection's end, or stop at a parse error
 * once the request is on its way).
 */
function framingDefect(request: IncomingMessage): { status: 400 | 501; why: string } | undefined {
  const framing = connectionNames(request.headers).find((name) => FRAMING_HEADERS.has(name));
  if (framing !== undefined) return { status: 400, why: `the Connection field names ${framing}, which frames the request: remove it from Connection` };
  const coding = request.headers["transfer-encoding"];
  if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") {
    return {
      status: 501,
      why: `the Transfer-Encoding field is "${shown(coding)}", not chunked alone, the only transfer coding the proxy frames a request body by: send it with Content-Length or Transfer-Encoding: chunked`,
    };
  }
  return undefined;
}

/** The field names a `Connection` header lists, lower-cased (RFC 9110 §7.6.1). */
function connectionNames(headers: IncomingMessage["headers"]): string[] {
  return String(headers.connection ?? "").split(",").map((name) => name.trim().toLowerCase()).filter((name) => name !== "");
}

/**
 * `headers` without the hop-by-hop ones: {@linkcode HOP_HEADERS} and every field the
 * `Connection` header names (`Connection: close, X-Secret` drops `x-secret`; RFC 9110 §7.6.1).
 */
function endToEnd(headers: IncomingMessage["headers"]): IncomingMessage["headers"] {
  const kept = { ...headers };
  for (const name of [...HOP_HEADERS, ...connectionNames(headers)]) delete kept[name];
  return kept;
}

/**
 * Answer on a socket that is not proxied and close it for good: the guest's further bytes
 * are read and dropped, and the socket is destroyed once it closes or after
 * {@linkcode REFUSED_LINGER_MS}, so a guest that keeps its side open holds no connection slot.
 */
function refuse(socket: Socket, answer: string): void {
  socket.end(answer);
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  socket.once("close", () => clearTimeout(timer));
}

/** A plain-text answer written on a raw socket (`status` is "403 Forbidden" and the like). */
function rawAnswer(status: string, text: string): string {
  return `HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\negress proxy: ${text}\n`;
}

/**
 * A plain-text answer through node:http; `connection: close`, so one connection carries one
 * request. Never throws: when an answer has begun already (or cannot be written), the
 * connection is destroyed instead, which is all a guest can be told then.
 */
function plain(response: ServerResponse, status: number, text: string): void {
  try {
    if (response.headersSent) return void response.destroy();
    response.writeHead(status, { "content-type": "text/plain", connection: "close" }).end(`egress proxy: ${text}\n`);
  } catch {
    response.destroy();
  }
}

/** A host name cut to {@linkcode MAX_HOST_LENGTH} characters for an event. */
function shown(host: string): string {
  return host.length > MAX_HOST_LENGTH ? `${host.slice(0, MAX_HOST_LENGTH)}…` : host;
}

/** What a relay reads from (a socket or a message), structurally. */
interface Source {
  on(event: "data", listener: (chunk: Buffer) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** What a relay writes to (a socket, a request or a response), structurally. */
interface Sink {
  write(chunk: Buffer): boolean;
  on(event: "drain", listener: () => void): unknown;
}

/** Where a forwarded request goes: the host and port its events name, the checked address, whether over TLS, and its route. */
interface Via {
  readonly host: string;
  readonly port: number;
  readonly address: string;
  readonly tls: boolean;
  readonly route?: string;
}

/**
 * Why a route request's path may not be forwarded, or `undefined`: a dot segment (`.`, `..`),
 * an encoded dot, slash or backslash, or a backslash. Refused rather than normalised, so what
 * is forwarded is exactly what the guest sent under the route's prefix.
 */
export function routePathDefect(path: string): string | undefined {
  if (/%2e|%2f|%5c|\\/iu.test(path)) return "route paths must not contain an encoded dot, slash or backslash, or a backslash";
  if (path.split("/").some((segment) => segment === "." || segment === "..")) return "route paths must not contain dot segments (. or ..)";
  return undefined;
}

/**
 * The route and upstream path of a request target's path-and-query (`/<name>/rest?query`), or
 * why none: `status` 400 for a path {@linkcode routePathDefect} refuses, 404 for no route of
 * that name.
 */
export function matchRoute(
  pathAndQuery: string,
  routes: readonly EgressRoute[],
): { route: EgressRoute; path: string } | { status: 400 | 404; reason: string } {
  const at = pathAndQuery.indexOf("?");
  const path = at < 0 ? pathAndQuery : pathAndQuery.slice(0, at);
  const query = at < 0 ? "" : pathAndQuery.slice(at);
  const defect = routePathDefect(path);
  if (defect) return { status: 400, reason: defect };
  const match = /^\/([^/]+)(\/.*)?$/u.exec(path);
  const route = match ? routes.find((entry) => entry.name === match[1]) : undefined;
  if (!match || !route) {
    return { status: 404, reason: `no route for ${shown(path)}: the routes are ${routes.map((entry) => `/${entry.name}/`).join(", ")}` };
  }
  return { route, path: `${route.basePath}${match[2] ?? "/"}${query}` };
}

/** The runtime's view of the system trust store, or none where it has no such call (or it fails). */
function systemCertificates(): readonly string[] {
  const read = (tls as { getCACertificates?: (type: "system") => string[] }).getCACertificates;
  try {
    return typeof read === "function" ? read("system") : [];
  } catch {
    return [];
  }
}

/** An address as a socket reports it, without the IPv4-mapped prefix (`::ffff:10.0.0.2` → `10.0.0.2`). */
function plainAddress(address: string | undefined): string {
  return (address ?? "").replace(/^::ffff:(?=\d+\.)/iu, "");
}

/** Bytes of one connection so far, by direction (as its `closed` event reports them). */
type Meter = { bytesOut: number; bytesIn: number };

/**
 * Call `idle` once `socket` has made no progress for `ms`: no byte read, none written and none
 * of its write queue drained; checked every quarter of `ms`, so it runs between `ms` and 1.25
 * times that after the last byte. A timer of our own rather than the socket's timeout, which
 * on Bun never runs while writes are pending (a guest that does not read what it is sent).
 * Stops with the socket's close.
 */
function watchIdle(socket: Socket, ms: number, idle: () => void): void {
  const progress = () => `${socket.bytesRead}/${socket.bytesWritten}/${socket.writableLength}`;
  let seen = progress();
  let since = performance.now();
  const timer = setInterval(() => {
    const now = progress();
    if (now !== seen) {
      seen = now;
      since = performance.now();
    } else if (performance.now() - since >= ms) {
      clearInterval(timer);
      idle();
    }
  }, Math.max(1, Math.floor(ms / 4)));
  socket.once("close", () => clearInterval(timer));
}

/** A running proxy. */
export interface EgressProxy {
  /** The listening TCP server (it accepts, counts and times each connection, then hands it to node:http). */
  readonly server: TcpServer;
  /** The bound port. */
  readonly port: number;
  /** Guest connections the proxy holds now: admitted ones plus refused ones still lingering. */
  readonly connections: number;
  /** Stop listening and end every connection. */
  close(): Promise<void>;
}

/**
 * Start the proxy.
 *
 * Connections are accepted by a `node:net` server of its own, counted and timed there, and
 * only then handed to a `node:http` server (`emit("connection", socket)`) that parses the
 * request head: so `maxConnections` counts TCP connections (silent ones too), and a
 * connection that sends no complete head within `headersTimeoutMs` is closed, the same way
 * on every runtime (Node, Deno and Bun all parse a socket handed over like that; ending a
 * socket from inside node:http's own `connection` event did not close it on Bun). Past
 * `maxConnections`, a connection is answered `503` at once and lingers at most
 * {@linkcode REFUSED_LINGER_MS}; when `maxConnections` refused ones linger already, the next
 * is closed without an answer. Every answer says `connection: close`: one connection
 * carries one request.
 *
 * @param config what to enforce
 * @param sink receives each decision, its host and reason bounded (the program writes them to
 *   stdout as JSON lines)
 * @param secrets the values of the secrets the routes name (the program reads them from its stdin)
 * @param routeAddress the proxy's address on the sandbox's internal network, the only local
 *   address whose connections the routes serve (the program reads it from its stdin; the
 *   egress bridge's side never gets a credential); `undefined` serves them on every address
 */
export function startEgressProxy(
  config: EgressProxyConfig,
  sink: (event: EgressEvent) => void,
  secrets: Readonly<Record<string, string>> = {},
  routeAddress?: string,
): Promise<EgressProxy> {
  /** Every event goes out bounded (host {@linkcode MAX_HOST_LENGTH}, reason {@linkcode MAX_REASON_LENGTH}). */
  const report = (event: EgressEvent) => sink(bounded(event));
  /** Accepted connections, counted against `maxConnections`. */
  const admitted = new Set<Socket>();
  /** Connections refused for the count, answered and lingering (at most `maxConnections`). */
  const refusing = new Set<Socket>();
  /** Admitted connections whose request head has not arrived yet, with their head timer. */
  const waiting = new Map<Socket, ReturnType<typeof setTimeout>>();
  const deny = (host: string, port: number, reason: string) => report({ event: "denied", host, port, reason });
  const tooBig = `more than ${config.maxBytesPerConnection} bytes`;
  const over = (bytes: number) => config.maxBytesPerConnection > 0 && bytes > config.maxBytesPerConnection;

  /**
   * Relay `from`'s chunks to `to` with backpressure, counting each in `meter[direction]`; the
   * chunk that takes both directions together past `maxBytesPerConnection` is not written,
   * `cut` runs instead. Returns the relay of one chunk (for bytes that arrived before it).
   */
  function relay(from: Source, to: Sink, meter: Meter, direction: keyof Meter, cut: (why: string) => void): (chunk: Buffer) => void {
    const pass = (chunk: Buffer) => {
      meter[direction] += chunk.length;
      if (over(meter.bytesOut + meter.bytesIn)) return cut(tooBig);
      if (!to.write(chunk)) from.pause();
    };
    from.on("data", pass);
    to.on("drain", () => from.resume());
    return pass;
  }

  /**
   * Bound the time to `socket`'s next complete request head by `headersTimeoutMs`: `408`, a
   * `denied` event and the end of the connection when it passes (the timer ends with the socket).
   */
  function headTimer(socket: Socket): void {
    const timer = setTimeout(() => {
      waiting.delete(socket);
      deny("", 0, `no complete request head within ${config.headersTimeoutMs} ms`);
      refuse(socket, rawAnswer("408 Request Timeout", `no complete request head within ${config.headersTimeoutMs} ms`));
    }, config.headersTimeoutMs);
    waiting.set(socket, timer);
    socket.once("close", () => {
      clearTimeout(timer);
      if (waiting.get(socket) === timer) waiting.delete(socket);
    });
  }

  /** Admitted connections whose first request head arrived (a second head on one is pipelined). */
  const served = new WeakSet<Socket>();

  /**
   * The first complete request head of an admitted connection: stop its head timer. A second
   * head on a served connection (pipelined) gets a `denied` event and no answer: the first
   * answer says `connection: close` and the connection ends after it.
   */
  function headArrived(socket: Socket, request: IncomingMessage): boolean {
    const timer = waiting.get(socket);
    if (timer === undefined) {
      if (served.has(socket)) deny("", 0, `pipelined request (${request.method} after the first request): one connection carries one request`);
      return false; // timed out (being refused) or a pipelined second head
    }
    clearTimeout(timer);
    waiting.delete(socket);
    served.add(socket);
    return true;
  }

  /**
   * Join a guest socket and its tunnel's upstream with the idle bound (watched on the guest's
   * socket, which every byte of the tunnel passes) and the byte bound; report when it ends.
   * `head` (bytes the guest sent in the same packet as its CONNECT) is counted and forwarded
   * like every later byte.
   */
  function join(client: Socket, upstream: Socket, head: Buffer, host: string, port: number, address: string): void {
    const meter: Meter = { bytesOut: 0, bytesIn: 0 };
    let reason = "ended";
    const end = (why: string) => {
      if (reason === "ended") reason = why;
      client.destroy();
      upstream.destroy();
    };
    let reported = false;
    const closed = () => {
      if (reported || !client.destroyed || !upstream.destroyed) return;
      reported = true;
      report({ event: "closed", host, port, address, reason, ...meter });
    };
    client.on("close", () => { upstream.destroy(); closed(); });
    upstream.on("close", () => { client.destroy(); closed(); });
    const fromGuest = relay(client, upstream, meter, "bytesOut", end);
    relay(upstream, client, meter, "bytesIn", end);
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
    watchIdle(client, config.idleTimeoutMs, () => end(`idle for ${config.idleTimeoutMs} ms`));
    for (const socket of [client, upstream]) socket.on("error", () => end("connection error"));
    if (head.length > 0) fromGuest(head);
  }

  /**
   * Forward one absolute-form request to `address` on its own upstream connection, with the
   * idle and byte bounds (request body and response body, both directions together); report
   * `closed` once the answer is done or cut.
   *
   * A reply that cannot be forwarded as it is — a status outside 200 … 599 (RFC 9110 §15: a
   * recipient treats one as a 5xx), a `101` (no forwarded request asks for an upgrade: the
   * `Upgrade` field is hop-by-hop), a head the parser or node:http refuses — is a malformed
   * reply: a `denied` event, `502` (or the connection cut, when the answer had begun) and the
   * upstream destroyed; its `closed` event gives the same reason.
   *
   * The idle bound watches the guest's socket (every byte either way passes it), so it also
   * holds once the upstream is gone: an answer the upstream sent in full may still wait for a
   * guest that does not read it.
   */
  function forward(request: IncomingMessage, response: ServerResponse, upstream: ClientRequest, via: Via): void {
    const { host, port, address } = via;
    const startedAt = performance.now();
    const client = request.socket;
    const meter: Meter = { bytesOut: 0, bytesIn: 0 };
    let reason = "ended";
    let status: number | undefined;
    /** A route's fields of its `closed` event: name, the upstream's status, the duration. */
    const routeFields = () =>
      via.route === undefined
        ? {}
        : { route: via.route, ...(status === undefined ? {} : { status }), durationMs: Math.round(performance.now() - startedAt) };
    const cut = (why: string) => {
      if (reason === "ended") reason = why;
      upstream.destroy();
      client.destroy();
    };
    const malformed = (why: string) => {
      if (reason !== "ended") return;
      reason = `upstream sent a malformed reply: ${why}`;
      report({ event: "denied", host, port, reason, ...(via.route === undefined ? {} : { route: via.route }) });
      upstream.destroy();
      plain(response, 502, reason);
    };
    let reported = false;
    response.once("close", () => {
      upstream.destroy();
      if (reported) return;
      reported = true;
      report({ event: "closed", host, port, address, reason, ...meter, ...routeFields() });
    });
    watchIdle(client, config.idleTimeoutMs, () => cut(`idle for ${config.idleTimeoutMs} ms`));
    request.on("error", () => cut("connection error"));
    response.on("error", () => cut("connection error"));
    const upgrade = "101 Switching Protocols to a request that asked for no upgrade";
    const setStatus = (value: number) => (status = value);
    upstream.on("upgrade", (_answer: IncomingMessage, socket: Socket) => {
      socket.destroy();
      malformed(upgrade);
    });
    upstream.on("response", (answer: IncomingMessage) => {
      answer.on("error", () => cut("connection error"));
      if (reason !== "ended") return void answer.destroy(); // answered already
      const status = answer.statusCode ?? 0;
      if (status === 101) return malformed(upgrade);
      if (!(status >= 200 && status <= 599)) return malformed(`status ${status} is not a final status (200 to 599)`);
      setStatus(status);
      // A body framed by a coding other than chunked alone runs to the close, and the proxy's
      // own chunking of it would not match the field it passed on.
      const coding = answer.headers["transfer-encoding"];
      if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") {
        return malformed(`its Transfer-Encoding is "${shown(coding)}", not chunked alone`);
      }
      try {
        response.writeHead(status, { ...endToEnd(answer.headers), connection: "close" });
      } catch (error) {
        return malformed(`its head cannot be forwarded (${(error as Error).message})`);
      }
      relay(answer, response, meter, "bytesIn", cut);
      answer.on("end", () => response.end());
    });
    relay(request, upstream, meter, "bytesOut", cut);
    request.on("end", () => upstream.end());
    // The connect is bounded by headersTimeoutMs (a timer of its own: Bun's socket timeout does
    // not run while connecting); the answer's head ends the bound where the socket's connect
    // is not reported.
    const connectTimer = setTimeout(() => upstream.destroy(new Error(`no connection to ${address}:${port} within ${config.headersTimeoutMs} ms`)), config.headersTimeoutMs);
    const connected = () => clearTimeout(connectTimer);
    // Over TLS the handshake is part of the connect (its verification too).
    upstream.once("socket", (socket: Socket) => socket.once(via.tls ? "secureConnect" : "connect", connected));
    upstream.once("response", connected);
    upstream.once("close", () => {
      connected();
      // Closed with neither an answer nor an error (an upgrade a runtime dropped) while the guest
      // still waits: answered all the same.
      if (reason === "ended" && !response.headersSent && !client.destroyed) malformed("the connection closed without an answer");
    });
    upstream.on("error", (error: Error & { code?: string }) => {
      if (reason !== "ended") return; // cut on purpose, or refused already
      // The parser's refusals (llhttp's codes on every runtime): a malformed reply.
      if (error.code?.startsWith("HPE_")) return malformed(`${error.message.replace(/^Parse Error: /u, "")} (${error.code})`);
      reason = `upstream failed: ${error.message}`;
      plain(response, 502, reason);
    });
  }

  /**
   * Every certificate trusted for a route's upstream: the proxy image's own store (OpenSSL's
   * default paths, read by `tls.getCACertificates("system")`, Node ≥ 23.10; none when the
   * image has none), Node's bundled Mozilla roots, and the configured ones. Read once, and
   * only with routes.
   */
  const trusted = config.routes.length === 0 ? [] : [...systemCertificates(), ...tls.rootCertificates, ...config.upstreamCaCertificates];
  for (const route of config.routes) {
    for (const [name, value] of Object.entries(route.headers)) {
      if (typeof secrets[value.secret] !== "string") return Promise.reject(new Error(`route ${route.name} header ${name} names the secret ${value.secret}, which was not given`));
    }
  }

  /** Whether `host:port` is the proxy itself as `socket`'s guest reached it (its address on the guest's network and its port). */
  const isSelf = (host: string, port: number, socket: Socket) =>
    config.routes.length > 0 && port === (listener.address() as { port: number } | null)?.port && plainAddress(host) === plainAddress(socket.localAddress);

  /**
   * Serve one request of a credentialed route: `pathAndQuery` exactly as the guest sent it
   * (`/<name>/rest?query`), forwarded to the route's upstream only, over TLS the proxy verifies
   * (SNI and certificate name: the route's host), with the route's headers set and any
   * incoming field of the same name dropped. Redirects are the guest's to follow: the answer
   * is passed on as it is.
   */
  function serveRoute(request: IncomingMessage, response: ServerResponse, pathAndQuery: string): void {
    const matched = matchRoute(pathAndQuery, config.routes);
    if ("reason" in matched) {
      deny("", 0, matched.reason);
      return refuseRequest(response, matched.status, matched.reason);
    }
    const { route, path } = matched;
    const denyRoute = (reason: string) => report({ event: "denied", host: route.host, port: route.port, reason, route: route.name });
    if (routeAddress !== undefined && plainAddress(request.socket.localAddress) !== routeAddress) {
      const why = "routes are served only to the sandbox's guest (the proxy's address on its internal network)";
      denyRoute(why);
      return refuseRequest(response, 403, why);
    }
    const framing = framingDefect(request);
    if (framing) {
      denyRoute(framing.why);
      return refuseRequest(response, framing.status, framing.why);
    }
    checkedAddress(route.host, config).then((verdict) => {
      if ("denied" in verdict) {
        denyRoute(verdict.denied);
        return refuseRequest(response, 403, `denied: ${verdict.denied}`);
      }
      if (request.socket.destroyed) return; // left during the lookup
      report({ event: "allowed", host: route.host, port: route.port, address: verdict.address, route: route.name });
      const headers = endToEnd(request.headers);
      delete headers.host;
      for (const [name, value] of Object.entries(route.headers)) headers[name] = `${value.prefix}${secrets[value.secret]}`;
      const upstream = httpsRequest({
        host: verdict.address,
        port: route.port,
        servername: route.host,
        ca: trusted,
        method: request.method,
        path,
        headers: { ...headers, host: route.port === 443 ? route.host : `${route.host}:${route.port}`, connection: "close" },
        setHost: false,
        agent: false,
      });
      forward(request, response, upstream, { host: route.host, port: route.port, address: verdict.address, tls: true, route: route.name });
    }).catch(() => request.socket.destroy()); // never an unhandled rejection: it would end the proxy
  }

  /**
   * A `CONNECT` to the proxy's own address and port (a client that sends even an `http://`
   * base URL through `HTTPS_PROXY`): the tunnel ends here, at the routes, never at an upstream;
   * the bytes inside are served as requests to the routes, with the head bound again.
   */
  function serveSelfTunnel(client: Socket, head: Buffer): void {
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    headTimer(client);
    if (head.length > 0) client.unshift(head);
    http.emit("connection", client);
  }

  /** Connections whose request the proxy answered with a refusal of its own (see `clientError`). */
  const refusedRequests = new WeakSet<Socket>();
  /** Answer a request that is not forwarded: the connection ends after the answer even if its body does not parse. */
  const refuseRequest = (response: ServerResponse, status: number, text: string) => {
    refusedRequests.add(response.socket as Socket);
    plain(response, status, text);
  };

  const http: HttpServer = createHttpServer({ headersTimeout: 0, requestTimeout: 0, maxHeaderSize: MAX_HEAD_BYTES }, (request: IncomingMessage, response: ServerResponse) => {
    if (!headArrived(request.socket, request)) return; // a late head on a refused socket, or a pipelined one: never answered
    // Absolute-form HTTP: `GET http://host[:port]/path`.
    let target: URL;
    try {
      target = new URL(request.url ?? "");
    } catch {
      // Origin-form (`GET /path`): a route's, when there are routes.
      if (config.routes.length > 0 && (request.url ?? "").startsWith("/")) return serveRoute(request, response, request.url ?? "");
      // Origin-form without routes, and asterisk-form (`OPTIONS *`).
      deny("", 0, `not an absolute-form request (${request.method} ${shown(request.url ?? "")}): only absolute-form http:// requests and CONNECT are proxied`);
      return refuseRequest(response, 400, "only absolute-form http:// requests and CONNECT are proxied");
    }
    if (target.protocol !== "http:") {
      const scheme = shown(target.protocol);
      deny(shown(target.hostname), Number(target.port || 0), `${scheme} URLs are not proxied as requests: use CONNECT (https) or http://`);
      return refuseRequest(response, 400, `${scheme} URLs are not proxied as requests: use CONNECT for https`);
    }
    const host = target.hostname.replace(/^\[|\]$/gu, "");
    const port = Number(target.port || 80);
    // Absolute-form to the proxy itself: a route's (its path as sent, not as the URL parser normalised it).
    if (isSelf(host, port, request.socket)) return serveRoute(request, response, (request.url ?? "").replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/iu, "") || "/");
    if (host.length > MAX_HOST_LENGTH) {
      deny(shown(host), port, `host name longer than ${MAX_HOST_LENGTH} characters`);
      return refuseRequest(response, 400, `host name longer than ${MAX_HOST_LENGTH} characters`);
    }
    const framing = framingDefect(request);
    if (framing) {
      deny(host, port, framing.why);
      return refuseRequest(response, framing.status, framing.why);
    }
    decide(host, port, config).then((verdict) => {
      if ("denied" in verdict) {
        deny(host, port, verdict.denied);
        return refuseRequest(response, 403, `denied: ${verdict.denied}`);
      }
      // The guest left while the name was looked up: nothing is forwarded (an upstream opened
      // now would outlive its slot, which the guest's close already freed).
      if (request.socket.destroyed) return;
      report({ event: "allowed", host, port, address: verdict.address });
      const upstream = httpRequest({
        host: verdict.address,
        port,
        method: request.method,
        path: `${target.pathname}${target.search}`,
        headers: { ...endToEnd(request.headers), host: target.host, connection: "close" },
        setHost: false,
        agent: false,
      });
      forward(request, response, upstream, { host, port, address: verdict.address, tls: false });
    }).catch(() => request.socket.destroy()); // never an unhandled rejection: it would end the proxy
  });
  // An Expect other than 100-continue (node:http answers 100-continue itself): refused with
  // an event, and the connection ends after the answer, as for every refusal.
  http.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    if (!headArrived(request.socket, request)) return;
    const why = `the Expect field is "${shown(String(request.headers.expect ?? ""))}", which the proxy does not meet: send the request without it`;
    deny("", 0, why);
    refuseRequest(response, 417, why);
  });
  http.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
    if (!headArrived(client, request)) return void client.destroy();
    const authority = splitAuthority(request.url ?? "");
    if (!authority) {
      deny(shown(request.url ?? ""), 0, "CONNECT needs host:port");
      return refuse(client, rawAnswer("400 Bad Request", "CONNECT needs host:port"));
    }
    const { host, port } = authority;
    if (isSelf(host, port, client)) return serveSelfTunnel(client, head);
    if (host.length > MAX_HOST_LENGTH) {
      deny(shown(host), port, `host name longer than ${MAX_HOST_LENGTH} characters`);
      return refuse(client, rawAnswer("400 Bad Request", `host name longer than ${MAX_HOST_LENGTH} characters`));
    }
    decide(host, port, config).then((verdict) => {
      if ("denied" in verdict) {
        deny(host, port, verdict.denied);
        return refuse(client, rawAnswer("403 Forbidden", `denied: ${verdict.denied}`));
      }
      if (client.destroyed) return; // the guest left while the name was looked up
      // `highWaterMark` reaches the socket's stream options (node:net passes them on), though the
      // connect options' type does not list it; a variable, so no excess-property check.
      const options = { host: verdict.address, port, highWaterMark: SOCKET_HIGH_WATER_MARK };
      const upstream = connect(options);
      // The guest may leave while the upstream connects: the upstream goes with it, at once
      // (join() takes over once connected).
      const guestGone = () => upstream.destroy();
      client.once("close", guestGone);
      let connected = false;
      // The connect has a bound of its own (headersTimeoutMs): the kernel's SYN retries take
      // minutes. A timer of its own, not `setTimeout` on the socket: Bun's does not run while connecting.
      const connectTimer = setTimeout(() => upstream.destroy(new Error(`no answer within ${config.headersTimeoutMs} ms`)), config.headersTimeoutMs);
      upstream.once("close", () => clearTimeout(connectTimer));
      upstream.once("connect", () => {
        connected = true;
        clearTimeout(connectTimer);
        client.off("close", guestGone);
        if (client.destroyed) return void upstream.destroy(); // left during the connect: no tunnel, no event
        report({ event: "allowed", host, port, address: verdict.address });
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        join(client, upstream, head, host, port, verdict.address);
      });
      // Node clears `connecting` before it emits a connect failure, so the flag is our own.
      upstream.once("error", (error) => {
        if (connected) return;
        upstream.destroy();
        deny(host, port, `cannot connect to ${verdict.address}:${port}: ${error.message}`);
        refuse(client, rawAnswer("502 Bad Gateway", "upstream unreachable"));
      });
    }).catch(() => client.destroy()); // never an unhandled rejection: it would end the proxy
  });

  // A request node:http cannot parse (bad framing, TE with CL, two CLs, bare LF, a lower-case
  // method, a head over 16 KiB): answered like node:http's default handler, plus an event.
  http.on("clientError", (error: Error & { code?: string }, socket: Socket) => {
    // The body of a request refused already does not parse: its answer is on its way, then the end.
    if (refusedRequests.has(socket)) return refuse(socket, "");
    const waited = waiting.get(socket);
    if (waited === undefined || socket.destroyed) return void socket.destroy(); // timed out already, or gone
    clearTimeout(waited);
    waiting.delete(socket);
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    const reason = tooLarge ? `request head larger than ${MAX_HEAD_BYTES} bytes` : `malformed request (${error.code ?? error.message})`;
    deny("", 0, reason);
    refuse(socket, tooLarge ? rawAnswer("431 Request Header Fields Too Large", reason) : rawAnswer("400 Bad Request", reason));
  });

  const listener: TcpServer = createTcpServer({ highWaterMark: SOCKET_HIGH_WATER_MARK }, (socket: Socket) => {
    socket.on("error", () => socket.destroy());
    if (admitted.size >= config.maxConnections) {
      deny("", 0, `more than ${config.maxConnections} connections at once`);
      if (refusing.size >= config.maxConnections) return void socket.destroy();
      refusing.add(socket);
      socket.once("close", () => refusing.delete(socket));
      return refuse(socket, rawAnswer("503 Service Unavailable", "too many connections"));
    }
    admitted.add(socket);
    headTimer(socket);
    socket.once("close", () => admitted.delete(socket));
    http.emit("connection", socket);
  });
  return new Promise((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(config.port, () => {
      // An accept that fails later (EMFILE) is an `error` of the server: it must not end the
      // proxy, and the server goes on listening.
      listener.off("error", reject).on("error", () => {});
      const address = listener.address();
      resolve({
        server: listener,
        port: typeof address === "object" && address ? address.port : config.port,
        get connections() {
          return admitted.size + refusing.size;
        },
        close: () =>
          new Promise<void>((done) => {
            listener.close(() => done());
            for (const socket of [...admitted, ...refusing]) socket.destroy();
          }),
      });
    });
  });
}

/**
 * Most bytes of the secrets line read from stdin: 8 MiB, above the most the controller sends
 * (16 routes × 16 headers, each a distinct secret of at most 8,192 ASCII characters, which
 * JSON escapes to at most twice that: about 4.2 MiB).
 */
const MAX_SECRETS_LINE_BYTES = 8 * 1024 * 1024;

/**
 * The routes' secrets and the address they are served on: one JSON line on stdin,
 * `{"secrets":{"<name>":"<value>",…},"routeAddress":"<the proxy's internal address>"}`,
 * written by the controller through the Engine (container attach) and followed by the end of
 * stdin. Never echoed: a line that does not parse is refused without quoting it.
 */
function readSecrets(): Promise<{ secrets: Readonly<Record<string, string>>; routeAddress: string | undefined }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      process.stdin.off("data", onData).off("end", done);
      process.stdin.pause();
      const text = Buffer.concat(chunks).toString("utf8");
      const line = text.slice(0, text.indexOf("\n") < 0 ? text.length : text.indexOf("\n"));
      try {
        const parsed = JSON.parse(line) as { secrets?: unknown; routeAddress?: unknown };
        const secrets = parsed.secrets;
        if (typeof secrets !== "object" || secrets === null || Object.values(secrets).some((value) => typeof value !== "string")) throw new Error("no secrets object");
        if (typeof parsed.routeAddress !== "string") throw new Error("no route address");
        resolve({ secrets: secrets as Record<string, string>, routeAddress: parsed.routeAddress });
      } catch {
        reject(new Error("the secrets line on stdin is not {\"secrets\":{…},\"routeAddress\":\"…\"} JSON"));
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SECRETS_LINE_BYTES) return reject(new Error(`the secrets line on stdin is longer than ${MAX_SECRETS_LINE_BYTES} bytes`));
      chunks.push(chunk);
      if (chunk.includes(10)) done();
    };
    process.stdin.on("data", onData).on("end", done);
  });
}

// Run as the proxy container's program: configuration from the environment, decisions to
// stdout. The controller passes this file's text as `node --input-type=module-typescript -e`
// (no script path: `process.argv[1]` is absent); run as a file, the path must be this one.
const configText = process.env.AGENTCELL_EGRESS_CONFIG;
const script = process.argv[1];
if (configText !== undefined && (script === undefined || import.meta.url.endsWith(script.replace(/^.*\//u, "/")))) {
  const config = JSON.parse(configText) as EgressProxyConfig;
  // The controller lease ends the proxy with SIGTERM (keeper/guards.ts); as PID 1 of its
  // container, node would ignore a signal it has no handler for.
  process.on("SIGTERM", () => process.exit(0));
  (config.routes.length > 0 ? readSecrets() : Promise.resolve({ secrets: {}, routeAddress: undefined })).then(({ secrets, routeAddress }) =>
    startEgressProxy(config, (event) => process.stdout.write(`${JSON.stringify(event)}\n`), secrets, routeAddress)
  ).then(
    (proxy) => process.stdout.write(`${JSON.stringify({ event: "listening", port: proxy.port })}\n`),
    (error) => {
      process.stderr.write(`egress proxy: cannot listen: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
