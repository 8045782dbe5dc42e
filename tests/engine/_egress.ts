// Helpers of the egress allowlist tests. There is no internet here, so the upstreams are
// ours: an HTTP server and a TLS server (a fresh self-signed certificate for tls.test, made
// with the openssl CLI: tests/fixtures/tls_certificate.ts) listening on 0.0.0.0 of the host running the test, plus a UDP socket
// that counts what reaches it. The proxy reaches them through its egress bridge at the
// host's own address (which it refuses unless the policy allows it by address); the guest
// reaches nothing directly. The guest client is a Node script run in the node guest image.
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import type { DockerEgressEvents, EgressEvent } from "../../lib/docker/egress/events.ts";
import { selfSignedCertificate } from "../fixtures/tls_certificate.ts";

/** The host's upstreams. */
export interface Upstreams {
  /** A host address (first non-loopback IPv4 of a non-Docker interface). */
  readonly hostAddress: string;
  /** Port of the HTTP server (answers `upstream <Host header> <path>`). */
  readonly httpPort: number;
  /** Port of the TLS server (answers `tls upstream` to whatever it receives). */
  readonly tlsPort: number;
  /** Port of the UDP counter. */
  readonly udpPort: number;
  /** The CA (the server's self-signed certificate), PEM. */
  readonly caPem: string;
  /** Datagrams the UDP counter received. */
  udpReceived(): number;
  /** TCP connections the HTTP server accepted. */
  httpConnections(): number;
  close(): Promise<void>;
}

/** The first IPv4 address of a host interface that is not loopback and not a Docker bridge. */
export function hostAddress(): string {
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    if (/^(?:lo|br-|docker|veth)/u.test(name)) continue;
    const entry = (entries ?? []).find((candidate) => candidate.family === "IPv4" && !candidate.internal);
    if (entry) return entry.address;
  }
  throw new Error("Cannot run the egress tests: the host has no non-loopback IPv4 address");
}

/** Start the upstreams on 0.0.0.0 (all interfaces). */
export async function startUpstreams(): Promise<Upstreams> {
  const { certPem: caPem, keyPem } = await selfSignedCertificate("tls.test");
  let connections = 0;
  const http: Server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "text/plain", connection: "close" }).end(`upstream ${request.headers.host} ${request.url}`);
  });
  http.on("connection", () => connections++);
  const tls: TlsServer = createTlsServer({ key: keyPem, cert: caPem }, (socket) => {
    socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: close\r\n\r\ntls upstream"));
    socket.on("error", () => {});
  });
  let datagrams = 0;
  const udp: UdpSocket = createSocket("udp4");
  udp.on("message", () => datagrams++);
  http.listen(0, "0.0.0.0");
  tls.listen(0, "0.0.0.0");
  udp.bind(0, "0.0.0.0");
  await Promise.all([once(http, "listening"), once(tls, "listening"), once(udp, "listening")]);
  return {
    hostAddress: hostAddress(),
    httpPort: (http.address() as AddressInfo).port,
    tlsPort: (tls.address() as AddressInfo).port,
    udpPort: udp.address().port,
    caPem,
    udpReceived: () => datagrams,
    httpConnections: () => connections,
    close: async () => {
      http.closeAllConnections();
      await Promise.all([
        new Promise((resolve) => http.close(resolve)),
        new Promise((resolve) => tls.close(resolve)),
        new Promise<void>((resolve) => udp.close(() => resolve())),
      ]);
    },
  };
}

/**
 * A raw TCP upstream on 0.0.0.0 that answers the first bytes of each connection with `reply`
 * (a malformed HTTP reply, say) and keeps the connection open; `close` ends what it holds.
 */
