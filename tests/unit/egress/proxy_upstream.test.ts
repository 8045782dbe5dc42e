// The egress proxy against hostile upstreams on the allowlist: a malformed reply is answered
// 502 with a denied event and never ends the proxy, and no connection state escapes the idle
// bound (a 101 to a plain request, an answer the guest does not read).
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { type AddressInfo, connect, createServer as createTcpServer, type Server, type Socket } from "node:net";
import { test } from "node:test";
import type { EgressEvent } from "../../../lib/docker/egress/proxy_program.ts";
import { get, localPort, refusedWith, until, withProxy } from "./_proxy.ts";

const allow = { hosts: ["up.test", "ok.test"], resolve: { "up.test": ["127.0.0.1"], "ok.test": ["127.0.0.1"] }, addresses: ["127.0.0.1"] };

/**
 * A raw TCP upstream that answers the first bytes of each connection with `reply` and then
 * keeps the connection open (so only the proxy can end it). `stop` destroys what it holds.
 */
async function rawUpstream(reply: string): Promise<{ port: number; stop: () => void }> {
  const held = new Set<Socket>();
  const server: Server = createTcpServer((socket) => {
    held.add(socket);
    socket.on("error", () => {}).once("data", () => socket.write(reply));
  });
  const port = await localPort(server);
  return { port, stop: () => { for (const socket of held) socket.destroy(); server.close(); } };
}

/** A well-behaved upstream answering `ok`. */
async function okUpstream(): Promise<{ port: number; stop: () => void }> {
  const server = createServer((_req, res) => res.end("ok"));
  const port = await localPort(server);
  return { port, stop: () => server.close() };
}

