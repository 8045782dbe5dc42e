// Reaching guest servers on a real Engine: fetch from busybox httpd in an isolated sandbox,
// concurrent binary echoes, a WebSocket echo through a forward, the forward gone after
// destroy, the guest gaining no listener and no route, bounds pushed past, faults of the
// guest server and of the host side, and stop() with connections open.
import assert from "node:assert/strict";
import { connect as netConnect } from "node:net";
import { SandboxConfigurationError, SandboxDeadlineError, SandboxQuotaError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { MAX_SANDBOX_CONNECTIONS, SandboxConnectionError } from "../../lib/sandbox/ports.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { webSocketRoundTrip } from "../unit/ports/_websocket.ts";
import { guestNetworkView, NODE_ECHO, NODE_WEBSOCKET_ECHO, pattern, startHttpd, startNodeServer, untilListening, withPortSandbox } from "./_ports.ts";

engineTest("DockerSandbox.fetch gets a file byte-exact from busybox httpd in an isolated sandbox", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    const data = pattern(700_000, 7);
    await sandbox.run("/bin/mkdir", ["-p", "www"]);
    await sandbox.writeFile("work/www/data.bin", data);
    await startHttpd(sandbox, 8080);
    const response = await sandbox.fetch(8080, "/data.bin");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-length"), String(data.byteLength));
    assert.deepEqual(new Uint8Array(await response.arrayBuffer()), data);
    const missing = await sandbox.fetch(8080, "/absent");
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
    const relay = await engine.request("GET", `/containers/${sandbox.names.relay}/json`);
    assert.equal(relay.status, 200, "the relay exists once connected");
  });
});

engineTest("DockerSandbox.connect carries 8 concurrent binary echoes exactly (node guest echo server), each half-closed", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    await startNodeServer(sandbox, NODE_ECHO, 7000);
    await Promise.all(Array.from({ length: 8 }, async (_, index) => {
      const data = pattern(1_500_000 + index * 4099, index + 1);
      const connection = await sandbox.connect(7000);
      const writing = (async () => {
        const writer = connection.writable.getWriter();
        for (let offset = 0; offset < data.byteLength; offset += 200_000) await writer.write(data.subarray(offset, offset + 200_000));
        await writer.close();
      })();
      const echoed = new Uint8Array(await new Response(connection.readable).arrayBuffer());
      await writing;
      await connection.closed;
      assert.equal(echoed.byteLength, data.byteLength, `connection ${index}`);
      assert.deepEqual(echoed, data, `connection ${index}`);
    }));
  }, { image: nodeImage });
});

engineTest("DockerSandbox.forwardPort relays a WebSocket echo to the host runtime's WebSocket client; the listener is gone after destroy()", async (engine) => {
  let port = 0;
  await withPortSandbox(engine, async (sandbox) => {
    await startNodeServer(sandbox, NODE_WEBSOCKET_ECHO, 9001);
    const forward = await sandbox.forwardPort(9001);
    port = forward.port;
    assert.match(forward.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const seen = await webSocketRoundTrip(forward, pattern(40_000, 3));
    assert.deepEqual(seen.map((event) => [event.event, event.reason]), [["opened", undefined], ["closed", "done"]]);
  }, { image: nodeImage });
  await assert.rejects(new Promise((resolve, reject) => {
    const probe = netConnect({ host: "127.0.0.1", port });
    probe.on("connect", () => resolve(probe.destroy()));
    probe.on("error", reject);
  }), /ECONNREFUSED/, "the forward's listener is gone after destroy()");
});

engineTest("DockerSandbox.connect: the guest gains no listener and no route from the relay or a forward", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    const before = await guestNetworkView(sandbox);
    await sandbox.connect(1).catch(() => {}); // creates the relay
    const forward = await sandbox.forwardPort(1);
    const after = await guestNetworkView(sandbox);
    assert.deepEqual(after.listening, before.listening, "nothing new listens in the guest's namespace");
    assert.equal(after.routes, before.routes, "no new route");
    assert.doesNotMatch(before.routes, /\n\S+\s+00000000\s/u, "isolated: no default route");
    // From the guest, the host's forward is not reachable: there is no address to reach it by.
    const probe = await sandbox.run("/bin/sh", ["-c", `nc -w 2 127.0.0.1 ${forward.port} </dev/null; echo "exit $?"`]);
    assert.match(probe.stdoutText + probe.stderrText, /exit [1-9]/);
    await forward.close();
  });
});

