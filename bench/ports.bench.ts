/**
 * Port relay benchmark, side by side in one run on one engine and one `outbound` sandbox
 * (node guest; its backend's helper image is the node guest too):
 *
 * - 256 MiB from a guest server (node, writing one 1 MiB buffer 256 times, listening on
 *   0.0.0.0) to the host, through `sandbox.connect()` (the relay), through
 *   `docker exec -i <keeper> nc 127.0.0.1 <port>` (the docker CLI; stdout read by this
 *   process), and through a direct TCP connection to the keeper's bridge address (what
 *   `outbound` allows; the floor). Wall time, this process's CPU, and for the CLI its own
 *   CPU (GNU time). Ratios to the direct connection. Guest → host also has the Engine's own
 *   floor: an exec writing the same bytes in 1 MiB pieces (`dd`, no TCP at all) whose attach
 *   stream a bare `node:net` socket only counts (no framing, no demultiplexing, no CLI) — the
 *   most any path through the Engine's attach copy carries on this machine. (Not `nc`: busybox
 *   `nc` writes its output in small pieces, which costs the Engine more than the copy itself.)
 * - the same 256 MiB host → guest (the guest counts and answers the count).
 * - time to the first body byte of `sandbox.fetch()` on a warm sandbox (relay running) vs
 *   the runtime's own `fetch()` of the bridge address; and the first `connect()` of a sandbox
 *   (the relay's creation).
 *
 * Run with any runtime (`npm run bench:ports` runs Node). The engine is `AGENTCELL_TEST_ENGINE`
 * (default the private test engine), the guest `AGENTCELL_TEST_NODE_IMAGE` (required), the
 * CLI `DOCKER_CLI` (default `/usr/local/bin/docker`). `BENCH_PORT_ROUNDS` (default 3) rounds
 * interleave the variants; `BENCH_PORT_MIB` (default 256) sets the size.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createDockerSandboxBackend, type DockerSandbox } from "../mod.ts";
import { inspectContainer } from "../lib/engine/containers.ts";
import { DockerEngine } from "../lib/engine/client.ts";
import { containerNetworks } from "../lib/docker/egress/proxy_container.ts";
import { netFloor } from "./_floor.ts";
import { runtimeName } from "./_setup.ts";
import { summarize } from "./_stats.ts";

const endpoint = process.env.AGENTCELL_TEST_ENGINE ?? "unix:///run/agentcell-test-engine/docker.sock";
const nodeImage = process.env.AGENTCELL_TEST_NODE_IMAGE ?? "";
if (!/^sha256:[0-9a-f]{64}$/u.test(nodeImage)) throw new Error("Cannot run the port benchmark: set AGENTCELL_TEST_NODE_IMAGE to the node guest's image ID");
const dockerCli = process.env.DOCKER_CLI ?? "/usr/local/bin/docker";
const rounds = Number(process.env.BENCH_PORT_ROUNDS ?? 3);
const MIB = 1024 * 1024;
const bytes = Number(process.env.BENCH_PORT_MIB ?? 256) * MIB;
const SEND_PORT = 7100;
const SINK_PORT = 7101;
const HTTP_PORT = 7102;

// Guest servers: a sender (writes `bytes` then ends), a sink (counts to end, answers the
// count), and a tiny HTTP server (200, 2-byte body), all on 0.0.0.0 for the direct variant.
// The sender allows half-open sockets: each variant half-closes its side first, and a node
// server that does not would end its own side at that FIN, mid-transfer.
const SERVERS = `
const net = require("node:net"), http = require("node:http");
const total = ${bytes}, block = Buffer.alloc(${MIB}, 97);
net.createServer({ allowHalfOpen: true }, (s) => { s.on("error", () => {}); let sent = 0; const pump = () => { while (sent < total) { sent += block.length; if (!s.write(block)) return; } s.end(); }; s.on("drain", pump); pump(); }).listen(${SEND_PORT}, "0.0.0.0");
net.createServer({ allowHalfOpen: true }, (s) => { s.on("error", () => {}); let n = 0; s.on("data", (c) => n += c.length); s.on("end", () => s.end(String(n))); }).listen(${SINK_PORT}, "0.0.0.0");
http.createServer((q, r) => r.end("ok")).listen(${HTTP_PORT}, "0.0.0.0");
`;

interface Sample {
  readonly ms: number;
  readonly cpuMs: number;
  readonly childCpuMs?: number;
}

async function measure(fn: () => Promise<number | void>): Promise<Sample & { extra?: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const extra = await fn();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, childCpuMs: typeof extra === "number" ? extra : undefined };
}

async function drain(readable: ReadableStream<Uint8Array>): Promise<number> {
  let total = 0;
  for await (const chunk of readable) total += chunk.byteLength;
  return total;
}

/** `docker exec -i C nc 127.0.0.1 P` under GNU time; resolves with the CLI's CPU ms. */
function viaCli(keeperId: string, port: number, upload: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/time", ["-f", "%U %S", dockerCli, "-H", endpoint, "exec", "-i", keeperId, "nc", "127.0.0.1", String(port)], {
      stdio: [upload ? "pipe" : "ignore", "pipe", "pipe"],
    });
    let received = 0;
    let stderr = "";
    child.stdout!.on("data", (chunk: Uint8Array) => (received += chunk.byteLength));
    child.stderr!.on("data", (chunk: Uint8Array) => (stderr += new TextDecoder().decode(chunk)));
    if (upload) {
      const block = new Uint8Array(MIB).fill(98);
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          sent += MIB;
          if (!child.stdin!.write(block)) return void child.stdin!.once("drain", pump);
        }
        child.stdin!.end();
      };
      pump();
    }
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0 && !(upload && code === 1)) return reject(new Error(`docker exec nc exited ${code}: ${stderr}`));
      if (!upload && received !== bytes) return reject(new Error(`docker exec nc gave ${received} bytes`));
      const [user, system] = stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
      resolve((user + system) * 1000);
    });
  });
}

