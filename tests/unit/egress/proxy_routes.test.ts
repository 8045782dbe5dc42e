// The egress proxy's credentialed routes, in-process: a local HTTPS upstream (a fresh
// self-signed certificate for route.test, trusted through upstreamCaCertificates) that echoes
// what it received; the guest's side is raw HTTP/1.1 on fresh connections to the proxy.
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import { createServer as createHttpServer } from "node:http";
import { createServer as createTlsServer } from "node:tls";
import type { EgressProxyConfig, EgressRoute } from "../../../lib/docker/egress/proxy_program.ts";
import { matchRoute } from "../../../lib/docker/egress/proxy_program.ts";
import { selfSignedCertificate } from "../../fixtures/tls_certificate.ts";
import { type Echo, type HttpsEchoOptions, startHttpsEcho } from "../../fixtures/https_echo.ts";
import { exchange, localPort, until, withProxy } from "./_proxy.ts";

const SECRET = "sk-test-0123456789-secret";
const OTHER_SECRET = "other-secret-value";

/** Start an HTTPS echo upstream for route.test on 127.0.0.1; `answer` may replace the echo. */
async function withUpstream(
  fn: (port: number, caPem: string, seen: Echo[]) => Promise<void>,
  answer?: HttpsEchoOptions["answer"],
): Promise<void> {
  const upstream = await startHttpsEcho({ name: "route.test", host: "127.0.0.1", answer });
  try {
    await fn(upstream.port, upstream.certPem, upstream.seen);
  } finally {
    await upstream.close();
  }
}