export async function startRawUpstream(reply: string): Promise<{ readonly port: number; close(): Promise<void> }> {
  const held = new Set<Socket>();
  const server = createTcpServer((socket) => {
    held.add(socket);
    socket.on("error", () => {}).on("close", () => held.delete(socket)).once("data", () => socket.write(reply));
  });
  server.listen(0, "0.0.0.0");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The guest client (node), one JSON line per run. Modes:
 *   http <url>                    GET through $HTTP_PROXY (absolute form) → { status, body }
 *   connect <host:port> [tls]     CONNECT through $HTTPS_PROXY → { status, body } (with tls:
 *                                 TLS to servername tls.test, verified with ca.pem, one GET)
 *   tcp <address> <port>          direct TCP → { connected } or { error }
 *   udp <address> <port>          one direct datagram → { sent } or { error }
 *   dns <name>                    the guest's resolver → { address } or { error }
 *   pair <host:port>              two CONNECTs: the first held open without a byte, then the
 *                                 second → { first, second, body, firstEnded } once the
 *                                 proxy ended the first
 *   burst <host:port> <bytes>     a CONNECT and <bytes> zero bytes in one write → { line }
 *                                 (the proxy's status line) once the proxy closed it
 *   flood <count> <wave> <hold>   <count> TCP connections to the proxy that never send a byte,
 *                                 in waves of <wave>, each wave once <hold> stay open →
 *                                 { opened, answered503, bare, other, errors, held,
 *                                 heldReceived } (60 s at most)
 *   silent                        one connection to the proxy that never sends a byte →
 *                                 { line, body } of the proxy's answer once it closed it
 */
export const GUEST_CLIENT = String.raw`
import http from "node:http";
import net from "node:net";
import tls from "node:tls";
import dgram from "node:dgram";
import dns from "node:dns/promises";
import { readFileSync } from "node:fs";
const [mode, a, b] = process.argv.slice(2);
const print = (value) => { process.stdout.write(JSON.stringify(value) + "\n"); process.exit(0); };
setTimeout(() => print({ error: "client timeout" }), mode === "flood" ? 60000 : 8000).unref();
const proxy = new URL(process.env.HTTPS_PROXY ?? "http://0.0.0.0:1");
if (mode === "http") {
  const via = new URL(process.env.HTTP_PROXY);
  const target = new URL(a);
  const request = http.request({ host: via.hostname, port: via.port, path: a, headers: { host: target.host } }, (response) => {
    let body = ""; response.setEncoding("utf8"); response.on("data", (c) => body += c); response.on("end", () => print({ status: response.statusCode, body }));
  });
  request.on("error", (error) => print({ error: error.code ?? error.message }));
  request.end();
} else if (mode === "connect") {
  const request = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: a });
  request.on("connect", (response, socket, head) => {
    if (response.statusCode !== 200 || b !== "tls") {
      let body = head.toString("utf8"); socket.setEncoding("utf8"); socket.on("data", (c) => body += c); socket.on("end", () => print({ status: response.statusCode, body }));
      socket.on("error", () => print({ status: response.statusCode, body }));
      if (response.statusCode === 200) socket.end();
      return;
    }
    const secure = tls.connect({ socket, servername: "tls.test", ca: readFileSync("/workspace/work/ca.pem", "utf8") }, () => {
      secure.write("GET / HTTP/1.1\r\nhost: tls.test\r\n\r\n");
    });
    let body = ""; secure.setEncoding("utf8"); secure.on("data", (c) => body += c);
    secure.on("end", () => print({ status: response.statusCode, authorized: secure.authorized, body }));
    secure.on("error", (error) => print({ status: response.statusCode, error: error.code ?? error.message }));
  });
  request.on("response", (response) => {
    let body = ""; response.setEncoding("utf8"); response.on("data", (c) => body += c); response.on("end", () => print({ status: response.statusCode, body }));
  });
  request.on("error", (error) => print({ error: error.code ?? error.message }));
  request.end();
} else if (mode === "tcp") {
  const socket = net.connect({ host: a, port: Number(b) });
  socket.on("connect", () => { socket.destroy(); print({ connected: true }); });
  socket.on("error", (error) => print({ error: error.code ?? error.message }));
} else if (mode === "udp") {
  const socket = dgram.createSocket("udp4");
  socket.on("error", (error) => print({ error: error.code ?? error.message }));
  socket.send(Buffer.from("agentcell egress probe"), Number(b), a, (error) => print(error ? { error: error.code ?? error.message } : { sent: true }));
} else if (mode === "dns") {
  dns.lookup(a).then((answer) => print({ address: answer.address }), (error) => print({ error: error.code ?? error.message }));
} else if (mode === "pair") {
  const open = () => new Promise((resolve) => {
    const request = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: a });
    request.on("connect", (response, socket, head) => resolve({ status: response.statusCode, socket, head: head.toString("utf8") }));
    request.on("response", (response) => { let body = ""; response.setEncoding("utf8"); response.on("data", (c) => body += c); response.on("end", () => resolve({ status: response.statusCode, head: body })); });
    request.on("error", (error) => resolve({ status: 0, head: error.code ?? error.message }));
    request.end();
  });
  const first = await open();
  const second = await open();
  const result = { first: first.status, second: second.status, body: second.head, firstEnded: false };
  if (!first.socket) print(result);
  first.socket.on("error", () => {});
  first.socket.on("close", () => print({ ...result, firstEnded: true }));
} else if (mode === "burst") {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let seen = "";
  socket.on("connect", () => socket.write(Buffer.concat([Buffer.from("CONNECT " + a + " HTTP/1.1\r\nHost: " + a + "\r\n\r\n"), Buffer.alloc(Number(b))])));
  socket.on("data", (c) => seen += c.toString("latin1"));
  socket.on("error", () => {});
  socket.on("close", () => print({ line: seen.slice(0, seen.indexOf("\r\n")) }));
} else if (mode === "flood") {
  // In waves of <wave> at once (more than the proxy's listen backlog, 511, at once would wait
  // in the kernel's accept queue, not in the proxy); the next wave starts once exactly <hold>
  // connections are still open, those the proxy admitted.
  const count = Number(a), wave = Number(b), hold = Number(process.argv[5]);
  const counts = { opened: 0, answered503: 0, bare: 0, other: 0, errors: 0 };
  const open = new Set();
  for (let started = 0; started < count; started += wave) {
    for (let i = 0; i < Math.min(wave, count - started); i++) {
      const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
      const state = { received: "" };
      open.add(state);
      socket.on("connect", () => counts.opened++);
      socket.on("data", (c) => state.received += c.toString("latin1"));
      socket.on("error", () => counts.errors++);
      socket.on("close", () => {
        open.delete(state);
        if (state.received.startsWith("HTTP/1.1 503 ")) counts.answered503++;
        else if (state.received === "") counts.bare++;
        else counts.other++;
      });
    }
    await new Promise((resolve) => { const check = () => open.size === hold ? resolve() : setTimeout(check, 10); check(); });
  }
  print({ ...counts, held: open.size, heldReceived: [...open].reduce((sum, state) => sum + state.received.length, 0) });
} else if (mode === "silent") {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let seen = "";
  socket.on("data", (c) => seen += c.toString("latin1"));
  socket.on("error", () => {});
  socket.on("close", () => print({ line: seen.slice(0, seen.indexOf("\r\n")), body: seen.slice(seen.indexOf("\r\n\r\n") + 4) }));
} else print({ error: "unknown mode " + mode });
`;

/** Collect every decision of `events` in the background (one consumer of the queue). */
export function collectEvents(events: DockerEgressEvents): { readonly seen: EgressEvent[]; readonly done: Promise<void> } {
  const seen: EgressEvent[] = [];
  const done = (async () => {
    for await (const event of events) seen.push(event);
  })();
  return { seen, done };
}
