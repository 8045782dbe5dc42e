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
 * Bounds: concurrent connections, idle time per connection, bytes per connection (optional),
 * request head size (16 KiB, node:http's default). Each decision is one JSON line on stdout
 * (`{"event":"allowed"|"denied"|"closed",…}`), read by the controller through the Engine.
 *
 * This file is also imported by the tests and by the controller (for its constants); run as
 * a program it reads its configuration from the `AGENTCELL_EGRESS_CONFIG` environment
 * variable (JSON of {@linkcode EgressProxyConfig}), which the controller writes.
 *
 * @module
 */
import { lookup } from "node:dns/promises";
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http";
import { connect, isIP, type Socket } from "node:net";
import process from "node:process";

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
  /** Most connections open at once. */
  readonly maxConnections: number;
  /** A connection with no bytes either way for this long is closed, milliseconds. */
  readonly idleTimeoutMs: number;
  /** Most bytes per connection in both directions together; `0` = unbounded. */
  readonly maxBytesPerConnection: number;
}

/** One decision of the proxy, as written on stdout. */
export interface EgressEvent {
  /** `allowed` (a connection was opened), `denied` (refused), `closed` (an allowed one ended). */
  readonly event: "allowed" | "denied" | "closed";
  /** Requested host (a name or an address literal). */
  readonly host: string;
  /** Requested port. */
  readonly port: number;
  /** The address connected to, for `allowed` and `closed`. */
  readonly address?: string;
  /** Why a request was denied or a connection closed. */
  readonly reason?: string;
  /** Bytes from the guest to the destination, for `closed`. */
  readonly bytesOut?: number;
  /** Bytes from the destination to the guest, for `closed`. */
  readonly bytesIn?: number;
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

/**
 * Why `address` may not be connected to, or `undefined` when it may: public unicast, or
 * inside an explicitly allowed range. The host's own addresses are refused like private ones.
 */
export function addressDefect(address: string, config: Pick<EgressProxyConfig, "addresses" | "hostAddresses">): string | undefined {
  const parsed = parseAddress(address);
  if (!parsed) return `${address} is not an IP address`;
  if (config.addresses.some((allowed) => { const cidr = parseCidr(allowed); return cidr !== undefined && inCidr(parsed, cidr); })) return undefined;
  if (config.hostAddresses.some((own) => { const cidr = parseCidr(own); return cidr !== undefined && inCidr(parsed, cidr); })) {
    return `${address} is one of the host's own addresses`;
  }
  if (NON_PUBLIC.some((cidr) => inCidr(parsed, cidr))) return `${address} is not a public address (loopback, private, link-local or reserved)`;
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

/** Decide on `host:port`: the address to connect to, or why not. */
export async function decide(
  host: string,
  port: number,
  config: EgressProxyConfig,
): Promise<{ address: string } | { denied: string }> {
  const literal = isIP(host) !== 0;
  if (literal) {
    const allowedByAddress = config.addresses.some((allowed) => {
      const cidr = parseCidr(allowed);
      const parsed = parseAddress(host);
      return cidr !== undefined && parsed !== undefined && inCidr(parsed, cidr);
    });
    if (!allowedByAddress && !hostAllowed(host, port, config.hosts)) return { denied: `${host} is not on the allowlist` };
    const defect = addressDefect(host, config);
    return defect ? { denied: defect } : { address: host };
  }
  if (!hostAllowed(host, port, config.hosts)) return { denied: `${host}:${port} is not on the allowlist` };
  let addresses: readonly string[];
  const key = host.toLowerCase().replace(/\.$/u, "");
  // Own keys only: a listed name such as `constructor` must not find `Object.prototype`'s.
  const fixed = Object.hasOwn(config.resolve, key) ? config.resolve[key] : undefined;
  if (fixed) addresses = fixed;
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch (error) {
      return { denied: `${host} does not resolve (${(error as Error).message})` };
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
/** How long a refused CONNECT socket may linger after its answer before it is destroyed. */
const REFUSED_LINGER_MS = 2_000;

/**
 * Answer a CONNECT that is not tunnelled and close the socket for good: the guest's further
 * bytes are read and dropped, and the socket is destroyed once it closes or after
 * {@linkcode REFUSED_LINGER_MS}, so a guest that keeps its side open holds no connection slot.
 */
function refuse(socket: Socket, answer: string): void {
  socket.end(answer);
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  socket.once("close", () => clearTimeout(timer));
}

/** A host name cut to {@linkcode MAX_HOST_LENGTH} characters for an event. */
function shown(host: string): string {
  return host.length > MAX_HOST_LENGTH ? `${host.slice(0, MAX_HOST_LENGTH)}…` : host;
}

/** A running proxy. */
export interface EgressProxy {
  /** The listening server. */
  readonly server: Server;
  /** The bound port. */
  readonly port: number;
  /** Stop listening and end every connection. */
  close(): Promise<void>;
}

/**
 * Start the proxy.
 *
 * @param config what to enforce
 * @param report receives each decision (the program writes them to stdout as JSON lines)
 */
export function startEgressProxy(config: EgressProxyConfig, report: (event: EgressEvent) => void): Promise<EgressProxy> {
  const open = new Set<Socket>();
  const deny = (host: string, port: number, reason: string) => report({ event: "denied", host, port, reason });

  /** Join two sockets with the idle and byte bounds; report when it ends. */
  function join(client: Socket, upstream: Socket, host: string, port: number, address: string): void {
    let bytesOut = 0, bytesIn = 0, reason = "ended";
    const over = () => config.maxBytesPerConnection > 0 && bytesOut + bytesIn > config.maxBytesPerConnection;
    const end = (why: string) => {
      if (reason === "ended") reason = why;
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk: Buffer) => {
      bytesOut += chunk.length;
      if (over()) return end(`more than ${config.maxBytesPerConnection} bytes`);
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on("data", (chunk: Buffer) => {
      bytesIn += chunk.length;
      if (over()) return end(`more than ${config.maxBytesPerConnection} bytes`);
      if (!client.write(chunk)) upstream.pause();
    });
    upstream.on("drain", () => client.resume());
    client.on("drain", () => upstream.resume());
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
    for (const socket of [client, upstream]) {
      socket.setTimeout(config.idleTimeoutMs, () => end(`idle for ${config.idleTimeoutMs} ms`));
      socket.on("error", () => end("connection error"));
    }
    let reported = false;
    const closed = () => {
      if (reported || !client.destroyed || !upstream.destroyed) return;
      reported = true;
      report({ event: "closed", host, port, address, reason, bytesOut, bytesIn });
    };
    client.on("close", () => { upstream.destroy(); closed(); });
    upstream.on("close", () => { client.destroy(); closed(); });
  }

  function admit(socket: Socket, host: string, port: number): boolean {
    if (open.size >= config.maxConnections) {
      deny(host, port, `more than ${config.maxConnections} connections at once`);
      return false;
    }
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    return true;
  }

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    // Absolute-form HTTP: `GET http://host[:port]/path`.
    let target: URL;
    try {
      target = new URL(request.url ?? "");
    } catch {
      response.writeHead(400, { "content-type": "text/plain" }).end("egress proxy: only absolute-form http:// requests and CONNECT are proxied\n");
      return;
    }
    if (target.protocol !== "http:") {
      response.writeHead(400, { "content-type": "text/plain" }).end("egress proxy: use CONNECT for https\n");
      return;
    }
    const host = target.hostname.replace(/^\[|\]$/gu, "");
    const port = Number(target.port || 80);
    if (host.length > MAX_HOST_LENGTH) {
      deny(shown(host), port, `host name longer than ${MAX_HOST_LENGTH} characters`);
      response.writeHead(400, { "content-type": "text/plain" }).end(`egress proxy: host name longer than ${MAX_HOST_LENGTH} characters\n`);
      return;
    }
    if (!admit(request.socket, host, port)) {
      response.writeHead(503, { "content-type": "text/plain" }).end("egress proxy: too many connections\n");
      return;
    }
    decide(host, port, config).then((verdict) => {
      if ("denied" in verdict) {
        deny(host, port, verdict.denied);
        response.writeHead(403, { "content-type": "text/plain" }).end(`egress proxy: denied: ${verdict.denied}\n`);
        return;
      }
      report({ event: "allowed", host, port, address: verdict.address });
      const headers = { ...request.headers };
      delete headers["proxy-connection"];
      delete headers["proxy-authorization"];
      const upstream = httpRequest({
        host: verdict.address,
        port,
        method: request.method,
        path: `${target.pathname}${target.search}`,
        headers: { ...headers, host: target.host },
        setHost: false,
      }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      upstream.setTimeout(config.idleTimeoutMs, () => upstream.destroy(new Error("idle")));
      upstream.on("error", (error) => {
        if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
        response.end(`egress proxy: upstream failed: ${error.message}\n`);
      });
      request.pipe(upstream);
    });
  });
  server.headersTimeout = config.idleTimeoutMs;
  server.requestTimeout = 0;
  server.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
    const authority = splitAuthority(request.url ?? "");
    if (!authority) {
      deny(shown(request.url ?? ""), 0, "CONNECT needs host:port");
      refuse(client, "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\n\r\negress proxy: CONNECT needs host:port\n");
      return;
    }
    const { host, port } = authority;
    if (host.length > MAX_HOST_LENGTH) {
      deny(shown(host), port, `host name longer than ${MAX_HOST_LENGTH} characters`);
      refuse(client, `HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\n\r\negress proxy: host name longer than ${MAX_HOST_LENGTH} characters\n`);
      return;
    }
    if (!admit(client, host, port)) {
      refuse(client, "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\negress proxy: too many connections\n");
      return;
    }
    client.on("error", () => client.destroy());
    decide(host, port, config).then((verdict) => {
      if ("denied" in verdict) {
        deny(host, port, verdict.denied);
        refuse(client, `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\negress proxy: denied: ${verdict.denied}\n`);
        return;
      }
      const upstream = connect({ host: verdict.address, port });
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        report({ event: "allowed", host, port, address: verdict.address });
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.length > 0) upstream.write(head);
        join(client, upstream, host, port, verdict.address);
      });
      // Node clears `connecting` before it emits a connect failure, so the flag is our own.
      upstream.once("error", (error) => {
        if (connected) return;
        upstream.destroy();
        deny(host, port, `cannot connect to ${verdict.address}:${port}: ${error.message}`);
        refuse(client, "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\negress proxy: upstream unreachable\n");
      });
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, () => {
      const address = server.address();
      resolve({
        server,
        port: typeof address === "object" && address ? address.port : config.port,
        close: () =>
          new Promise<void>((done) => {
            for (const socket of open) socket.destroy();
            server.close(() => done());
            server.closeAllConnections?.();
          }),
      });
    });
  });
}

// Run as the proxy container's program: configuration from the environment, decisions to
// stdout. The controller passes this file's text as `node --input-type=module-typescript -e`
// (no script path: `process.argv[1]` is absent); run as a file, the path must be this one.
const configText = process.env.AGENTCELL_EGRESS_CONFIG;
const script = process.argv[1];
if (configText !== undefined && (script === undefined || import.meta.url.endsWith(script.replace(/^.*\//u, "/")))) {
  const config = JSON.parse(configText) as EgressProxyConfig;
  startEgressProxy(config, (event) => process.stdout.write(`${JSON.stringify(event)}\n`)).then(
    (proxy) => process.stdout.write(`${JSON.stringify({ event: "listening", port: proxy.port })}\n`),
    (error) => {
      process.stderr.write(`egress proxy: cannot listen: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
