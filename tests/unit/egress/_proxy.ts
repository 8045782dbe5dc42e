// Helpers of the egress proxy's unit tests: a proxy started in-process with a base
// configuration, local upstreams, raw exchanges on fresh connections, and waiting on events.
import assert from "node:assert/strict";
import { once } from "node:events";
import { request } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { type EgressEvent, type EgressProxy, type EgressProxyConfig, startEgressProxy } from "../../../lib/docker/egress/proxy_program.ts";

/** A configuration allowing nothing, with bounds that never get in a test's way; tests spread their own fields over it. */
export const base: EgressProxyConfig = {
  port: 0,
  hosts: [],
  addresses: [],
  hostAddresses: [],
  resolve: {},
  maxConnections: 8,
  headersTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  maxBytesPerConnection: 0,
  routes: [],
  upstreamCaCertificates: [],
};

/** Run `fn` against a proxy started with `base` plus `config` (and the routes' `secrets` and `routeAddress`); the proxy is closed afterwards, whatever `fn` did. */
export async function withProxy(
  config: Partial<EgressProxyConfig>,
  fn: (port: number, events: EgressEvent[], proxy: EgressProxy) => Promise<void>,
  secrets: Readonly<Record<string, string>> = {},
  routeAddress?: string,
): Promise<void> {
  const events: EgressEvent[] = [];
  const proxy = await startEgressProxy({ ...base, ...config }, (event) => events.push(event), secrets, routeAddress);
  try {
    await fn(proxy.port, events, proxy);
  } finally {
    await proxy.close();
  }
}

/** Resolves once the proxy has reported a `closed` event (it follows the sockets' close). */
export function closedEvent(events: EgressEvent[]): Promise<EgressEvent> {
  return new Promise((resolve) => {
    const check = () => {
      const closed = events.find((e) => e.event === "closed");
      if (closed) resolve(closed);
      else setTimeout(check, 10);
    };
    check();
  });
}

/** An absolute-form GET of `url` through the proxy: its status and body. */
export function get(proxyPort: number, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: proxyPort, path: url, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk) => (body += chunk)).on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject).end();
  });
}

/** Send a CONNECT and return the socket and the proxy's status line. */
export function tunnel(proxyPort: number, authority: string): Promise<{ socket: ReturnType<typeof connect>; status: string; rest: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, "127.0.0.1", () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("latin1");
      const end = seen.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      resolve({ socket, status: seen.slice(0, seen.indexOf("\r\n")), rest: seen.slice(end + 4) });
    };
    socket.on("data", onData).on("error", reject);
  });
}

/** Tunnel to an echo server at `authority`, check that "ping" comes back, and return the tunnel. */
export async function pingThrough(proxyPort: number, authority: string): Promise<ReturnType<typeof connect>> {
  const { socket, status } = await tunnel(proxyPort, authority);
  assert.equal(status, "HTTP/1.1 200 Connection Established");
  socket.write("ping");
  const [reply] = await once(socket, "data");
  assert.equal(reply.toString(), "ping");
  return socket;
}

/** Listen on an ephemeral port of 127.0.0.1 and return it. */
export async function localPort(server: { listen(port: number, host: string): unknown; address(): unknown; once(event: "listening", fn: () => void): unknown }): Promise<number> {
  const listening = new Promise<void>((resolve) => server.once("listening", resolve));
  server.listen(0, "127.0.0.1");
  await listening;
  return (server.address() as AddressInfo).port;
}

/** Resolves once `condition` holds, checking every 10 ms (the test's own timeout bounds it). */
export function until(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (condition() ? resolve() : setTimeout(check, 10));
    check();
  });
}

/** Write `bytes` on a fresh connection to the proxy in one write; resolve with what came back once it closed. */
export function exchange(proxyPort: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect(proxyPort, "127.0.0.1", () => socket.write(bytes));
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk)).on("error", () => {}).on("close", () => resolve(Buffer.concat(received)));
  });
}

/** Write `bytes` on a fresh connection and return what came back (once closed) and the denied events since. */
export async function refusedWith(proxyPort: number, events: EgressEvent[], bytes: string): Promise<{ answer: string; denied: EgressEvent[] }> {
  const from = events.length;
  const answer = (await exchange(proxyPort, Buffer.from(bytes, "latin1"))).toString("latin1");
  await until(() => events.length > from);
  return { answer, denied: events.slice(from) };
}
