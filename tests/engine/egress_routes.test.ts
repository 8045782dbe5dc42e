// Credentialed routes on a real Engine: an allowlist sandbox whose route `model` reaches the
// test's own HTTPS echo upstream (a fresh self-signed certificate for route.test, trusted
// through upstreamCaCertificates) on the host's 0.0.0.0, reached by the proxy at the host's
// address (allowed by address, the name mapped by resolve), with a secret given at start().
// The guest uses the route from node and busybox wget, directly and through a CONNECT to the
// proxy itself, then hunts for the secret everywhere it can look; the host looks at every
// container's inspect, the record file, every event and the stats. The echo shows the guest
// "[secret]" for the header (tests/fixtures/https_echo.ts); the host sees what arrived.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import type { AddressInfo } from "node:net";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { containerNetworks } from "../../lib/docker/egress/proxy_container.ts";
import { createFileRecoveryStore } from "../../lib/docker/recovery/store.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { inspectNetwork } from "../../lib/engine/networks.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { collectEvents, hostAddress } from "./_egress.ts";
import { assertGone, withBackend } from "./_sandbox.ts";
import { type Echo, type HttpsEcho, startHttpsEcho } from "../fixtures/https_echo.ts";
import { selfSignedCertificate } from "../fixtures/tls_certificate.ts";

const resources = { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 };
/** The secret: random per run, so no fixed text can stand in for it. */
const SECRET = `sk-agentcell-${crypto.randomUUID()}`;
const PLACEHOLDER = "agentcell-placeholder";

/**
 * The guest's client (node), one JSON line per run:
 *   post <path>       POST $MODEL_BASE_URL<path> straight to the proxy with the guest's own
 *                     Authorization and X-Keep → { status, body }
 *   fetch <path>      node's fetch of $MODEL_BASE_URL<path> with NODE_USE_ENV_PROXY=1 → { status, body }
 *   tunnel <path>     CONNECT to the base URL's host:port through $HTTPS_PROXY (what a client
 *                     that tunnels even http:// does), then GET <path> inside → { status, text }
 *   raw <json text>   the text on a fresh connection to the proxy → { text } once it closed
 *   ports <p,p,…>     TCP connects to the proxy's address on each port → { open: [ports] }
 */
const CLIENT = String.raw`
import http from "node:http";
import net from "node:net";
const [mode, a] = process.argv.slice(2);
const print = (value) => { process.stdout.write(JSON.stringify(value) + "\n"); process.exit(0); };
setTimeout(() => print({ error: "client timeout" }), 8000).unref();
const base = new URL(process.env.MODEL_BASE_URL);
const proxy = new URL(process.env.HTTPS_PROXY);
const collect = (response) => { let body = ""; response.setEncoding("utf8"); response.on("data", (c) => body += c); response.on("end", () => print({ status: response.statusCode, body })); };
if (mode === "post") {
  const request = http.request({ host: base.hostname, port: base.port, method: "POST", path: base.pathname + a,
    headers: { authorization: "guest-token", "x-keep": "kept", "content-type": "text/plain" } }, collect);
  request.on("error", (error) => print({ error: error.code ?? error.message }));
  request.end("hello");
} else if (mode === "fetch") {
  fetch(process.env.MODEL_BASE_URL + a, { headers: { authorization: "guest-token" } })
    .then(async (response) => print({ status: response.status, body: await response.text() }), (error) => print({ error: String(error.cause ?? error) }));
} else if (mode === "tunnel") {
  const request = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: base.host });
  request.on("connect", (response, socket) => {
    let text = ""; socket.setEncoding("utf8"); socket.on("data", (c) => text += c); socket.on("end", () => print({ status: response.statusCode, text }));
    socket.write("GET " + base.pathname + a + " HTTP/1.1\r\nHost: " + base.host + "\r\nAuthorization: guest-token\r\n\r\n");
  });
  request.on("response", collect);
  request.on("error", (error) => print({ error: error.code ?? error.message }));
  request.end();
} else if (mode === "raw") {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) }, () => socket.write(JSON.parse(a)));
  let text = ""; socket.setEncoding("latin1"); socket.on("data", (c) => text += c); socket.on("error", () => {}); socket.on("close", () => print({ text }));
} else if (mode === "ports") {
  const ports = a.split(",").map(Number);
  const open = await Promise.all(ports.map((port) => new Promise((resolve) => {
    const socket = net.connect({ host: proxy.hostname, port }, () => { socket.destroy(); resolve(port); });
    socket.on("error", () => resolve(undefined));
  })));
  print({ open: open.filter((port) => port !== undefined) });
} else print({ error: "unknown mode " + mode });
`;