const malformed = "upstream sent a malformed reply";
const cases: [string, string, string][] = [
  ["099", "HTTP/1.1 099 X\r\ncontent-length: 2\r\n\r\nok", `${malformed}: status 99 is not a final status (200 to 599)`],
  ["000", "HTTP/1.1 000 X\r\ncontent-length: 2\r\n\r\nok", `${malformed}: status 0 is not a final status (200 to 599)`],
  ["1000", "HTTP/1.1 1000 X\r\ncontent-length: 2\r\n\r\nok", `${malformed}: Invalid response status (HPE_INVALID_STATUS)`],
  ["600", "HTTP/1.1 600 X\r\ncontent-length: 2\r\n\r\nok", `${malformed}: status 600 is not a final status (200 to 599)`],
  ["101 to a plain request", "HTTP/1.1 101 Switching Protocols\r\n\r\n", `${malformed}: 101 Switching Protocols to a request that asked for no upgrade`],
  ["101 with Upgrade to a plain request", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\nhello", `${malformed}: 101 Switching Protocols to a request that asked for no upgrade`],
  ["Transfer-Encoding chunked, gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nRAWBYTES", `${malformed}: its Transfer-Encoding is "chunked, gzip", not chunked alone`],
];

test("EgressProxy answers a malformed upstream status (099, 000, 1000, 600, a 101 to a plain request) with 502 and a denied event, and serves the next request", { timeout: 60_000 }, async () => {
  const ok = await okUpstream();
  try {
    await withProxy(allow, async (proxyPort, events) => {
      for (const [name, reply, reason] of cases) {
        const upstream = await rawUpstream(reply);
        try {
          const from = events.length;
          const answer = await get(proxyPort, `http://up.test:${upstream.port}/`);
          assert.deepEqual(answer, { status: 502, body: `egress proxy: ${reason}\n` }, name);
          await until(() => events.slice(from).some((e) => e.event === "closed"));
          const port = upstream.port;
          assert.deepEqual(events.slice(from), [
            { event: "allowed", host: "up.test", port, address: "127.0.0.1" },
            { event: "denied", host: "up.test", port, reason },
            { event: "closed", host: "up.test", port, address: "127.0.0.1", reason, bytesOut: 0, bytesIn: 0 },
          ], name);
          // The proxy lives on and serves the next request.
          assert.deepEqual(await get(proxyPort, `http://ok.test:${ok.port}/`), { status: 200, body: "ok" }, name);
        } finally {
          upstream.stop();
        }
      }
    });
  } finally {
    ok.stop();
  }
});

test("EgressProxy closes and frees a connection whose upstream answers 101 to a plain request, so the next request within maxConnections is served", { timeout: 60_000 }, async () => {
  const upstream = await rawUpstream("HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\n");
  const ok = await okUpstream();
  try {
    await withProxy({ ...allow, idleTimeoutMs: 2_000, maxConnections: 2 }, async (proxyPort, events, proxy) => {
      const answers = await Promise.all([1, 2].map(() => get(proxyPort, `http://up.test:${upstream.port}/`)));
      assert.deepEqual(answers.map((a) => a.status), [502, 502]);
      await until(() => proxy.connections === 0);
      const reason = `${malformed}: 101 Switching Protocols to a request that asked for no upgrade`;
      assert.deepEqual(events.filter((e) => e.event !== "allowed").map((e) => [e.event, e.reason]).sort(), [
        ["closed", reason], ["closed", reason], ["denied", reason], ["denied", reason],
      ]);
      assert.deepEqual(await get(proxyPort, `http://ok.test:${ok.port}/`), { status: 200, body: "ok" });
    });
  } finally {
    upstream.stop();
    ok.stop();
  }
});

test("EgressProxy closes an answer the guest does not read after idleTimeoutMs, also when the upstream has sent all of it and left", { timeout: 60_000 }, async () => {
  // An upstream that sends `x-size` bytes and closes. The proxy reads from it only as the
  // guest's side drains, so an answer the kernel's buffers and the proxy's hold entirely
  // leaves the upstream done while the rest waits for a guest that does not read: only the
  // guest's own idle bound can end that. How much those buffers hold is the kernel's, so it is
  // measured first (what the proxy had read when it cut a 32 MiB answer), and sizes around it
  // are tried at once.
  const upstream = createServer((req, res) => res.end(Buffer.alloc(Number(req.headers["x-size"] ?? 0), 0x78)));
  const port = await localPort(upstream);
  const sockets: Socket[] = [];
  try {
    await withProxy({ ...allow, idleTimeoutMs: 1_000, maxConnections: 16 }, async (proxyPort, events, proxy) => {
      const request = (size: number) => {
        const socket = connect({ port: proxyPort, host: "127.0.0.1", allowHalfOpen: true }, () => socket.write(`GET http://up.test:${port}/ HTTP/1.1\r\nHost: up.test\r\nx-size: ${size}\r\n\r\n`));
        socket.pause();
        sockets.push(socket.on("error", () => {}));
      };
      request(32 * 1024 * 1024);
      await until(() => events.some((e) => e.event === "closed"));
      const first = events.find((e) => e.event === "closed") as EgressEvent;
      assert.equal(first.reason, "idle for 1000 ms");
      const held = first.bytesIn!;
      await until(() => proxy.connections === 0);
      const sizes = Array.from({ length: 12 }, (_, index) => held - 96 * 1024 + index * 12 * 1024);
      for (const size of sizes) request(size);
      await until(() => events.filter((e) => e.event === "closed").length === 1 + sizes.length);
      await until(() => proxy.connections === 0);
      const closed = events.filter((e) => e.event === "closed").slice(1);
      assert.ok(closed.every((e) => e.reason === "ended" || e.reason === "idle for 1000 ms"), JSON.stringify(closed));
    });
  } finally {
    for (const socket of sockets) socket.destroy();
    upstream.close();
  }
});

test("EgressProxy keeps a tunnel and a request that move a byte every 100 ms open past idleTimeoutMs, both ways", { timeout: 60_000 }, async () => {
  // Twenty bytes, one every 100 ms, with an idle bound of 1,000 ms: slow is not idle.
  const drip = (write: (byte: string) => void, done: () => void) => {
    let sent = 0;
    const timer = setInterval(() => {
      write("x");
      if (++sent === 20) {
        clearInterval(timer);
        done();
      }
    }, 100);
  };
  const tunnelUpstream = createTcpServer((socket) => {
    socket.on("error", () => {});
    socket.once("data", (first: Buffer) => {
      if (first.toString() === "down") drip((byte) => socket.write(byte), () => socket.end());
      else socket.on("data", () => {}).on("end", () => socket.end());
    });
  });
  const requestUpstream = createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-length": "20" });
      drip((byte) => res.write(byte), () => res.end());
    } else {
      let received = 0;
      req.on("data", (chunk: Buffer) => (received += chunk.length)).on("end", () => res.end(`${received}`));
    }
  });
  const tunnelPort = await localPort(tunnelUpstream);
  const requestPort = await localPort(requestUpstream);
  try {
    await withProxy({ ...allow, idleTimeoutMs: 1_000 }, async (proxyPort, events) => {
      // `up`: drip twenty bytes after the head, then end the guest's side ("end") or not ("stay": a request waits for its answer).
      const guest = (head: string, up?: "end" | "stay") =>
        new Promise<string>((resolve) => {
          let received = "";
          const socket = connect(proxyPort, "127.0.0.1", () => {
            socket.write(head);
            if (up) drip((byte) => socket.write(byte), () => up === "end" && socket.end());
          });
          socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1"))).on("error", () => {}).on("close", () => resolve(received));
        });
      const connectHead = `CONNECT up.test:${tunnelPort} HTTP/1.1\r\nHost: up.test:${tunnelPort}\r\n\r\n`;
      const answers = await Promise.all([
        guest(`${connectHead}up`, "end"),
        guest(`${connectHead}down`),
        guest(`POST http://up.test:${requestPort}/ HTTP/1.1\r\nHost: up.test\r\ncontent-length: 20\r\n\r\n`, "stay"),
        guest(`GET http://up.test:${requestPort}/ HTTP/1.1\r\nHost: up.test\r\n\r\n`),
      ]);
      assert.ok(answers[1].endsWith("x".repeat(20)), answers[1]);
      assert.ok(answers[2].endsWith("\r\n\r\n20"), JSON.stringify(answers));
      assert.ok(answers[3].endsWith("\r\n\r\n" + "x".repeat(20)), answers[3]);
      await until(() => events.filter((e) => e.event === "closed").length === 4);
      const closed = events.filter((e) => e.event === "closed").map((e) => [e.reason, e.bytesOut, e.bytesIn]).sort();
      assert.deepEqual(closed, [["ended", 0, 20], ["ended", 20, 2], ["ended", 2 + 20, 0], ["ended", 4, 20]].sort());
    });
  } finally {
    tunnelUpstream.close();
    requestUpstream.close();
  }
});

