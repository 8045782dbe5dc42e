// The egress proxy program on loopback: allowlist matching, address classes, the resolver
// override, CONNECT and absolute-form HTTP, and its bounds. Upstreams are local servers, so
// loopback is reachable only where a test allows 127.0.0.1 explicitly.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import { connect, createServer as createTcpServer, type AddressInfo } from "node:net";
import { test } from "node:test";
import { addressDefect, decide, type EgressEvent, hostAllowed, MAX_REASON_LENGTH } from "../../../lib/docker/egress/proxy_program.ts";
import { MAX_EGRESS_LINE_LENGTH } from "../../../lib/docker/egress/events.ts";
import { base, closedEvent, exchange, get, localPort, pingThrough, refusedWith, tunnel, until, withProxy } from "./_proxy.ts";

test("hostAllowed matches exact names, subdomain wildcards (not the bare parent) and optional ports", () => {
  const hosts = ["api.example.com", "*.pypi.org:443", "Mixed.Case.test"];
  assert.equal(hostAllowed("api.example.com", 8080, hosts), true);
  assert.equal(hostAllowed("API.Example.com.", 443, hosts), true, "case and a trailing dot do not matter");
  assert.equal(hostAllowed("x.api.example.com", 443, hosts), false);
  assert.equal(hostAllowed("files.pypi.org", 443, hosts), true);
  assert.equal(hostAllowed("a.b.pypi.org", 443, hosts), true);
  assert.equal(hostAllowed("files.pypi.org", 80, hosts), false, "the port must match when given");
  assert.equal(hostAllowed("pypi.org", 443, hosts), false, "a wildcard does not match its bare parent");
  assert.equal(hostAllowed("evilpypi.org", 443, hosts), false);
  assert.equal(hostAllowed("mixed.case.test", 1, hosts), true);
});

test("addressDefect refuses loopback, private, link-local, CGNAT, reserved and mapped addresses; public and explicit ones pass", () => {
  const none = { addresses: [], hostAddresses: [] };
  for (const address of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "ff02::1", "2001:db8::1",
    // IPv4-compatible (::/96), IPv4-translated, site-local, documentation (RFC 9637), SRv6 (RFC 9602), dummy (RFC 9780)
    "::7f00:1", "::127.0.0.1", "::ffff:0:c000:202", "fec0::1", "3fff::1", "5f00::1", "100:0:0:1::1"]) {
    assert.match(addressDefect(address, none) ?? "", /not a public address/, address);
  }
  for (const address of ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "2a00:1450::1"]) {
    assert.equal(addressDefect(address, none), undefined, address);
  }
  assert.equal(addressDefect("10.0.0.5", { addresses: ["10.0.0.0/24"], hostAddresses: [] }), undefined, "explicitly allowed by range");
  assert.match(addressDefect("8.8.4.4", { addresses: [], hostAddresses: ["8.8.4.4"] }) ?? "", /the host's own addresses/);
  assert.match(addressDefect("example.com", none) ?? "", /not an IP address/);
});

test("decide resolves through the override and refuses a listed name that points inside", async () => {
  const config = { ...base, hosts: ["inside.test", "outside.test", "mixed.test"], resolve: { "inside.test": ["10.0.0.9"], "outside.test": ["93.184.216.34"], "mixed.test": ["93.184.216.34", "127.0.0.1"] } };
  assert.deepEqual(await decide("outside.test", 443, config), { address: "93.184.216.34" });
  assert.match((await decide("inside.test", 443, config) as { denied: string }).denied, /inside\.test resolves to 10\.0\.0\.9 is not a public address/);
  assert.match((await decide("mixed.test", 443, config) as { denied: string }).denied, /127\.0\.0\.1/);
  assert.match((await decide("elsewhere.test", 443, config) as { denied: string }).denied, /elsewhere\.test:443 is not on the allowlist/);
  assert.match((await decide("10.0.0.9", 443, config) as { denied: string }).denied, /not on the allowlist/);
  assert.deepEqual(await decide("10.0.0.9", 443, { ...config, addresses: ["10.0.0.9"] }), { address: "10.0.0.9" });
});