function routesPolicy(echo: HttpsEcho, extra: Partial<{ routes: unknown[]; resolve: Record<string, string[]>; caPems: string[] }> = {}): SandboxPolicyInput {
  const address = hostAddress();
  return {
    resources,
    network: {
      kind: "allowlist",
      hosts: [],
      addresses: [address],
      resolve: { "route.test": [address], ...extra.resolve },
      upstreamCaCertificates: [echo.certPem, ...(extra.caPems ?? [])],
      routes: [
        {
          name: "model",
          upstream: `https://route.test:${echo.port}/v1`,
          headers: { authorization: { secret: "model", prefix: "Bearer " } },
          baseUrlEnv: ["MODEL_BASE_URL"],
          env: { MODEL_API_KEY: PLACEHOLDER },
        },
        ...(extra.routes ?? []),
      ],
    } as SandboxPolicyInput["network"],
  };
}

async function client(sandbox: DockerSandbox, ...args: string[]): Promise<Record<string, unknown>> {
  const result = await sandbox.run("/usr/local/bin/node", ["/workspace/work/client.mjs", ...args], { env: { NODE_USE_ENV_PROXY: "1" } });
  assert.equal(result.exit.code, 0, `client ${args.join(" ")}: ${result.stderrText}`);
  return JSON.parse(result.stdoutText.trim());
}

/** The echo the guest got (the upstream's JSON body). */
function echoOf(answer: Record<string, unknown>): Echo {
  assert.equal(answer.status, 200, JSON.stringify(answer));
  return JSON.parse(answer.body as string);
}