engineTest("DockerSandbox.connect to a port nothing listens on fails with SandboxConnectionError refused; a backend without a helper image is refused", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    await assert.rejects(sandbox.connect(4321), (error: unknown) => {
      assert.ok(error instanceof SandboxConnectionError);
      assert.equal(error.reason, "refused");
      assert.equal(error.message, "Cannot connect to port 4321 in the sandbox: connection refused (nothing listens on 127.0.0.1:4321 inside it)");
      return true;
    });
    await assert.rejects(sandbox.connect(70000), (error: unknown) => error instanceof SandboxConfigurationError && /port must be an integer from 1 to 65535/.test(error.message));
  });
  await withSandbox(engine, async (sandbox) => {
    await assert.rejects(sandbox.connect(80), (error: unknown) => {
      assert.ok(error instanceof SandboxConfigurationError);
      assert.match(error.message, /^Cannot connect to port 80 in the sandbox: the port relay needs the backend's helper image: set config\.proxyImageDigest/);
      return true;
    });
    // A forward that could never relay is refused at once, before it listens.
    await assert.rejects(sandbox.forwardPort(80), (error: unknown) => {
      assert.ok(error instanceof SandboxConfigurationError);
      assert.match(error.message, /^Cannot forward port 80 of the sandbox: the port relay needs the backend's helper image: set config\.proxyImageDigest/);
      return true;
    });
  });
});

engineTest("DockerSandbox.connect bound: the 65th open connection fails with SandboxQuotaError; abandoned ones free their place", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    await startNodeServer(sandbox, NODE_ECHO, 7000);
    const open = await Promise.all(Array.from({ length: MAX_SANDBOX_CONNECTIONS }, () => sandbox.connect(7000)));
    await assert.rejects(sandbox.connect(7000), (error: unknown) => {
      assert.ok(error instanceof SandboxQuotaError);
      assert.equal(error.message, `Cannot connect to port 7000 in the sandbox: ${MAX_SANDBOX_CONNECTIONS} connections of this sandbox are open, the most its relay carries; close one first`);
      return true;
    });
    // The host abandons every one: readables cancelled, writables aborted, without closing.
    await Promise.all(open.map((connection, index) => index % 2 ? connection.readable.cancel() : connection.writable.abort()));
    const again = await Promise.all(Array.from({ length: MAX_SANDBOX_CONNECTIONS }, () => sandbox.connect(7000)));
    const last = again[again.length - 1];
    const writer = last.writable.getWriter();
    await writer.write(new TextEncoder().encode("still relaying"));
    await writer.close();
    assert.equal(await new Response(last.readable).text(), "still relaying");
    await Promise.all(again.map((connection) => connection.close()));
  }, { image: nodeImage });
});