function direct(address: string, port: number, upload: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: address, port, allowHalfOpen: true });
    let received = 0;
    socket.on("data", (chunk: Uint8Array) => (received += chunk.byteLength));
    socket.on("error", reject);
    socket.on("connect", () => {
      if (!upload) return;
      const block = new Uint8Array(MIB).fill(98);
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          sent += MIB;
          if (!socket.write(block)) return void socket.once("drain", pump);
        }
        socket.end();
      };
      pump();
    });
    socket.on("end", () => {
      socket.end();
      if (!upload && received !== bytes) reject(new Error(`direct gave ${received} bytes`));
      else resolve();
    });
  });
}

async function viaRelay(sandbox: DockerSandbox, port: number, upload: boolean): Promise<void> {
  const connection = await sandbox.connect(port);
  if (upload) {
    const writer = connection.writable.getWriter();
    const block = new Uint8Array(MIB).fill(98);
    for (let sent = 0; sent < bytes; sent += MIB) await writer.write(block);
    await writer.close();
    const answer = await new Response(connection.readable).text();
    if (Number(answer) !== bytes) throw new Error(`the sink counted ${answer}`);
  } else {
    await connection.writable.close();
    const received = await drain(connection.readable);
    if (received !== bytes) throw new Error(`the relay gave ${received} bytes`);
  }
  await connection.close();
}

function row(name: string, variants: [string, Sample[]][], floor: string): void {
  const floorMs = summarize(variants.find(([label]) => label === floor)![1].map((s) => s.ms)).median;
  console.log(`\n### ${name} (${runtimeName()}, ${bytes / MIB} MiB, ${rounds} rounds, medians)\n`);
  console.log("| variant | wall | MB/s | rate vs direct | CPU (this process) | CPU (CLI child) |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const [label, samples] of variants) {
    const wall = summarize(samples.map((s) => s.ms)).median;
    const cpu = summarize(samples.map((s) => s.cpuMs)).median;
    const child = samples[0].childCpuMs === undefined ? "–" : `${summarize(samples.map((s) => s.childCpuMs!)).median.toFixed(0)} ms`;
    console.log(`| ${label} | ${wall.toFixed(0)} ms | ${(bytes / 1e6 / (wall / 1000)).toFixed(0)} | ${(floorMs / wall).toFixed(2)}× | ${cpu.toFixed(0)} ms | ${child} |`);
  }
}