test("EgressProxy forwards an allowed absolute-form request, refuses another host with 403 and a denied event", async () => {
  const upstream = createServer((req, res) => res.end(`hello ${req.headers.host} ${req.url}`)).listen(0, "127.0.0.1");
  await once(upstream, "listening");
  const port = (upstream.address() as AddressInfo).port;
  try {
    await withProxy({ hosts: ["upstream.test"], resolve: { "upstream.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] }, async (proxyPort, events) => {
      const body = `hello upstream.test:${port} /path?q=1`;
      assert.deepEqual(await get(proxyPort, `http://upstream.test:${port}/path?q=1`), { status: 200, body });
      // Like a tunnel, the request gets a closed event with its bytes (here: the response body).
      assert.deepEqual(await closedEvent(events), {
        event: "closed", host: "upstream.test", port, address: "127.0.0.1", reason: "ended", bytesOut: 0, bytesIn: body.length,
      });
      const refused = await get(proxyPort, `http://other.test:${port}/`);
      assert.equal(refused.status, 403);
      assert.match(refused.body, /^egress proxy: denied: other\.test:\d+ is not on the allowlist/);
      assert.deepEqual(events.map((e) => [e.event, e.host]), [["allowed", "upstream.test"], ["closed", "upstream.test"], ["denied", "other.test"]]);
    });
    // Without the explicit address, the same name pointing at loopback is refused.
    await withProxy({ hosts: ["upstream.test"], resolve: { "upstream.test": ["127.0.0.1"] } }, async (proxyPort, events) => {
      const refused = await get(proxyPort, `http://upstream.test:${port}/`);
      assert.equal(refused.status, 403);
      assert.match(events[0].reason ?? "", /127\.0\.0\.1 is not a public address/);
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy tunnels an allowed CONNECT both ways and reports the bytes when it closes", async () => {
  const echo = createTcpServer((socket) => socket.pipe(socket)).listen(0, "127.0.0.1");
  await once(echo, "listening");
  const port = (echo.address() as AddressInfo).port;
  try {
    await withProxy({ hosts: [`echo.test:${port}`], resolve: { "echo.test": ["127.0.0.1"] }, addresses: ["127.0.0.1/32"] }, async (proxyPort, events) => {
      const socket = await pingThrough(proxyPort, `echo.test:${port}`);
      socket.end();
      await once(socket, "close");
      await closedEvent(events);
      const closed = events.find((e) => e.event === "closed")!;
      assert.deepEqual([closed.bytesOut, closed.bytesIn, closed.address], [4, 4, "127.0.0.1"]);
      const denied = await tunnel(proxyPort, `echo.test:${port + 1}`);
      assert.equal(denied.status, "HTTP/1.1 403 Forbidden");
      denied.socket.destroy();
    });
  } finally {
    echo.close();
  }
});

test("EgressProxy bounds connections at once, bytes per connection and idle time", async () => {
  const sink = createTcpServer((socket) => socket.on("data", () => {})).listen(0, "127.0.0.1");
  await once(sink, "listening");
  const port = (sink.address() as AddressInfo).port;
  const allow = { hosts: ["sink.test"], resolve: { "sink.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] };
  try {
    await withProxy({ ...allow, maxConnections: 1 }, async (proxyPort, events) => {
      const first = await tunnel(proxyPort, `sink.test:${port}`);
      assert.equal(first.status, "HTTP/1.1 200 Connection Established");
      const second = await tunnel(proxyPort, `sink.test:${port}`);
      assert.equal(second.status, "HTTP/1.1 503 Service Unavailable");
      assert.match(events.at(-1)?.reason ?? "", /more than 1 connections at once/);
      first.socket.destroy();
      second.socket.destroy();
    });
    await withProxy({ ...allow, maxBytesPerConnection: 1000 }, async (proxyPort, events) => {
      const { socket } = await tunnel(proxyPort, `sink.test:${port}`);
      socket.write(Buffer.alloc(5000));
      await once(socket, "close");
      await closedEvent(events);
      assert.equal(events.find((e) => e.event === "closed")?.reason, "more than 1000 bytes");
    });
    await withProxy({ ...allow, idleTimeoutMs: 100 }, async (proxyPort, events) => {
      const { socket } = await tunnel(proxyPort, `sink.test:${port}`);
      await once(socket, "close"); // nothing is sent: only the idle bound can end it
      await closedEvent(events);
      assert.equal(events.find((e) => e.event === "closed")?.reason, "idle for 100 ms");
    });
  } finally {
    sink.close();
  }
});

test("EgressProxy answers an unreachable upstream with 502 and a denied event, and frees the slot even while the guest keeps its side open", async () => {
  const gone = createTcpServer().listen(0, "127.0.0.1");
  await once(gone, "listening");
  const closedPort = (gone.address() as AddressInfo).port;
  await new Promise((resolve) => gone.close(resolve));
  const sink = createTcpServer((socket) => socket.on("data", () => {})).listen(0, "127.0.0.1");
  await once(sink, "listening");
  const openPort = (sink.address() as AddressInfo).port;
  const allow = { hosts: ["sink.test"], resolve: { "sink.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"], maxConnections: 1 };
  try {
    await withProxy(allow, async (proxyPort, events) => {
      // A guest that never closes its side: it only reads the answer.
      const held = connect({ port: proxyPort, host: "127.0.0.1", allowHalfOpen: true });
      await once(held, "connect");
      held.write(`CONNECT sink.test:${closedPort} HTTP/1.1\r\nHost: sink.test:${closedPort}\r\n\r\n`);
      const [answer] = await once(held, "data") as [Buffer];
      assert.match(answer.toString("latin1"), /^HTTP\/1\.1 502 Bad Gateway\r\n/);
      const denied = events.find((e) => e.event === "denied");
      assert.equal(denied?.port, closedPort);
      assert.match(denied?.reason ?? "", new RegExp(`^cannot connect to 127\\.0\\.0\\.1:${closedPort}: .*ECONNREFUSED`));
      // The proxy closes the refused socket itself, so the one slot comes back.
      let status = "";
      for (let attempt = 0; attempt < 200 && status !== "HTTP/1.1 200 Connection Established"; attempt++) {
        const next = await tunnel(proxyPort, `sink.test:${openPort}`);
        status = next.status;
        next.socket.destroy();
        if (status !== "HTTP/1.1 200 Connection Established") await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(status, "HTTP/1.1 200 Connection Established");
      held.destroy();
    });
  } finally {
    sink.close();
  }
});

test("EgressProxy refuses a host name longer than 253 characters with 400 and reports it cut to 253", async () => {
  const long = `${"a".repeat(300)}.test`;
  await withProxy({ hosts: ["*.test"] }, async (proxyPort, events) => {
    const connected = await tunnel(proxyPort, `${long}:443`);
    assert.equal(connected.status, "HTTP/1.1 400 Bad Request");
    connected.socket.destroy();
    const plain = await get(proxyPort, `http://${long}/`);
    assert.equal(plain.status, 400);
    assert.match(plain.body, /host name longer than 253 characters/);
    const denied = events.filter((e) => e.event === "denied");
    assert.equal(denied.length, 2);
    for (const event of denied) {
      assert.equal(event.host, `${"a".repeat(253)}…`);
      assert.equal(event.reason, "host name longer than 253 characters");
    }
  });
});

test("decide looks up only the override's own names: a listed `constructor` is resolved, not Object.prototype's", async () => {
  const verdict = await decide("constructor", 80, { ...base, hosts: ["constructor"], resolve: { other: ["192.0.2.9"] } });
  // Before, the prototype's `constructor` was taken as the address list and decide threw
  // ("is not iterable"), which ended the proxy. Now the name goes to the system resolver.
  if ("denied" in verdict) assert.match(verdict.denied, /^constructor (does not resolve|resolves to)/);
  else assert.equal(typeof verdict.address, "string");
});

test("EgressProxy counts and forwards the bytes a guest sends in the same packet as its CONNECT under maxBytesPerConnection", async () => {
  let sunk = 0;
  const sink = createTcpServer((socket) => socket.on("data", (chunk: Buffer) => (sunk += chunk.length)).on("error", () => {}));
  const port = await localPort(sink);
  const allow = { hosts: ["sink.test"], resolve: { "sink.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"], maxBytesPerConnection: 1000 };
  const connectHead = Buffer.from(`CONNECT sink.test:${port} HTTP/1.1\r\nHost: sink.test:${port}\r\n\r\n`);
  try {
    // Within the bound: the 500 bytes after the head reach the upstream and are counted.
    await withProxy(allow, async (proxyPort, events) => {
      const socket = connect(proxyPort, "127.0.0.1", () => socket.write(Buffer.concat([connectHead, Buffer.alloc(500, 1)])));
      socket.on("error", () => {});
      await until(() => sunk === 500);
      socket.end();
      assert.deepEqual(await closedEvent(events), {
        event: "closed", host: "sink.test", port, address: "127.0.0.1", reason: "ended", bytesOut: 500, bytesIn: 0,
      });
    });
    // Past it in the first packet: the tunnel is closed and at most the bound reached the upstream.
    sunk = 0;
    await withProxy(allow, async (proxyPort, events) => {
      const answer = await exchange(proxyPort, Buffer.concat([connectHead, Buffer.alloc(5000, 1)]));
      assert.match(answer.toString("latin1"), /^HTTP\/1\.1 200 Connection Established\r\n\r\n$/u);
      const closed = await closedEvent(events);
      assert.equal(closed.reason, "more than 1000 bytes");
      assert.ok(closed.bytesOut! > 1000 && closed.bytesOut! <= 5000 && closed.bytesIn === 0, JSON.stringify(closed));
      assert.ok(sunk <= 1000, `${sunk} bytes reached the upstream`);
    });
  } finally {
    sink.close();
  }
});

test("EgressProxy bounds an absolute-form request's request and response bodies by maxBytesPerConnection and reports them closed", async () => {
  let received = 0;
  const upstream = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (received += chunk.length));
    req.on("end", () => res.end("r".repeat(Number(req.headers["x-answer-bytes"] ?? 0))));
  });
  const port = await localPort(upstream);
  const allow = { hosts: ["up.test"], resolve: { "up.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"], maxBytesPerConnection: 1000 };
  const post = (bodyBytes: number, answerBytes: number) =>
    Buffer.concat([
      Buffer.from(`POST http://up.test:${port}/ HTTP/1.1\r\nHost: up.test:${port}\r\ncontent-length: ${bodyBytes}\r\nx-answer-bytes: ${answerBytes}\r\n\r\n`),
      Buffer.alloc(bodyBytes, 1),
    ]);
  try {
    await withProxy(allow, async (proxyPort, events) => {
      // Within the bound both ways: 300 bytes up, 200 down, counted exactly.
      const answer = (await exchange(proxyPort, post(300, 200))).toString("latin1");
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/u);
      assert.ok(answer.endsWith(`\r\n\r\n${"r".repeat(200)}`), answer);
      assert.match(answer, /\r\nconnection: close\r\n/iu);
      assert.equal(received, 300);
      assert.deepEqual(await closedEvent(events), {
        event: "closed", host: "up.test", port, address: "127.0.0.1", reason: "ended", bytesOut: 300, bytesIn: 200,
      });
    });
    received = 0;
    await withProxy(allow, async (proxyPort, events) => {
      // A request body past the bound: cut, and at most the bound reached the upstream.
      await exchange(proxyPort, post(5000, 0));
      const closed = await closedEvent(events);
      assert.equal(closed.reason, "more than 1000 bytes");
      assert.ok(closed.bytesOut! > 1000 && closed.bytesIn === 0, JSON.stringify(closed));
      assert.ok(received <= 1000, `${received} body bytes reached the upstream`);
    });
    await withProxy(allow, async (proxyPort, events) => {
      // A response body past the bound: cut, and at most the bound reached the guest.
      const answer = (await exchange(proxyPort, post(0, 5000))).toString("latin1");
      const body = answer.includes("\r\n\r\n") ? answer.slice(answer.indexOf("\r\n\r\n") + 4) : "";
      assert.ok(body.length <= 1000, `${body.length} body bytes reached the guest`);
      const closed = await closedEvent(events);
      assert.equal(closed.reason, "more than 1000 bytes");
      assert.ok(closed.bytesOut === 0 && closed.bytesIn! > 1000, JSON.stringify(closed));
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy counts silent TCP connections against maxConnections: past it they are refused at once, and the proxy still serves afterwards", async () => {
  const echo = createTcpServer((socket) => socket.pipe(socket));
  const port = await localPort(echo);
  const allow = { hosts: ["echo.test"], resolve: { "echo.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"], maxConnections: 4, headersTimeoutMs: 600_000 };
  try {
    await withProxy(allow, async (proxyPort, events, proxy) => {
      const silent = Array.from({ length: 50 }, () => {
        const socket = connect(proxyPort, "127.0.0.1");
        const state = { socket, received: "", closed: false };
        socket.on("data", (chunk: Buffer) => (state.received += chunk.toString("latin1"))).on("error", () => {});
        socket.on("close", () => (state.closed = true));
        return state;
      });
      // 46 are refused by the proxy (answered 503, or closed without an answer while 4
      // refused ones still linger); the 4 it admitted stay open and get nothing.
      await until(() => silent.filter((s) => s.closed).length === 46);
      const refusal = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\negress proxy: too many connections\n";
      const closed = silent.filter((s) => s.closed);
      assert.ok(closed.every((s) => s.received === refusal || s.received === ""), JSON.stringify(closed.map((s) => s.received)));
      assert.ok(closed.some((s) => s.received === refusal), "the first refused connection is answered");
      const open = silent.filter((s) => !s.closed);
      assert.equal(open.length, 4);
      assert.ok(open.every((s) => s.received === ""));
      await until(() => proxy.connections === 4);
      const denied = events.filter((e) => e.event === "denied");
      assert.deepEqual(denied.length, 46);
      assert.ok(denied.every((e) => e.host === "" && e.port === 0 && e.reason === "more than 4 connections at once"));
      // Released, the slots serve an allowed tunnel again.
      for (const s of open) s.socket.destroy();
      await until(() => proxy.connections === 0);
      (await pingThrough(proxyPort, `echo.test:${port}`)).destroy();
    });
  } finally {
    echo.close();
  }
});

test("EgressProxy closes a connection without a complete request head after headersTimeoutMs with 408 and a denied event", async () => {
  await withProxy({ hosts: ["a.test"], headersTimeoutMs: 100 }, async (proxyPort, events, proxy) => {
    const timeout = "HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\negress proxy: no complete request head within 100 ms\n";
    // One sends nothing, one a head that never ends (a byte at a time would do the same).
    const [silent, partial] = await Promise.all([
      exchange(proxyPort, Buffer.alloc(0)),
      exchange(proxyPort, Buffer.from("CONNECT a.test:443 HTTP/1.1\r\nHost: a.te")),
    ]);
    assert.equal(silent.toString("latin1"), timeout);
    assert.equal(partial.toString("latin1"), timeout);
    assert.deepEqual(events, [
      { event: "denied", host: "", port: 0, reason: "no complete request head within 100 ms" },
      { event: "denied", host: "", port: 0, reason: "no complete request head within 100 ms" },
    ]);
    await until(() => proxy.connections === 0);
  });
});

test("addressDefect names loopback as not public even when the host lists it as its own", () => {
  const config = { addresses: [], hostAddresses: ["127.0.0.1", "::1", "172.20.0.1", "8.8.4.4"] };
  assert.equal(addressDefect("127.0.0.1", config), "127.0.0.1 is not a public address (loopback)");
  assert.equal(addressDefect("::1", config), "::1 is not a public address (loopback)");
  assert.equal(addressDefect("::ffff:127.0.0.2", config), "::ffff:127.0.0.2 is not a public address (loopback)");
  assert.equal(addressDefect("172.20.0.1", config), "172.20.0.1 is not a public address (private, link-local or reserved)");
  assert.equal(addressDefect("8.8.4.4", config), "8.8.4.4 is one of the host's own addresses");
});

test("decide gives up a name lookup that does not answer within headersTimeoutMs", async () => {
  const config = { ...base, hosts: ["slow.test"], headersTimeoutMs: 50 };
  // A scripted resolver that never answers (a resolver that hangs is what this bound is for).
  const never = () => new Promise<readonly string[]>(() => {});
  assert.deepEqual(await decide("slow.test", 443, config, never), { denied: "slow.test does not resolve within 50 ms" });
  assert.deepEqual(await decide("slow.test", 443, config, () => Promise.resolve(["93.184.216.34"])), { address: "93.184.216.34" });
});

test("EgressProxy reports a denied event for every request it cannot parse or will not proxy, with the answer it sent", async () => {
  await withProxy({ hosts: ["a.test"] }, async (proxyPort, events) => {
    // Parse errors name the parser's code; which code a framing error gets differs between the
    // runtimes' llhttp versions (TE with CL is HPE_INVALID_CONTENT_LENGTH on Node 26,
    // HPE_INVALID_TRANSFER_ENCODING on Deno), so those reasons are matched by form.
    const malformed = { event: "denied", host: "", port: 0, reason: /^malformed request \(HPE_[A-Z_]+\)$/u };
    const cases: [string, string, EgressEvent | typeof malformed][] = [
      ["GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "400 Bad Request", malformed],
      ["GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "400 Bad Request", malformed],
      ["connect a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n", "400 Bad Request", malformed],
      [`GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-Big: ${"x".repeat(17_000)}\r\n\r\n`, "431 Request Header Fields Too Large", { event: "denied", host: "", port: 0, reason: "request head larger than 16384 bytes" }],
      ["GET /path HTTP/1.1\r\nHost: a.test\r\n\r\n", "400 Bad Request", { event: "denied", host: "", port: 0, reason: "not an absolute-form request (GET /path): only absolute-form http:// requests and CONNECT are proxied" }],
      ["OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", "400 Bad Request", { event: "denied", host: "", port: 0, reason: "not an absolute-form request (OPTIONS *): only absolute-form http:// requests and CONNECT are proxied" }],
      ["GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "400 Bad Request", { event: "denied", host: "a.test", port: 0, reason: "https: URLs are not proxied as requests: use CONNECT (https) or http://" }],
      ["GET ftp://a.test:2121/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "400 Bad Request", { event: "denied", host: "a.test", port: 2121, reason: "ftp: URLs are not proxied as requests: use CONNECT (https) or http://" }],
    ];
    for (const [request, status, event] of cases) {
      const { answer, denied } = await refusedWith(proxyPort, events, request);
      assert.ok(answer.startsWith(`HTTP/1.1 ${status}\r\n`), `${JSON.stringify(request.slice(0, 40))}: ${answer}`);
      assert.equal(denied.length, 1, JSON.stringify(request.slice(0, 40)));
      if (event.reason instanceof RegExp) {
        assert.deepEqual({ ...denied[0], reason: "" }, { ...event, reason: "" });
        assert.match(denied[0].reason ?? "", event.reason);
      } else assert.deepEqual(denied, [event], JSON.stringify(request.slice(0, 40)));
    }
  });
});

test("EgressProxy bounds what an event quotes: a 16 KiB URL scheme gives a reason of at most MAX_REASON_LENGTH, and later decisions are still reported", async () => {
  await withProxy({ hosts: ["a.test"] }, async (proxyPort, events) => {
    const scheme = "a".repeat(16_300);
    const { answer, denied } = await refusedWith(proxyPort, events, `GET ${scheme}://x/ HTTP/1.1\r\nHost: x\r\n\r\n`);
    assert.ok(answer.startsWith("HTTP/1.1 400 Bad Request\r\n"), answer.slice(0, 80));
    assert.equal(denied.length, 1);
    // The scheme is quoted cut to 253 characters, like a host name.
    assert.deepEqual(denied, [{ event: "denied", host: "x", port: 0, reason: `${"a".repeat(253)}… URLs are not proxied as requests: use CONNECT (https) or http://` }]);
    assert.ok((denied[0].reason ?? "").length <= MAX_REASON_LENGTH);
    assert.ok(JSON.stringify(denied[0]).length < MAX_EGRESS_LINE_LENGTH / 4);
    // The next refusal is reported as usual.
    const next = await refusedWith(proxyPort, events, "CONNECT b.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n");
    assert.deepEqual(next.denied.map((e) => [e.event, e.host, e.port]), [["denied", "b.test", 443]]);
  });
});

test("EgressProxy refuses a request whose Connection field names a framing header (content-length, transfer-encoding, host) with 400 and a denied event", async () => {
  let reached = 0;
  const upstream = createServer((_req, res) => {
    reached += 1;
    res.end("ok");
  });
  const port = await localPort(upstream);
  try {
    await withProxy({ hosts: ["up.test"], resolve: { "up.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] }, async (proxyPort, events) => {
      const smuggled = `GET /smuggled HTTP/1.1\r\nHost: zz\r\n\r\n`;
      for (const [named, extra] of [
        ["content-length", `Content-Length: ${smuggled.length}\r\n`],
        ["transfer-encoding", "Transfer-Encoding: chunked\r\n"],
        ["host", ""],
      ]) {
        const body = named === "transfer-encoding" ? `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n` : named === "content-length" ? smuggled : "";
        const request = `GET http://up.test:${port}/a HTTP/1.1\r\nHost: up.test:${port}\r\n${extra}Connection: close, ${named}\r\n\r\n${body}`;
        const { answer, denied } = await refusedWith(proxyPort, events, request);
        assert.ok(answer.startsWith("HTTP/1.1 400 Bad Request\r\n"), `${named}: ${answer}`);
        assert.deepEqual(denied, [{
          event: "denied",
          host: "up.test",
          port,
          reason: `the Connection field names ${named}, which frames the request: remove it from Connection`,
        }]);
      }
      assert.equal(reached, 0);
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy refuses a request body whose Transfer-Encoding is not exactly chunked with 501 and a denied event, and forwards a chunked one", async () => {
  const bodies: string[] = [];
  const upstream = createServer((req, res) => {
    let body = "";
    req.setEncoding("latin1").on("data", (chunk: string) => (body += chunk)).on("end", () => {
      bodies.push(`${req.headers["transfer-encoding"]} ${body}`);
      res.end("ok");
    });
  });
  const port = await localPort(upstream);
  try {
    await withProxy({ hosts: ["up.test"], resolve: { "up.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] }, async (proxyPort, events) => {
      const post = (te: string) => `POST http://up.test:${port}/ HTTP/1.1\r\nHost: up.test:${port}\r\nTransfer-Encoding: ${te}\r\n\r\n5\r\nhello\r\n0\r\n\r\n`;
      for (const te of ["xchunked", "gzip", "gzip, chunked"]) {
        const { answer, denied } = await refusedWith(proxyPort, events, post(te));
        const reason = `the Transfer-Encoding field is "${te}", not chunked alone, the only transfer coding the proxy frames a request body by: send it with Content-Length or Transfer-Encoding: chunked`;
        assert.ok(answer.startsWith("HTTP/1.1 501 Not Implemented\r\n"), `${te}: ${answer}`);
        assert.ok(answer.includes(`\r\negress proxy: ${reason}\n`), `${te}: ${answer}`);
        assert.deepEqual(denied, [{ event: "denied", host: "up.test", port, reason }], te);
      }
      assert.deepEqual(bodies, []);
      // Chunked alone (any case) is framed and forwarded.
      const answer = (await exchange(proxyPort, Buffer.from(post("Chunked")))).toString("latin1");
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/u);
      assert.deepEqual(bodies, ["Chunked hello"]);
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy answers the first of pipelined requests only and reports the second denied", async () => {
  const upstream = createServer((req, res) => res.end(`hello ${req.url}`));
  const port = await localPort(upstream);
  try {
    await withProxy({ hosts: ["up.test"], resolve: { "up.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] }, async (proxyPort, events) => {
      const one = `GET http://up.test:${port}/one HTTP/1.1\r\nHost: up.test:${port}\r\n\r\n`;
      const two = `GET http://up.test:${port}/two HTTP/1.1\r\nHost: up.test:${port}\r\n\r\n`;
      const answer = (await exchange(proxyPort, Buffer.from(one + two))).toString("latin1");
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/u);
      assert.ok(answer.endsWith("\r\n\r\nhello /one"), answer);
      await until(() => events.some((e) => e.event === "closed"));
      assert.deepEqual(events.filter((e) => e.event === "denied"), [
        { event: "denied", host: "", port: 0, reason: "pipelined request (GET after the first request): one connection carries one request" },
      ]);
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy drops the headers the Connection field names, both ways", async () => {
  let seen: Record<string, unknown> = {};
  const upstream = createServer((req, res) => {
    seen = req.headers;
    res.writeHead(200, { connection: "x-hop-answer", "x-hop-answer": "secret", "x-kept": "yes" }).end("ok");
  });
  const port = await localPort(upstream);
  try {
    await withProxy({ hosts: ["up.test"], resolve: { "up.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] }, async (proxyPort) => {
      const request = `GET http://up.test:${port}/ HTTP/1.1\r\nHost: up.test:${port}\r\nConnection: close, X-Secret , x-other\r\nX-Secret: s\r\nX-Other: o\r\nX-Forwarded: f\r\n\r\n`;
      const answer = (await exchange(proxyPort, Buffer.from(request))).toString("latin1").toLowerCase();
      assert.equal(seen["x-secret"], undefined);
      assert.equal(seen["x-other"], undefined);
      assert.equal(seen["x-forwarded"], "f");
      assert.equal(seen.connection, "close");
      assert.match(answer, /^http\/1\.1 200 ok\r\n/u);
      assert.ok(!answer.includes("x-hop-answer: secret"), answer);
      assert.ok(answer.includes("\r\nx-kept: yes\r\n"), answer);
    });
  } finally {
    upstream.close();
  }
});

/**
 * A loopback listener that never accepts (a python3 child: a listening socket nobody calls
 * `accept` on; every JS runtime's server accepts at once), with its accept queue filled, so
 * the kernel drops further SYNs and a connect to it hangs. Returns its port and a stop.
 */
async function unansweredPort(): Promise<{ port: number; stop: () => void }> {
  const child = spawn("python3", ["-c", "import socket,sys,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(3600)"], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(child.stdout!, "data") as [Buffer];
  const port = Number(line.toString().trim());
  const fillers = Array.from({ length: 4 }, () => connect(port, "127.0.0.1").on("error", () => {}));
  return { port, stop: () => { for (const filler of fillers) filler.destroy(); child.kill(); } };
}

test("EgressProxy bounds the upstream connect of a CONNECT and of an absolute-form request by headersTimeoutMs", async () => {
  const { port, stop } = await unansweredPort();
  try {
    await withProxy({ hosts: ["slow.test"], resolve: { "slow.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"], headersTimeoutMs: 200 }, async (proxyPort, events) => {
      const tunnelled = await tunnel(proxyPort, `slow.test:${port}`);
      assert.equal(tunnelled.status, "HTTP/1.1 502 Bad Gateway");
      tunnelled.socket.destroy();
      assert.deepEqual(events, [{ event: "denied", host: "slow.test", port, reason: `cannot connect to 127.0.0.1:${port}: no answer within 200 ms` }]);
      const answer = await get(proxyPort, `http://slow.test:${port}/`);
      assert.deepEqual(answer, { status: 502, body: `egress proxy: upstream failed: no connection to 127.0.0.1:${port} within 200 ms\n` });
      await until(() => events.length === 3);
      assert.deepEqual(events.slice(1), [
        { event: "allowed", host: "slow.test", port, address: "127.0.0.1" },
        { event: "closed", host: "slow.test", port, address: "127.0.0.1", reason: `upstream failed: no connection to 127.0.0.1:${port} within 200 ms`, bytesOut: 0, bytesIn: 0 },
      ]);
    });
  } finally {
    stop();
  }
});