function routeConfig(port: number, caPem: string, basePath = "/base"): Partial<EgressProxyConfig> {
  const route: EgressRoute = {
    name: "echo",
    host: "route.test",
    port,
    basePath,
    headers: { authorization: { secret: "key", prefix: "Bearer " }, "x-api-key": { secret: "other", prefix: "" } },
  };
  return { routes: [route], upstreamCaCertificates: [caPem], resolve: { "route.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] };
}

const secrets = { key: SECRET, other: OTHER_SECRET };

/** Send `text` raw on a fresh connection; the answer's status line, its body, and the whole text. */
async function raw(proxyPort: number, text: string): Promise<{ status: string; body: string; all: string }> {
  const all = (await exchange(proxyPort, Buffer.from(text, "latin1"))).toString("latin1");
  const last = all.lastIndexOf("HTTP/1.1 ");
  const answer = all.slice(last);
  return { status: answer.slice(0, answer.indexOf("\r\n")), body: answer.slice(answer.indexOf("\r\n\r\n") + 4), all };
}

test("matchRoute puts the rest of the path and the query under the route's base path, and refuses dot segments, encoded slashes and unknown names", () => {
  const routes: EgressRoute[] = [{ name: "echo", host: "route.test", port: 443, basePath: "/v1", headers: {} }];
  assert.deepEqual(matchRoute("/echo/messages?a=1", routes), { route: routes[0], path: "/v1/messages?a=1" });
  assert.deepEqual(matchRoute("/echo", routes), { route: routes[0], path: "/v1/" });
  assert.deepEqual(matchRoute("/echo/a/../../b", routes), { status: 400, reason: "route paths must not contain dot segments (. or ..)" });
  assert.deepEqual(matchRoute("/echo/%2E%2e/b", routes), { status: 400, reason: "route paths must not contain an encoded dot, slash or backslash, or a backslash" });
  assert.deepEqual(matchRoute("/echo/a%2fb", routes), { status: 400, reason: "route paths must not contain an encoded dot, slash or backslash, or a backslash" });
  assert.deepEqual(matchRoute("/other/x", routes), { status: 404, reason: "no route for /other/x: the routes are /echo/" });
  assert.deepEqual(matchRoute("//route.test/x", routes), { status: 404, reason: "no route for //route.test/x: the routes are /echo/" });
});

test("EgressProxy serves a route: the path under the base path over verified TLS, the secret headers set, the guest's own Authorization replaced, its other headers kept", { timeout: 60_000 }, async () => {
  await withUpstream(async (port, caPem, seen) => {
    await withProxy(routeConfig(port, caPem), async (proxyPort, events) => {
      const answer = await raw(
        proxyPort,
        "POST /echo/v1/messages?beta=1 HTTP/1.1\r\nHost: evil.test\r\nAuthorization: guest-token\r\nX-API-Key: guest-key\r\nX-Keep: kept\r\ncontent-length: 5\r\n\r\nhello",
      );
      assert.equal(answer.status, "HTTP/1.1 200 OK");
      const echo = JSON.parse(answer.body) as Echo;
      assert.equal(echo.method, "POST");
      assert.equal(echo.url, "/base/v1/messages?beta=1");
      assert.equal(echo.body, "hello");
      assert.equal(echo.headers.authorization, `Bearer ${SECRET}`);
      assert.equal(echo.headers["x-api-key"], OTHER_SECRET);
      assert.equal(echo.headers["x-keep"], "kept");
      assert.equal(echo.headers.host, `route.test:${port}`);
      assert.equal(seen.length, 1);
      await until(() => events.some((event) => event.event === "closed"));
      const allowed = events.find((event) => event.event === "allowed")!;
      assert.deepEqual(allowed, { event: "allowed", host: "route.test", port, address: "127.0.0.1", route: "echo" });
      const closed = events.find((event) => event.event === "closed")!;
      assert.equal(closed.route, "echo");
      assert.equal(closed.status, 200);
      assert.equal(closed.reason, "ended");
      assert.equal(closed.bytesOut, 5);
      assert.ok((closed.bytesIn ?? 0) > 0 && typeof closed.durationMs === "number");
      const text = JSON.stringify(events);
      assert.ok(!text.includes(SECRET) && !text.includes(OTHER_SECRET), "no event carries a secret");
    }, secrets);
  });
});

test("EgressProxy serves a route through a CONNECT to its own address and port (the tunnel ends at the routes) and as an absolute-form request to itself", { timeout: 60_000 }, async () => {
  await withUpstream(async (port, caPem, seen) => {
    await withProxy(routeConfig(port, caPem), async (proxyPort) => {
      const self = `127.0.0.1:${proxyPort}`;
      const tunnelled = await raw(proxyPort, `CONNECT ${self} HTTP/1.1\r\nHost: ${self}\r\n\r\nGET /echo/t HTTP/1.1\r\nHost: ${self}\r\n\r\n`);
      assert.ok(tunnelled.all.startsWith("HTTP/1.1 200 Connection Established\r\n\r\n"), tunnelled.all);
      assert.equal(tunnelled.status, "HTTP/1.1 200 OK");
      assert.equal((JSON.parse(tunnelled.body) as Echo).headers.authorization, `Bearer ${SECRET}`);
      const absolute = await raw(proxyPort, `GET http://${self}/echo/a?x=1 HTTP/1.1\r\nHost: ${self}\r\n\r\n`);
      assert.equal(absolute.status, "HTTP/1.1 200 OK");
      assert.equal((JSON.parse(absolute.body) as Echo).url, "/base/a?x=1");
      // An absolute-form request to itself keeps the path as sent: dot segments are refused, not resolved.
      assert.equal((await raw(proxyPort, `GET http://${self}/echo/../x HTTP/1.1\r\nHost: ${self}\r\n\r\n`)).status, "HTTP/1.1 400 Bad Request");
      assert.deepEqual(seen.map((echo) => echo.url), ["/base/t", "/base/a?x=1"]);
    }, secrets);
  });
});

test("EgressProxy sends a route's secret nowhere but its upstream: dot segments, unknown routes, other hosts by URL, Host or CONNECT, and an upstream it cannot verify", { timeout: 60_000 }, async () => {
  await withUpstream(async (port, caPem, seen) => {
    // A second listener the guest aims at (allowed by address, as the upstream is on 127.0.0.1):
    // whatever reaches it must carry no secret.
    const decoySeen: unknown[] = [];
    const decoy = createHttpServer((request, response) => {
      decoySeen.push(request.headers);
      response.writeHead(200, { "content-length": "5" }).end("decoy");
    });
    const decoyPort = await localPort(decoy);
    try {
      await withProxy({ ...routeConfig(port, caPem), hosts: [] }, async (proxyPort, events) => {
        for (const path of ["/echo/../x", "/echo/%2e%2e/x", "/echo/.%2fx", "/echo/a\\b"]) {
          const refused = await raw(proxyPort, `GET ${path} HTTP/1.1\r\nHost: route.test\r\n\r\n`);
          assert.equal(refused.status, "HTTP/1.1 400 Bad Request", path);
        }
        assert.equal((await raw(proxyPort, "GET /nope/x HTTP/1.1\r\nHost: route.test\r\n\r\n")).status, "HTTP/1.1 404 Not Found");
        // Another host by absolute URL: the allowlist decides, no route applies (no secret added).
        const other = await raw(proxyPort, `GET http://127.0.0.1:${decoyPort}/echo/x HTTP/1.1\r\nHost: route.test\r\n\r\n`);
        assert.equal(other.body, "decoy");
        // The upstream's host by CONNECT: not on the allowlist (a route adds nothing to it).
        assert.equal((await raw(proxyPort, `CONNECT route.test:${port} HTTP/1.1\r\nHost: route.test\r\n\r\n`)).status, "HTTP/1.1 403 Forbidden");
        // A Host field for another name changes nothing: the route's upstream gets it, with its own Host.
        const hosted = await raw(proxyPort, `GET /echo/h HTTP/1.1\r\nHost: 127.0.0.1:${decoyPort}\r\n\r\n`);
        assert.equal((JSON.parse(hosted.body) as Echo).headers.host, `route.test:${port}`);
        assert.equal(decoySeen.length, 1);
        assert.ok(!JSON.stringify(decoySeen).includes(SECRET) && !JSON.stringify(decoySeen).includes(OTHER_SECRET));
        assert.deepEqual(seen.map((echo) => echo.url), ["/base/h"]);
        assert.ok(!JSON.stringify(events).includes(SECRET));
      }, secrets);
      // Without the test CA the upstream's certificate does not verify: 502, and no request reached it.
      await withProxy({ ...routeConfig(port, caPem), upstreamCaCertificates: [] }, async (proxyPort, events) => {
        const unverified = await raw(proxyPort, "GET /echo/x HTTP/1.1\r\nHost: route.test\r\n\r\n");
        assert.equal(unverified.status, "HTTP/1.1 502 Bad Gateway");
        await until(() => events.some((event) => event.event === "closed"));
        assert.match(events.find((event) => event.event === "closed")!.reason!, /^upstream failed: /u);
        assert.equal(seen.length, 1);
      }, secrets);
    } finally {
      await new Promise((resolve) => decoy.close(resolve));
    }
  });
});

test("EgressProxy serves routes only on its route address: a connection to another of its addresses gets 403 and sends nothing", { timeout: 60_000 }, async () => {
  await withUpstream(async (port, caPem, seen) => {
    await withProxy(routeConfig(port, caPem), async (proxyPort, events) => {
      const answer = await raw(proxyPort, "GET /echo/x HTTP/1.1\r\nHost: route.test\r\n\r\n");
      assert.equal(answer.status, "HTTP/1.1 403 Forbidden");
      assert.ok(answer.body.includes("egress proxy: routes are served only to the sandbox's guest (the proxy's address on its internal network)\n"), answer.body);
      assert.equal(events.find((event) => event.event === "denied")?.route, "echo");
      assert.equal(seen.length, 0);
    }, secrets, "10.255.255.254");
    await withProxy(routeConfig(port, caPem), async (proxyPort) => {
      assert.equal((await raw(proxyPort, "GET /echo/x HTTP/1.1\r\nHost: route.test\r\n\r\n")).status, "HTTP/1.1 200 OK");
    }, secrets, "127.0.0.1");
  });
});

test("EgressProxy returns a route upstream's redirect to the guest and never follows it", { timeout: 60_000 }, async () => {
  await withUpstream(async (port, caPem, seen) => {
    await withProxy(routeConfig(port, caPem), async (proxyPort, events) => {
      const answer = await raw(proxyPort, "GET /echo/r HTTP/1.1\r\nHost: route.test\r\n\r\n");
      assert.equal(answer.status, "HTTP/1.1 302 Found");
      assert.match(answer.all, /\r\nlocation: https:\/\/evil\.test\/steal\r\n/iu);
      await until(() => events.some((event) => event.event === "closed"));
      assert.equal(events.find((event) => event.event === "closed")!.status, 302);
      assert.equal(seen.length, 1);
    }, secrets);
  }, () => ({ status: 302, headers: { location: "https://evil.test/steal" } }));
});

test("EgressProxy answers a route upstream's malformed status (099, 000, a 101 to a plain request) with 502 and a denied event naming the route, and serves the next request", { timeout: 60_000 }, async () => {
  const { certPem, keyPem } = await selfSignedCertificate("route.test");
  let reply = "";
  const upstream = createTlsServer({ key: keyPem, cert: certPem }, (socket) => {
    socket.on("error", () => {}).once("data", () => socket.end(reply));
  });
  const port = await localPort(upstream);
  try {
    await withProxy(routeConfig(port, certPem), async (proxyPort, events) => {
      for (const line of ["HTTP/1.1 099 Odd", "HTTP/1.1 000 Zero", "HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade"]) {
        reply = `${line}\r\ncontent-length: 0\r\n\r\n`;
        const from = events.length;
        const answer = await raw(proxyPort, "GET /echo/m HTTP/1.1\r\nHost: route.test\r\n\r\n");
        assert.equal(answer.status, "HTTP/1.1 502 Bad Gateway", line);
        await until(() => events.slice(from).some((event) => event.event === "closed"));
        const denied = events.slice(from).find((event) => event.event === "denied");
        assert.equal(denied?.route, "echo", line);
        assert.match(denied!.reason!, /^upstream sent a malformed reply: /u);
      }
      reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
      const fine = await raw(proxyPort, "GET /echo/m HTTP/1.1\r\nHost: route.test\r\n\r\n");
      assert.equal(fine.status, "HTTP/1.1 200 OK");
      assert.equal(fine.body, "ok");
    }, secrets);
  } finally {
    await new Promise((resolve) => upstream.close(resolve));
  }
});

test("EgressProxy bounds a route like every request: mixed Content-Length and chunked framing is 502, a silent upstream is closed after idleTimeoutMs, a response or request body past maxBytesPerConnection is cut, connections past maxConnections get 503", { timeout: 60_000 }, async () => {
  const { certPem, keyPem } = await selfSignedCertificate("route.test");
  let reply: string | undefined = "";
  const upstream = createTlsServer({ key: keyPem, cert: certPem }, (socket) => {
    socket.on("error", () => {}).once("data", () => {
      if (reply !== undefined) socket.end(reply);
    });
  });
  const port = await localPort(upstream);
  try {
    await withProxy({ ...routeConfig(port, certPem), idleTimeoutMs: 1_000, maxBytesPerConnection: 64 }, async (proxyPort, events) => {
      reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
      assert.equal((await raw(proxyPort, "GET /echo/m HTTP/1.1\r\nHost: x\r\n\r\n")).status, "HTTP/1.1 502 Bad Gateway");
      await until(() => events.some((event) => event.event === "denied" && /malformed reply/u.test(event.reason ?? "")));
      // An upstream that accepts and never answers: the idle bound ends the request.
      reply = undefined;
      let from = events.length;
      await raw(proxyPort, "GET /echo/slow HTTP/1.1\r\nHost: x\r\n\r\n");
      await until(() => events.slice(from).some((event) => event.event === "closed"));
      assert.equal(events.slice(from).find((event) => event.event === "closed")!.reason, "idle for 1000 ms");
      // A response body past the byte bound is cut.
      reply = `HTTP/1.1 200 OK\r\ncontent-length: 200\r\n\r\n${"x".repeat(200)}`;
      from = events.length;
      await raw(proxyPort, "GET /echo/big HTTP/1.1\r\nHost: x\r\n\r\n");
      await until(() => events.slice(from).some((event) => event.event === "closed"));
      const closed = events.slice(from).find((event) => event.event === "closed")!;
      assert.equal(closed.reason, "more than 64 bytes");
      assert.equal(closed.route, "echo");
      // A request body past the byte bound is cut too, before the upstream has all of it.
      reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
      from = events.length;
      await raw(proxyPort, `POST /echo/up HTTP/1.1\r\nHost: x\r\ncontent-length: 200\r\n\r\n${"y".repeat(200)}`);
      await until(() => events.slice(from).some((event) => event.event === "closed"));
      assert.equal(events.slice(from).find((event) => event.event === "closed")!.reason, "more than 64 bytes");
    }, secrets);
    // Route requests count against maxConnections like every connection: past it, 503.
    await withProxy({ ...routeConfig(port, certPem), maxConnections: 2 }, async (proxyPort) => {
      const held = [connect(proxyPort, "127.0.0.1"), connect(proxyPort, "127.0.0.1")];
      try {
        await Promise.all(held.map((socket) => once(socket, "connect")));
        assert.equal((await raw(proxyPort, "GET /echo/m HTTP/1.1\r\nHost: x\r\n\r\n")).status, "HTTP/1.1 503 Service Unavailable");
      } finally {
        for (const socket of held) socket.destroy();
      }
    }, secrets);
  } finally {
    await new Promise((resolve) => upstream.close(resolve));
  }
});

test("startEgressProxy refuses to start when a route names a secret that was not given", async () => {
  await assert.rejects(
    withProxy(routeConfig(443, "x"), async () => {}, { key: SECRET }),
    { message: "route echo header x-api-key names the secret other, which was not given" },
  );
});
