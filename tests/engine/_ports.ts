// Helpers of the port tests: a sandbox whose backend has the node guest as its helper image
// (`config.proxyImageDigest`, which the port relay runs), guest servers (busybox httpd, a node
// echo server, a node WebSocket echo server), waiting until a guest port accepts, and the
// guest's view of its own listeners and routes.
import assert from "node:assert/strict";
import type { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { SandboxConnectionError } from "../../lib/sandbox/ports.ts";
import { busyboxImage, eventually, nodeImage } from "./_engine.ts";
import { testPolicy, withSandbox } from "./_sandbox.ts";

/** Run `fn` with a sandbox (busybox guest unless `image`) whose backend can relay ports. */
export async function withPortSandbox(
  engine: DockerEngine,
  fn: (sandbox: DockerSandbox) => Promise<void>,
  options: { image?: string; policy?: SandboxPolicyInput } = {},
): Promise<void> {
  await withSandbox(engine, async (sandbox) => {
    try {
      await fn(sandbox);
    } finally {
      const relay = sandbox.names.relay;
      await sandbox.destroy();
      // The relay, created on the first connect, goes with the sandbox.
      await assert.rejects(engine.request("GET", `/containers/${relay}/json`), (error: unknown) => (error as { code?: string }).code === "not_found", "the relay is gone");
    }
  }, { image: options.image ?? busyboxImage, policy: options.policy ?? testPolicy, config: { proxyImageDigest: nodeImage } });
}

/** Resolves once the guest's `port` accepts a connection (a refusal means "not yet"). */
export async function untilListening(sandbox: DockerSandbox, port: number): Promise<void> {
  await eventually(`guest port ${port} listening`, async () => {
    try {
      const connection = await sandbox.connect(port);
      await connection.close();
      return true;
    } catch (error) {
      if (error instanceof SandboxConnectionError && error.reason === "refused") return undefined;
      throw error;
    }
  }, { intervalMs: 100 });
}

/** Start busybox httpd serving `/workspace/work/www` on the guest's `127.0.0.1:port`. */
export async function startHttpd(sandbox: DockerSandbox, port: number): Promise<void> {
  await sandbox.reserveProcess({ executable: "/bin/busybox", args: ["httpd", "-f", "-p", `127.0.0.1:${port}`, "-h", "/workspace/work/www"] }).start();
  await untilListening(sandbox, port);
}

/** A node echo server on the guest's `127.0.0.1:port` (half-close aware). */
export const NODE_ECHO = `
const net = require("node:net");
net.createServer({ allowHalfOpen: true }, (socket) => { socket.on("error", () => {}); socket.pipe(socket); }).listen(Number(process.argv[1]), "127.0.0.1");
`;

/** A minimal WebSocket echo server for the node guest (RFC 6455; text and binary). */
export const NODE_WEBSOCKET_ECHO = `
const net = require("node:net");
const crypto = require("node:crypto");
net.createServer((socket) => {
  let buffer = Buffer.alloc(0), upgraded = false;
  socket.on("error", () => {});
  socket.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!upgraded) {
      const end = buffer.indexOf("\\r\\n\\r\\n");
      if (end < 0) return;
      const key = /sec-websocket-key: *([^\\r\\n]+)/i.exec(buffer.subarray(0, end).toString("latin1"))[1];
      const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
      socket.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + "\\r\\n\\r\\n");
      buffer = buffer.subarray(end + 4);
      upgraded = true;
    }
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0] & 15;
      let length = buffer[1] & 127, offset = 2;
      if (length === 126) { length = buffer.readUInt16BE(2); offset = 4; }
      else if (length === 127) { length = Number(buffer.readBigUInt64BE(2)); offset = 10; }
      const total = offset + 4 + length;
      if (buffer.length < total) return;
      const mask = buffer.subarray(offset, offset + 4);
      const payload = Buffer.from(buffer.subarray(offset + 4, total));
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      buffer = buffer.subarray(total);
      if (opcode === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      const header = payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : Buffer.from([0x80 | opcode, 126, payload.length >> 8, payload.length & 255]);
      socket.write(Buffer.concat([header, payload]));
    }
  });
}).listen(Number(process.argv[1]), "127.0.0.1");
`;

/** Start `program` (CommonJS text) with node in the guest, given `port` as its argument. */
export async function startNodeServer(sandbox: DockerSandbox, program: string, port: number): Promise<void> {
  await sandbox.reserveProcess({ executable: "/usr/local/bin/node", args: ["-e", program, String(port)] }).start();
  await untilListening(sandbox, port);
}

/** The guest's own view: its listening TCP sockets (`/proc/net/tcp{,6}` state 0A) and routes. */
export async function guestNetworkView(sandbox: DockerSandbox): Promise<{ listening: string[]; routes: string }> {
  const result = await sandbox.run("/bin/sh", ["-c", "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; echo ---; cat /proc/net/route /proc/net/ipv6_route 2>/dev/null"]);
  const [sockets, routes] = result.stdoutText.split("---\n");
  const listening = sockets.split("\n").map((line) => line.trim().split(/\s+/u)).filter((fields) => fields[3] === "0A").map((fields) => fields[1]).sort();
  return { listening, routes };
}

/** Deterministic bytes (the files tests' generator). */
export { bytes as pattern } from "./_files.ts";