test("EgressProxy opens no upstream for a guest that left during the lookup or the connect: every allowed event gets its closed event, and no upstream connection stays", { timeout: 60_000 }, async () => {
  const upstream = createTcpServer((socket) => socket.on("error", () => {}));
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  const port = (upstream.address() as AddressInfo).port;
  const open = async () => await new Promise<number>((resolve) => upstream.getConnections((_error, count) => resolve(count)));
  try {
    // "localhost" is looked up for real, so each request waits on the resolver a moment.
    await withProxy({ hosts: ["localhost"], addresses: ["127.0.0.1", "::1"], idleTimeoutMs: 60_000 }, async (proxyPort, events) => {
      for (let round = 0; round < 100; round++) {
        const socket = connect(proxyPort, "127.0.0.1");
        await once(socket, "connect");
        socket.write(round % 2 === 0 ? `GET http://localhost:${port}/ HTTP/1.1\r\nhost: x\r\n\r\n` : `CONNECT localhost:${port} HTTP/1.1\r\nhost: x\r\n\r\n`);
        socket.resetAndDestroy();
      }
      // The bound is the event: far below idleTimeoutMs, every upstream is gone and reported.
      for (let waited = 0; ; waited += 50) {
        const allowed = events.filter((event) => event.event === "allowed").length;
        const closed = events.filter((event) => event.event === "closed").length;
        if (allowed === closed && (await open()) === 0) break;
        if (waited > 20_000) assert.fail(`after 20 s: ${allowed} allowed, ${closed} closed, ${await open()} upstream connections open`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
  } finally {
    upstream.close();
  }
});

test("EgressProxy refuses an Expect other than 100-continue with 417 and a denied event, and closes the connection after it", { timeout: 60_000 }, async () => {
  await withProxy({ hosts: ["a.test"] }, async (proxyPort, events) => {
    const { answer, denied } = await refusedWith(proxyPort, events, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nExpect: x-magic\r\n\r\nGET http://a.test/again HTTP/1.1\r\nHost: a.test\r\n\r\n");
    const why = 'the Expect field is "x-magic", which the proxy does not meet: send the request without it';
    assert.match(answer, /^HTTP\/1\.1 417 /u);
    assert.equal(answer.match(/HTTP\/1\.1 /gu)?.length, 1, "one answer: the request behind it is never served");
    assert.deepEqual(denied, [
      { event: "denied", host: "", port: 0, reason: why },
      { event: "denied", host: "", port: 0, reason: "pipelined request (GET after the first request): one connection carries one request" },
    ]);
  });
});