const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-bench-ports-")));
const backend = createDockerSandboxBackend({
  profile: "linux-x64-cgroupfs",
  endpoint,
  namespace: "bench-ports",
  spillDirectory: spill,
  imageDigest: nodeImage,
  user: { uid: 65534, gid: 65534 },
  proxyImageDigest: nodeImage,
});
const engine = new DockerEngine(endpoint);
const socketPath = endpoint.replace(/^unix:\/\//u, "");
const policy = { network: "outbound" as const, resources: { cpus: 2, memoryBytes: 512 * MIB, pids: 128 } };
const sandbox = await backend.reserve({ policy }, { record: async () => {} }).start();
try {
  await sandbox.reserveProcess({ executable: "/usr/local/bin/node", args: ["-e", SERVERS] }).start();
  const keeperId = sandbox.resources.keeperId;
  const address = Object.values(containerNetworks(await inspectContainer(engine, keeperId)))[0].IPAddress;
  // Wait for the servers; this first connect also creates the relay (timed below separately).
  for (;;) {
    try {
      await (await sandbox.connect(HTTP_PORT)).close();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  for (const upload of [false, true]) {
    const port = upload ? SINK_PORT : SEND_PORT;
    const samples: Record<string, Sample[]> = { "sandbox.connect() (relay)": [], "docker exec -i nc (CLI)": [], "direct TCP to the bridge address": [] };
    const ENGINE_FLOOR = "exec dd bs=1M, attach stream counted by bare node:net (the Engine's floor)";
    if (!upload) samples[ENGINE_FLOOR] = [];
    await viaRelay(sandbox, port, upload); // warm-up
    for (let round = 0; round < rounds; round++) {
      samples["direct TCP to the bridge address"].push(await measure(() => direct(address, port, upload)));
      samples["sandbox.connect() (relay)"].push(await measure(() => viaRelay(sandbox, port, upload)));
      samples["docker exec -i nc (CLI)"].push(await measure(() => viaCli(keeperId, port, upload)));
      if (!upload) {
        samples[ENGINE_FLOOR].push(await measure(async () => {
          // The attach stream carries the 8-byte frame headers too: at least `bytes` arrive.
          const dd = ["/bin/sh", "-c", `dd if=/dev/zero bs=${MIB} count=${bytes / MIB} 2>/dev/null`];
          const received = await netFloor(engine, socketPath, keeperId, dd, { uid: 65534, gid: 65534 });
          if (received < bytes) throw new Error(`the Engine floor gave ${received} bytes`);
        }));
      }
    }
    row(upload ? "host → guest" : "guest → host", Object.entries(samples), "direct TCP to the bridge address");
  }
  // Time to first byte of fetch on a warm sandbox.
  const ttfb: number[] = [], native: number[] = [];
  for (let i = 0; i < 40; i++) {
    let started = performance.now();
    const response = await sandbox.fetch(HTTP_PORT, "/");
    const reader = response.body!.getReader();
    await reader.read();
    ttfb.push(performance.now() - started);
    await reader.cancel();
    started = performance.now();
    const plain = await fetch(`http://${address}:${HTTP_PORT}/`);
    const plainReader = plain.body!.getReader();
    await plainReader.read();
    native.push(performance.now() - started);
    await plainReader.cancel();
  }
  const warm = summarize(ttfb), floor = summarize(native);
  console.log(`\n### fetch, time to first body byte (warm sandbox, 40 requests)\n`);
  console.log("| variant | median | p90 |");
  console.log("| --- | --- | --- |");
  console.log(`| sandbox.fetch() (relay) | ${warm.median.toFixed(1)} ms | ${warm.p90.toFixed(1)} ms |`);
  console.log(`| runtime fetch() of the bridge address | ${floor.median.toFixed(1)} ms | ${floor.p90.toFixed(1)} ms |`);
} finally {
  await sandbox.destroy();
}
// The relay's creation: the first connect of fresh sandboxes (isolated).
const firsts: number[] = [];
for (let i = 0; i < rounds; i++) {
  const fresh = await backend.reserve({ policy: { resources: policy.resources } }, { record: async () => {} }).start();
  try {
    const started = performance.now();
    await fresh.connect(1).catch(() => {});
    firsts.push(performance.now() - started);
  } finally {
    await fresh.destroy();
  }
}
console.log(`\nfirst connect() of a sandbox (creates the relay): median ${summarize(firsts).median.toFixed(0)} ms over ${rounds}`);
await rm(spill, { recursive: true, force: true });