engineTest("DockerSandbox route: the guest reaches its model API through the route with the secret header set, and finds the secret nowhere", async (engine) => {
  const echo = await startHttpsEcho({ name: "route.test", host: "0.0.0.0", redact: { field: "authorization", secret: `Bearer ${SECRET}` } });
  const storeDirectory = await mkdtemp(join(tmpdir(), "agentcell-routes-store-"));
  try {
    await withBackend(async (backend) => {
      const store = await createFileRecoveryStore(storeDirectory);
      const sandbox = await backend.reserve({ policy: routesPolicy(echo) }, store).start({ secrets: () => ({ model: SECRET }) });
      const events = collectEvents(sandbox.egress!);
      let inspects = "";
      try {
        await sandbox.writeFile("work/client.mjs", CLIENT);
        const proxy = await inspectContainer(engine, sandbox.resources.proxyId!);
        const proxyAddress = containerNetworks(proxy)[sandbox.names.network].IPAddress;
        const baseUrl = `http://${proxyAddress}:3128/model`;

        // The guest's environment: the base URL, a placeholder key, the proxy's address direct.
        const env = await sandbox.run("/bin/sh", ["-c", 'echo "$MODEL_BASE_URL|$MODEL_API_KEY|$NO_PROXY"']);
        assert.equal(env.stdoutText.trim(), `${baseUrl}|${PLACEHOLDER}|localhost,127.0.0.1,::1,${proxyAddress}`);

        // Straight to the proxy: the secret replaces the guest's Authorization, the rest is kept.
        const posted = echoOf(await client(sandbox, "post", "/messages?beta=1"));
        assert.equal(posted.url, "/v1/messages?beta=1");
        assert.equal(posted.method, "POST");
        assert.equal(posted.body, "hello");
        assert.equal(posted.headers.authorization, "[secret]");
        assert.equal(posted.headers["x-keep"], "kept");
        assert.equal(posted.headers.host, `route.test:${echo.port}`);
        assert.equal(echo.seen[0].headers.authorization, `Bearer ${SECRET}`, "the upstream received the secret");
        // Node's fetch with the proxy variables (NO_PROXY names the proxy), a CONNECT to the proxy
        // itself (the tunnel ends at the route), and busybox wget (through http_proxy: absolute form).
        assert.equal(echoOf(await client(sandbox, "fetch", "/f")).headers.authorization, "[secret]");
        const tunnelled = await client(sandbox, "tunnel", "/t");
        assert.equal(tunnelled.status, 200);
        assert.match(tunnelled.text as string, /^HTTP\/1\.1 200 OK\r\n[\s\S]*"authorization":"\[secret\]"/u);
        const wget = await sandbox.run("/bin/sh", ["-c", 'wget -q -O - --header "Authorization: guest-token" "$MODEL_BASE_URL/w"']);
        assert.equal(wget.exit.code, 0, wget.stderrText);
        assert.equal((JSON.parse(wget.stdoutText) as Echo).headers.authorization, "[secret]");
        assert.deepEqual(echo.seen.map((seen) => seen.url), ["/v1/messages?beta=1", "/v1/f", "/v1/t", "/v1/w"]);
        assert.ok(echo.seen.every((seen) => seen.headers.authorization === `Bearer ${SECRET}`));

        // The agent hunts. Every process's environment and command line it can read (a second,
        // long-lived process too), its files, and the proxy's ports.
        const background = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["60"] }).start();
        const environs = await sandbox.run("/bin/sh", ["-c", "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; echo; done 2>/dev/null; echo done"]);
        assert.match(environs.stdoutText, /MODEL_API_KEY=agentcell-placeholder/u, "the hunt read the environments");
        assert.ok(!environs.stdoutText.includes(SECRET), "no environment holds the secret");
        // (A marker file shows the search reads the files: it is the one match.)
        await sandbox.writeFile("work/marker.txt", "agentcell-marker-found");
        const files = await sandbox.run("/bin/sh", ["-c", `grep -rl -e '${SECRET}' -e agentcell-marker-found /workspace /home /tmp /dev/shm /etc /run /var 2>/dev/null; true`]);
        assert.equal(files.stdoutText, "/workspace/work/marker.txt\n", "no file holds the secret");
        assert.deepEqual(await client(sandbox, "ports", "22,80,443,3128,3129,8080,9229"), { open: [3128] });
        const probes = ["GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET /model/../ HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"];
        for (const probe of probes) assert.ok(!((await client(sandbox, "raw", JSON.stringify(probe))).text as string).includes(SECRET));
        await background.kill();

        // The host's side: inspect of every container and network of the sandbox, stats, the record.
        for (const id of [sandbox.resources.keeperId, sandbox.resources.proxyId!]) inspects += JSON.stringify(await inspectContainer(engine, id));
        for (const id of [sandbox.resources.networkId!, sandbox.resources.egressId!]) inspects += JSON.stringify(await inspectNetwork(engine, id));
        assert.match(inspects, /"OpenStdin":true/u, "the proxy's stdin is open (the secrets came that way)");
        assert.ok(!inspects.includes(SECRET), "no inspect shows the secret");
        assert.ok(!JSON.stringify(await sandbox.stats()).includes(SECRET), "the stats show no secret");
        await eventually("a closed event of the route with its status", () =>
          events.seen.find((event) => event.event === "closed" && event.route === "model" && event.status === 200 && (event.durationMs ?? -1) >= 0));
      } finally {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      await events.done;
      assert.ok(events.seen.length >= 8, `events: ${JSON.stringify(events.seen)}`);
      assert.ok(!JSON.stringify(events.seen).includes(SECRET), "no event carries the secret");
      let records = "";
      for (const name of await readdir(storeDirectory)) records += await readFile(join(storeDirectory, name), "utf8").catch(() => "");
      assert.match(records, /proxy/u, "the record file was written");
      assert.ok(!records.includes(SECRET), "the record file holds no secret");
    }, nodeImage, undefined, [], nodeImage);
  } finally {
    await echo.close();
    await rm(storeDirectory, { recursive: true, force: true });
  }
}, { timeout: 300_000 });