engineTest("DockerSandbox.fetch from a guest server that never answers, floods, or closes mid-stream ends typed and bounded", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    const servers = `
      const net = require("node:net");
      net.createServer((s) => s.on("error", () => {})).listen(7001, "127.0.0.1"); // never answers
      net.createServer((s) => { s.on("error", () => {}); s.write("HTTP/1.1 200 OK\\r\\n\\r\\n"); const big = Buffer.alloc(65536, 120); const pump = () => { while (s.write(big)); }; s.on("drain", pump); pump(); }).listen(7002, "127.0.0.1"); // floods
      net.createServer((s) => { s.on("error", () => {}); s.write("HTTP/1.1 200 OK\\r\\nContent-Length: 1000000\\r\\n\\r\\n" + "y".repeat(1000)); setTimeout(() => s.destroy(), 100); }).listen(7003, "127.0.0.1"); // closes mid-stream
    `;
    // Every server handles its sockets' errors: the readiness probes connect and close at once,
    // and an unhandled ECONNRESET would end the whole guest program (all three servers).
    await startNodeServer(sandbox, servers, 7003);
    // Each server listens once its own listen() went through: wait for every one of them.
    await untilListening(sandbox, 7001);
    await untilListening(sandbox, 7002);
    await assert.rejects(sandbox.fetch(7001, "/", { timeoutMs: 1000 }), (error: unknown) => {
      assert.ok(error instanceof SandboxDeadlineError, String(error));
      assert.equal(error.message, "Cannot fetch from port 7001 in the sandbox: the exchange took longer than 1000 ms (options.timeoutMs)");
      return true;
    });
    const flood = await sandbox.fetch(7002, "/", { maxBodyBytes: 5_000_000 });
    await assert.rejects(flood.arrayBuffer(), (error: unknown) => {
      assert.ok(error instanceof SandboxQuotaError);
      assert.equal(error.message, "Cannot fetch from port 7002 in the sandbox: the response body is larger than options.maxBodyBytes (5000000 bytes)");
      return true;
    });
    const cut = await sandbox.fetch(7003, "/");
    await assert.rejects(cut.arrayBuffer(), (error: unknown) => error instanceof SandboxConnectionError && /1000 of 1000000 bytes/.test(error.message));
    // A raw connection to the flooding server, abandoned by the host after one read.
    const raw = await sandbox.connect(7002);
    const reader = raw.readable.getReader();
    await reader.read();
    await reader.cancel();
    await raw.closed;
    const response = await sandbox.fetch(7002, "/", { maxBodyBytes: 100_000 });
    await assert.rejects(response.text(), SandboxQuotaError);
  }, { image: nodeImage });
});

engineTest("DockerSandbox.stop() with 10 connections open ends each with the stop cause and removes the relay", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    await startNodeServer(sandbox, NODE_ECHO, 7000);
    const connections = await Promise.all(Array.from({ length: 10 }, () => sandbox.connect(7000)));
    // Each read rejects while stop() runs, before the assertions below await it: mark it handled.
    const reads = connections.map((connection) => {
      const read = new Response(connection.readable).arrayBuffer();
      read.catch(() => {});
      return read;
    });
    const forward = await sandbox.forwardPort(7000);
    const relay = (await engine.request("GET", `/containers/${sandbox.names.relay}/json`)).status;
    assert.equal(relay, 200);
    await sandbox.stop();
    for (const read of reads) await assert.rejects(read, (error: unknown) => error instanceof SandboxStoppedError && error.message === "Cannot continue: the sandbox was stopped");
    for (const connection of connections) await assert.rejects(connection.closed, SandboxStoppedError);
    await forward.closed;
    await assert.rejects(engine.request("GET", `/containers/${sandbox.names.relay}/json`), (error: unknown) => (error as { code?: string }).code === "not_found");
    await assert.rejects(sandbox.connect(7000), SandboxStoppedError);
  }, { image: nodeImage });
});

engineTest("DockerSandbox.forwardPort: a guest server that never ends its side is reset halfCloseTimeoutMs after the host client ended, and its place is free again", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    // Reads, never answers, never ends: a host client's FIN would otherwise hold the place forever.
    await startNodeServer(sandbox, `require("node:net").createServer({ allowHalfOpen: true }, (s) => { s.on("data", () => {}); s.on("error", () => {}); }).listen(Number(process.argv[1]), "127.0.0.1");`, 7300);
    await assert.rejects(sandbox.forwardPort(7300, { halfCloseTimeoutMs: 0 }), (error) => error instanceof SandboxConfigurationError && /options\.halfCloseTimeoutMs/u.test(error.message));
    await using forward = await sandbox.forwardPort(7300, { maxConnections: 1, halfCloseTimeoutMs: 300 });
    const events = forward.events[Symbol.asyncIterator]();
    const next = async () => (await events.next()).value!;
    const visit = () => {
      const client = netConnect({ host: "127.0.0.1", port: forward.port, allowHalfOpen: true });
      client.on("error", () => {});
      client.on("connect", () => client.end("hello"));
      return client;
    };
    const first = visit();
    assert.equal((await next()).event, "opened");
    const closed = await next();
    assert.equal(closed.event, "closed");
    assert.equal(closed.reason, "half_close_timeout");
    assert.equal(closed.message, "Cannot relay port 7300: the guest did not end its side within 300 ms of the host client's end (options.halfCloseTimeoutMs)");
    first.destroy();
    const second = visit();
    assert.equal((await next()).event, "opened", "the place is free again");
    second.destroy();
  }, { image: nodeImage });
});
