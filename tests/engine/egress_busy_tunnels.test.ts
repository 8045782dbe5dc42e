// Busy tunnels up to the largest `maxConnections` (issue 14, review item 2): the guest opens
// MAX_EGRESS_CONNECTIONS − 1 tunnels to an upstream that never reads and pushes into each
// until it blocks (a bulk upload each), which is the most the proxy can be made to hold in
// its own buffers. The proxy must hold them all within its 128 MiB: not OOM-killed, still
// running, answering an allowed request through the one slot left, and serving again once
// the tunnels close. It runs under every runtime like the other engine tests (a few
// seconds each). Each run leaves the busy tunnels' sockets (orphaned, up to the socket
// buffer caps of kernel TCP memory each) on the host for minutes: keep runs of this file
// few and watch `grep TCP: /proc/net/sockstat`.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { lines } from "../../lib/sandbox/lines.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { MAX_EGRESS_CONNECTIONS } from "../../lib/sandbox/network_allowlist.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { GUEST_CLIENT, hostAddress, startUpstreams } from "./_egress.ts";
import { assertGone, recordingPort, withBackend } from "./_sandbox.ts";

/** Tunnels the guest opens: all but one of the largest `maxConnections` (the one left is for the check). */
const TUNNELS = MAX_EGRESS_CONNECTIONS - 1;

/**
 * The guest: TUNNELS CONNECTs to sink.test:<port>, each pushed into for as long as it drains
 * (as a bulk upload does); one JSON line once every tunnel is established and has blocked
 * once (or one failed), then it holds them open, still pushing, until killed.
 */
const BUSY_CLIENT = String.raw`
import net from "node:net";
const [port, count] = process.argv.slice(2).map(Number);
const proxy = new URL(process.env.HTTPS_PROXY);
const state = { established: 0, blocked: 0, refused: 0, closed: 0 };
let printed = false;
const report = () => { if (!printed && (state.blocked === count || state.refused + state.closed > 0)) { printed = true; process.stdout.write(JSON.stringify(state) + "\n"); } };
const chunk = Buffer.alloc(65536, 97);
const open = () => new Promise((resolve) => {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let head = "";
  const onHead = (data) => {
    head += data.toString("latin1");
    if (!head.includes("\r\n\r\n")) return;
    socket.off("data", onHead);
    if (!head.startsWith("HTTP/1.1 200 ")) { state.refused++; report(); return resolve(); }
    state.established++;
    let blocked = false;
    const push = () => {
      while (socket.write(chunk));
      if (!blocked) { blocked = true; state.blocked++; report(); resolve(); }
    };
    socket.on("drain", push);
    push();
  };
  socket.on("connect", () => socket.write("CONNECT sink.test:" + port + " HTTP/1.1\r\n\r\n"));
  socket.on("data", onHead);
  socket.on("error", () => {});
  socket.on("close", () => { state.closed++; report(); resolve(); });
});
for (let started = 0; started < count; started += 32) await Promise.all(Array.from({ length: Math.min(32, count - started) }, open));
setInterval(() => {}, 60000);
`;

engineTest("DockerSandbox allowlist: busy tunnels up to the largest maxConnections stay within the proxy's memory (it keeps running, serves an allowed request, and serves again once they close)", async (engine) => {
  const up = await startUpstreams();
  // An upstream that accepts and never reads: every tunnel's bytes back up into the proxy.
  const held: Socket[] = [];
  const sink = createServer((socket) => {
    held.push(socket);
    socket.pause();
    socket.on("error", () => {});
  });
  sink.listen(0, "0.0.0.0");
  await once(sink, "listening");
  const sinkPort = (sink.address() as AddressInfo).port;
  try {
    await withBackend(async (backend) => {
      const sandbox = await backend.reserve({
        policy: {
          resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 128 },
          network: {
            kind: "allowlist",
            hosts: ["sink.test", "allowed.test"],
            addresses: [hostAddress()],
            resolve: { "sink.test": [up.hostAddress], "allowed.test": [up.hostAddress] },
            maxConnections: MAX_EGRESS_CONNECTIONS,
          },
        },
      }, recordingPort()).start();
      try {
        await sandbox.writeFile("work/busy.mjs", BUSY_CLIENT);
        await sandbox.writeFile("work/client.mjs", GUEST_CLIENT);
        const busy = await sandbox.reserveProcess({
          executable: "/usr/local/bin/node",
          args: ["/workspace/work/busy.mjs", String(sinkPort), String(TUNNELS)],
        }).start();
        await busy.stdin.close();
        let first: string | undefined;
        for await (const line of lines(busy.stdout)) {
          first = line;
          break;
        }
        assert.deepEqual(JSON.parse(first ?? "{}"), { established: TUNNELS, blocked: TUNNELS, refused: 0, closed: 0 }, `the proxy dropped tunnels; sandbox ${sandbox.state}: ${String(sandbox.stopCause ?? "")}`);
        // With every tunnel held and blocked, the proxy still answers an allowed request…
        const check = await sandbox.run("/usr/local/bin/node", ["/workspace/work/client.mjs", "http", `http://allowed.test:${up.httpPort}/still`]);
        assert.deepEqual(JSON.parse(check.stdoutText.trim()), { status: 200, body: `upstream allowed.test:${up.httpPort} /still` });
        // …and was never OOM-killed.
        const proxy = await inspectContainer(engine, sandbox.resources.proxyId!);
        assert.equal(proxy.State.Running, true);
        assert.equal(proxy.State.OOMKilled, false);
        assert.equal(sandbox.state, "running");
        // Once the tunnels close, their slots serve again.
        await busy.kill();
        const again = await eventually("an allowed request after the busy tunnels closed", async () => {
          const result = await sandbox.run("/usr/local/bin/node", ["/workspace/work/client.mjs", "http", `http://allowed.test:${up.httpPort}/again`]);
          const answer = JSON.parse(result.stdoutText.trim() || "{}");
          return answer.status === 200 ? answer : undefined;
        }, { deadlineMs: 120_000, intervalMs: 500 });
        assert.deepEqual(again, { status: 200, body: `upstream allowed.test:${up.httpPort} /again` });
        assert.equal((await inspectContainer(engine, sandbox.resources.proxyId!)).State.Running, true);
      } finally {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
    }, nodeImage, undefined, [], nodeImage);
  } finally {
    for (const socket of held) socket.destroy();
    sink.close();
    await up.close();
  }
}, { timeout: 300_000 });