engineTest("DockerSandbox route: paths, Host, absolute URLs and CONNECT cannot send the secret elsewhere; a redirect is returned, not followed; malformed statuses stop neither the proxy nor the sandbox", async (engine) => {
  const echo = await startHttpsEcho({
    name: "route.test",
    host: "0.0.0.0",
    redact: { field: "authorization", secret: `Bearer ${SECRET}` },
    answer: (seen) => (seen.url.endsWith("/redirect") ? { status: 302, headers: { location: "https://evil.test/steal", "content-length": "0" } } : undefined),
  });
  // An upstream that answers each request with the status line its path names (/099, /000, /101).
  const raw = await selfSignedCertificate("raw.test");
  const faulty = createTlsServer({ key: raw.keyPem, cert: raw.certPem }, (socket) => {
    socket.on("error", () => {}).once("data", (chunk: Buffer) => {
      const code = /^GET \/(\d{3}) /u.exec(chunk.toString("latin1"))?.[1] ?? "200";
      socket.end(`HTTP/1.1 ${code} X\r\n${code === "101" ? "upgrade: x\r\nconnection: upgrade\r\n" : ""}content-length: 2\r\n\r\nok`);
    });
  });
  faulty.listen(0, "0.0.0.0");
  await once(faulty, "listening");
  const faultyPort = (faulty.address() as AddressInfo).port;
  try {
    await withBackend(async (backend) => {
      const address = hostAddress();
      const policy = routesPolicy(echo, {
        resolve: { "raw.test": [address] },
        caPems: [raw.certPem],
        routes: [{ name: "raw", upstream: `https://raw.test:${faultyPort}`, headers: { "x-api-key": { secret: "model" } } }],
      });
      const sandbox = await backend.reserve({ policy }, { record: () => Promise.resolve() }).start({ secrets: { model: SECRET } });
      const events = collectEvents(sandbox.egress!);
      try {
        await sandbox.writeFile("work/client.mjs", CLIENT);
        const proxyAddress = containerNetworks(await inspectContainer(engine, sandbox.resources.proxyId!))[sandbox.names.network].IPAddress;
        const request = async (text: string) => (await client(sandbox, "raw", JSON.stringify(text))).text as string;
        const status = (answer: string) => answer.slice(0, answer.indexOf("\r\n"));

        // Paths that climb out of the route: refused before anything is sent.
        for (const path of ["/model/../raw/x", "/model/%2e%2e/x", "/model/..%2fx", "/model/a\\b"]) {
          assert.equal(status(await request(`GET ${path} HTTP/1.1\r\nHost: route.test\r\n\r\n`)), "HTTP/1.1 400 Bad Request", path);
        }
        // The upstream's host by absolute URL or CONNECT: the allowlist decides (no hosts), no route applies.
        assert.equal(status(await request(`GET http://route.test:${echo.port}/v1/x HTTP/1.1\r\nHost: route.test\r\n\r\n`)), "HTTP/1.1 403 Forbidden");
        assert.equal(status(await request(`CONNECT route.test:${echo.port} HTTP/1.1\r\nHost: route.test\r\n\r\n`)), "HTTP/1.1 403 Forbidden");
        // A Host field naming another host: the route's upstream gets the request, with its own Host.
        const hosted = await request(`GET /model/h HTTP/1.1\r\nHost: evil.test\r\n\r\n`);
        assert.match(hosted, /"host":"route\.test:\d+"/u);
        assert.deepEqual(echo.seen.map((seen) => seen.url), ["/v1/h"]);

        // A redirect to another host: the guest gets it as it is; the proxy follows nothing.
        const redirected = await request(`GET /model/redirect HTTP/1.1\r\nHost: x\r\n\r\n`);
        assert.equal(status(redirected), "HTTP/1.1 302 Found");
        assert.match(redirected, /\r\nlocation: https:\/\/evil\.test\/steal\r\n/iu);
        assert.deepEqual(echo.seen.map((seen) => seen.url), ["/v1/h", "/v1/redirect"]);

        // Malformed statuses: 502 with a denied event each; the proxy and the sandbox go on.
        for (const code of ["099", "000", "101"]) {
          const answer = await request(`GET /raw/${code} HTTP/1.1\r\nHost: x\r\n\r\n`);
          assert.equal(status(answer), "HTTP/1.1 502 Bad Gateway", code);
          assert.ok(!answer.includes(SECRET));
        }
        await eventually("three malformed-reply denials of route raw", () =>
          events.seen.filter((event) => event.event === "denied" && event.route === "raw" && /malformed reply/u.test(event.reason ?? "")).length === 3 || undefined);
        assert.match(status(await request(`GET /raw/200 HTTP/1.1\r\nHost: x\r\n\r\n`)), /^HTTP\/1\.1 200 /u);
        assert.equal(echoOf(await client(sandbox, "post", "/after")).headers.authorization, "[secret]");
        assert.equal((await inspectContainer(engine, sandbox.resources.proxyId!)).State.Running, true);
        assert.equal((await sandbox.run("/bin/true", [])).exit.code, 0);
        assert.ok(proxyAddress.length > 0);
      } finally {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
      await events.done;
      assert.ok(!JSON.stringify(events.seen).includes(SECRET), "no event carries the secret");
    }, nodeImage, undefined, [], nodeImage);
  } finally {
    await echo.close();
    await new Promise((resolve) => faulty.close(resolve));
  }
}, { timeout: 300_000 });
