// The egress allowlist on a real Engine: a sandbox whose network is
// `{ kind: "allowlist", … }` reaches listed hosts only through its proxy, and nothing
// directly. Upstreams are the test's own (see _egress.ts): an HTTP and a TLS server on the
// host's 0.0.0.0, reached by the proxy at the host's address, which the policy allows by
// address; the resolver override maps the test names. Guest and proxy are the node image.
// Runs on every runtime (each file starts two or three sandboxes with a proxy).
import assert from "node:assert/strict";
import { z } from "zod";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { containerNetworks, PROXY_LIMITS } from "../../lib/docker/egress/proxy_container.ts";
import { inspectContainer } from "../../lib/engine/containers.ts";
import { createExec, startExec } from "../../lib/engine/exec.ts";
import { demultiplex } from "../../lib/engine/frames/demultiplex.ts";
import { inspectNetwork } from "../../lib/engine/networks.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { collectEvents, GUEST_CLIENT, startRawUpstream, startUpstreams, type Upstreams } from "./_egress.ts";
import { assertGone, recordingPort, withBackend } from "./_sandbox.ts";

const resources = { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 };

function allowlistPolicy(up: Upstreams): SandboxPolicyInput {
  return {
    resources,
    network: {
      kind: "allowlist",
      hosts: ["allowed.test", "*.wild.test", "private.test", "loopback.test", `tls.test:${up.tlsPort}`],
      addresses: [up.hostAddress],
      resolve: {
        "allowed.test": [up.hostAddress],
        "a.wild.test": [up.hostAddress],
        "deep.a.wild.test": [up.hostAddress],
        "wild.test": [up.hostAddress],
        "unlisted.test": [up.hostAddress],
        "tls.test": [up.hostAddress],
        "private.test": ["10.255.255.1"],
        "loopback.test": ["127.0.0.1"],
      },
    },
  };
}

const answer = z.looseObject({
  first: z.number().optional(),
  second: z.number().optional(),
  firstEnded: z.boolean().optional(),
  status: z.number().optional(),
  body: z.string().optional(),
  error: z.string().optional(),
  connected: z.boolean().optional(),
  sent: z.boolean().optional(),
  address: z.string().optional(),
  authorized: z.boolean().optional(),
  line: z.string().optional(),
  opened: z.number().optional(),
  answered503: z.number().optional(),
  held: z.number().optional(),
  heldReceived: z.number().optional(),
  bare: z.number().optional(),
  other: z.number().optional(),
  errors: z.number().optional(),
});

async function client(sandbox: DockerSandbox, ...args: string[]): Promise<z.infer<typeof answer>> {
  const result = await sandbox.run("/usr/local/bin/node", ["/workspace/work/client.mjs", ...args]);
  assert.equal(result.exit.code, 0, `client ${args.join(" ")}: ${result.stderrText}`);
  return answer.parse(JSON.parse(result.stdoutText.trim()));
}

async function withAllowlistSandbox(
  engine: DockerEngine,
  policy: SandboxPolicyInput,
  fn: (sandbox: DockerSandbox) => Promise<void>,
  up?: Upstreams,
): Promise<void> {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy }, recordingPort()).start();
    try {
      await sandbox.writeFile("work/client.mjs", GUEST_CLIENT);
      if (up) await sandbox.writeFile("work/ca.pem", up.caPem);
      await fn(sandbox);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, nodeImage, undefined, [], nodeImage);
}

engineTest("DockerSandbox allowlist: listed hosts through the proxy (HTTP and CONNECT+TLS), everything else refused with a denied event, nothing direct", async (engine) => {
  const up = await startUpstreams();
  try {
    await withAllowlistSandbox(engine, allowlistPolicy(up), async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      const { networkId, proxyId, egressId } = sandbox.resources;
      assert.ok(networkId && proxyId && egressId);

      // The sandbox's own network: internal, no gateway on the host; the keeper only on it.
      const internal = (await inspectNetwork(engine, networkId))!;
      assert.equal(internal.Internal, true);
      assert.deepEqual((internal.IPAM?.Config ?? []).map((config) => config.Gateway ?? ""), [""]);
      const keeper = await inspectContainer(engine, sandbox.resources.keeperId);
      assert.deepEqual(Object.keys(containerNetworks(keeper)), [sandbox.names.network]);
      const egress = (await inspectNetwork(engine, egressId))!;
      assert.equal(egress.Internal, false);
      // The proxy: hardened like the keeper, on both networks.
      const proxy = await inspectContainer(engine, proxyId);
      assert.equal(proxy.HostConfig.ReadonlyRootfs, true);
      assert.deepEqual(proxy.HostConfig.CapDrop, ["ALL"]);
      assert.deepEqual(proxy.HostConfig.SecurityOpt, ["no-new-privileges"]);
      assert.equal(proxy.Config.User, "65533:65533");
      assert.equal(proxy.HostConfig.Memory, PROXY_LIMITS.memoryBytes);
      assert.equal(proxy.HostConfig.PidsLimit, PROXY_LIMITS.pids);
      assert.deepEqual(Object.keys(containerNetworks(proxy)).sort(), [sandbox.names.egress, sandbox.names.network].sort());

      // The guest's fixed environment names the proxy.
      const env = await sandbox.run("/bin/sh", ["-c", "echo $HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy $NO_PROXY"]);
      const proxyAddress = containerNetworks(proxy)[sandbox.names.network].IPAddress;
      const url = `http://${proxyAddress}:3128`;
      assert.equal(env.stdoutText.trim(), `${url} ${url} ${url} ${url} localhost,127.0.0.1,::1`);

      // Allowed: absolute-form HTTP and CONNECT with TLS end to end (the upstream's own certificate).
      assert.deepEqual(await client(sandbox, "http", `http://allowed.test:${up.httpPort}/hello`), {
        status: 200,
        body: `upstream allowed.test:${up.httpPort} /hello`,
      });
      assert.deepEqual(await client(sandbox, "connect", `tls.test:${up.tlsPort}`, "tls"), { status: 200, authorized: true, body: "HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: close\r\n\r\ntls upstream" });
      await eventually("an allowed and a closed event for tls.test", () =>
        events.seen.some((e) => e.event === "allowed" && e.host === "tls.test" && e.address === up.hostAddress) &&
          events.seen.some((e) => e.event === "closed" && e.host === "tls.test" && (e.bytesIn ?? 0) > 0 && (e.bytesOut ?? 0) > 0) || undefined);

      // Not listed: 403 from the proxy and a denied event.
      const unlisted = await client(sandbox, "http", `http://unlisted.test:${up.httpPort}/`);
      assert.equal(unlisted.status, 403);
      assert.equal(unlisted.body, `egress proxy: denied: unlisted.test:${up.httpPort} is not on the allowlist\n`);
      assert.equal((await client(sandbox, "connect", `unlisted.test:${up.tlsPort}`)).status, 403);
      // A listed host on another port than its entry names.
      assert.equal((await client(sandbox, "connect", `tls.test:${up.httpPort}`)).status, 403);

      // Wildcards: subdomains at any depth, never the bare parent.
      assert.equal((await client(sandbox, "http", `http://a.wild.test:${up.httpPort}/`)).status, 200);
      assert.equal((await client(sandbox, "http", `http://deep.a.wild.test:${up.httpPort}/`)).status, 200);
      const parent = await client(sandbox, "http", `http://wild.test:${up.httpPort}/`);
      assert.equal(parent.status, 403);
      assert.match(parent.body!, /wild\.test:\d+ is not on the allowlist/u);

      // Listed names that resolve to a private or loopback address: refused (the host's own
      // address above passed only because the policy lists it in addresses).
      const inside = await client(sandbox, "connect", "private.test:443");
      assert.equal(inside.status, 403);
      assert.match(inside.body!, /private\.test resolves to 10\.255\.255\.1 is not a public address/u);
      const loop = await client(sandbox, "connect", "loopback.test:80");
      assert.equal(loop.status, 403);
      // (127.0.0.1 is also among the host's own addresses; loopback is named first.)
      assert.equal(loop.body, "egress proxy: denied: loopback.test resolves to 127.0.0.1 is not a public address (loopback)\n");
      // An address literal that is not allowed: the proxy's own egress gateway.
      const gateway = (egress.IPAM?.Config ?? [])[0]?.Gateway;
      assert.ok(gateway, "the egress bridge has a gateway");
      assert.equal((await client(sandbox, "connect", `${gateway}:${up.httpPort}`)).status, 403);
      await eventually("denied events for unlisted.test, wild.test and private.test", () =>
        ["unlisted.test", "wild.test", "private.test", "loopback.test", gateway].every((host) =>
          events.seen.some((e) => e.event === "denied" && e.host === host)
        ) || undefined);

      // Nothing direct: TCP to the host's address and to the proxy's gateway, UDP, DNS.
      const connectionsBefore = up.httpConnections();
      assert.deepEqual(await client(sandbox, "tcp", up.hostAddress, String(up.httpPort)), { error: "ENETUNREACH" });
      assert.deepEqual(await client(sandbox, "tcp", gateway, String(up.httpPort)), { error: "ENETUNREACH" });
      assert.deepEqual(await client(sandbox, "udp", up.hostAddress, String(up.udpPort)), { error: "ENETUNREACH" });
      const dns = await client(sandbox, "dns", "allowed.test");
      assert.ok(dns.error !== undefined && dns.address === undefined, `the guest's DNS answered ${JSON.stringify(dns)}`);
      assert.equal(up.httpConnections(), connectionsBefore, "no direct connection reached the host's listener");
      assert.equal(up.udpReceived(), 0, "no datagram reached the host");
    }, up);
  } finally {
    await up.close();
  }
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: another sandbox is unreachable, directly and through the proxy", async (engine) => {
  const up = await startUpstreams();
  try {
    await withBackend(async (backend) => {
      const other = await backend.reserve({ policy: { resources, network: "outbound" } }, recordingPort()).start();
      try {
        const listener = await other.reserveProcess({
          executable: "/usr/local/bin/node",
          args: ["-e", "require('node:net').createServer((s) => s.end('other sandbox')).listen(8080, () => console.log('listening'))"],
        }).start();
        const reader = listener.stdout.getReader();
        assert.equal(new TextDecoder().decode((await reader.read()).value), "listening\n");
        reader.releaseLock();
        const otherAddress = containerNetworks(await inspectContainer(engine, other.resources.keeperId))[other.names.network].IPAddress;
        await other.writeFile("work/client.mjs", GUEST_CLIENT);
        assert.deepEqual(await client(other, "tcp", otherAddress, "8080"), { connected: true }, "the listener answers on its address");
        await withAllowlistSandbox(engine, allowlistPolicy(up), async (sandbox) => {
          assert.deepEqual(await client(sandbox, "tcp", otherAddress, "8080"), { error: "ENETUNREACH" });
          const via = await client(sandbox, "connect", `${otherAddress}:8080`);
          assert.equal(via.status, 403);
          assert.match(via.body!, /is not on the allowlist/u);
        });
      } finally {
        await other.destroy();
        await assertGone(engine, other);
      }
    }, nodeImage);
  } finally {
    await up.close();
  }
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: a proxy killed from outside stops the sandbox with its exit code in the cause and ends its decisions", async (engine) => {
  const up = await startUpstreams();
  try {
    await withAllowlistSandbox(engine, allowlistPolicy(up), async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      assert.equal((await client(sandbox, "http", `http://allowed.test:${up.httpPort}/`)).status, 200);
      await engine.request("POST", `/containers/${sandbox.resources.proxyId}/kill`, { expect: [204] });
      await eventually("the sandbox stopping", () => (sandbox.state === "stopped" ? true : undefined));
      assert.ok(sandbox.stopCause instanceof SandboxStoppedError);
      assert.equal(sandbox.stopCause.code, "stopped");
      // The cause says how it ended, read from the proxy before it was removed: SIGKILL, no OOM.
      assert.equal(sandbox.stopCause.message, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 137: killed by signal 9 (SIGKILL)), so the sandbox was stopped");
      await events.done;
      assert.ok(events.seen.some((e) => e.event === "allowed" && e.host === "allowed.test"));
      await assert.rejects(sandbox.run("/bin/true"), SandboxStoppedError);
    }, up);
  } finally {
    await up.close();
  }
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: a proxy OOM-killed stops the sandbox with the OOM kill in the cause", async (engine) => {
  // No upstream: the proxy's own user raises the proxy's OOM score (allowed without
  // capabilities) and runs a memory hog beside it, so the kernel's OOM killer picks the proxy.
  await withAllowlistSandbox(engine, { resources, network: { kind: "allowlist", hosts: ["allowed.test"] } }, async (sandbox) => {
    const proxyId = sandbox.resources.proxyId!;
    const hog = "echo 1000 > /proc/1/oom_score_adj && exec node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'";
    await execInProxy(engine, proxyId, ["/bin/sh", "-c", hog]).catch(() => "");
    await eventually("the sandbox stopping", () => (sandbox.state === "stopped" ? true : undefined));
    assert.ok(sandbox.stopCause instanceof SandboxStoppedError);
    assert.equal(sandbox.stopCause.code, "stopped");
    assert.equal(
      sandbox.stopCause.message,
      `Cannot continue: the egress proxy container stopped on its own (it was OOM-killed at its ${PROXY_LIMITS.memoryBytes / (1024 * 1024)} MiB memory limit, exit code 137: killed by signal 9 (SIGKILL); lower network.maxConnections to hold fewer busy tunnels), so the sandbox was stopped`,
    );
    await assert.rejects(sandbox.run("/bin/true"), SandboxStoppedError);
  });
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist bounds: maxConnections refuses the next with 503, idleTimeoutMs and maxBytesPerConnection close a tunnel and bound absolute-form requests", async (engine) => {
  const up = await startUpstreams();
  try {
    const base = allowlistPolicy(up);
    const network = { ...(base.network as object), maxConnections: 1, idleTimeoutMs: 1_000, maxBytesPerConnection: 100 };
    await withAllowlistSandbox(engine, { ...base, network } as SandboxPolicyInput, async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      assert.deepEqual(await client(sandbox, "pair", `tls.test:${up.tlsPort}`), {
        first: 200,
        second: 503,
        body: "egress proxy: too many connections\n",
        firstEnded: true,
      });
      await eventually("a denied event for the second and an idle close of the first", () =>
        events.seen.some((e) => e.event === "denied" && e.reason === "more than 1 connections at once") &&
          events.seen.some((e) => e.event === "closed" && e.reason === "idle for 1000 ms" && e.bytesIn === 0 && e.bytesOut === 0) || undefined);
      // A TLS handshake is more than 100 bytes: the tunnel is cut, the guest's TLS fails.
      const cut = await client(sandbox, "connect", `tls.test:${up.tlsPort}`, "tls");
      assert.equal(cut.status, 200);
      // The cut shows as an error or as an end before the handshake finished, as it falls.
      assert.ok(cut.error !== undefined || (cut.authorized === false && cut.body === ""), JSON.stringify(cut));
      const closed = await eventually("a close for the byte bound", () => events.seen.find((e) => e.event === "closed" && e.reason === "more than 100 bytes"));
      assert.ok((closed.bytesIn ?? 0) + (closed.bytesOut ?? 0) > 100);

      // Bytes sent in the same packet as the CONNECT count: 1,000 of them end the tunnel at once.
      assert.deepEqual(await client(sandbox, "burst", `allowed.test:${up.httpPort}`, "1000"), { line: "HTTP/1.1 200 Connection Established" });
      const burst = await eventually("a close of the burst", () =>
        events.seen.find((e) => e.event === "closed" && e.host === "allowed.test" && e.reason === "more than 100 bytes"));
      assert.ok(burst.bytesOut! > 100 && burst.bytesOut! <= 1000 && burst.bytesIn === 0, JSON.stringify(burst));

      // Absolute-form requests: a closed event with their bytes, and the same byte bound.
      const small = await client(sandbox, "http", `http://a.wild.test:${up.httpPort}/s`);
      assert.deepEqual(small, { status: 200, body: `upstream a.wild.test:${up.httpPort} /s` });
      assert.deepEqual(
        await eventually("a closed event for the small request", () => events.seen.find((e) => e.event === "closed" && e.host === "a.wild.test")),
        { event: "closed", host: "a.wild.test", port: up.httpPort, address: up.hostAddress, reason: "ended", bytesOut: 0, bytesIn: small.body!.length },
      );
      const long = `/${"l".repeat(200)}`;
      const big = await client(sandbox, "http", `http://deep.a.wild.test:${up.httpPort}${long}`);
      assert.ok(big.error !== undefined || (big.body ?? "").length <= 100, JSON.stringify(big));
      const cutRequest = await eventually("a closed event for the large answer", () =>
        events.seen.find((e) => e.event === "closed" && e.host === "deep.a.wild.test"));
      assert.equal(cutRequest.reason, "more than 100 bytes");
      assert.ok(cutRequest.bytesOut === 0 && cutRequest.bytesIn! > 100, JSON.stringify(cutRequest));
    }, up);
  } finally {
    await up.close();
  }
}, { timeout: 300_000 });

/** Run `cmd` in the proxy container (as its user, the backend's keeperUser) and return its stdout. */
async function execInProxy(engine: DockerEngine, proxyId: string, cmd: string[]): Promise<string> {
  const execId = await createExec(engine, proxyId, { Cmd: cmd, Env: [], User: "65533:65533", WorkingDir: "/", AttachStdin: false });
  const connection = await startExec(engine, execId);
  const { stdout, stderr } = demultiplex(connection.readable, { maxBufferedOutputBytes: 1024 * 1024, onFault: (error) => error });
  const [out] = await Promise.all([new Response(stdout).text(), new Response(stderr).text()]);
  return out;
}

engineTest("DockerSandbox allowlist bounds: of thousands of silent connections the proxy holds maxConnections and refuses the rest at once, closes one without a request head after headersTimeoutMs, keeps serving, under nofile 4096 and capped socket buffers", async (engine) => {
  const up = await startUpstreams();
  try {
    const base = allowlistPolicy(up);
    // headersTimeoutMs far above the flood's length, so the 8 admitted stay admitted throughout.
    const network = { ...(base.network as object), maxConnections: 8, headersTimeoutMs: 600_000 };
    await withAllowlistSandbox(engine, { ...base, network } as SandboxPolicyInput, async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      const proxyId = sandbox.resources.proxyId!;
      // The proxy's open-file bound: read back from the Engine and from the kernel.
      const proxy = await inspectContainer(engine, proxyId);
      assert.deepEqual(proxy.HostConfig.Ulimits, [{ Name: "core", Soft: 0, Hard: 0 }, { Name: "nofile", Soft: 4096, Hard: 4096 }]);
      assert.match(await execInProxy(engine, proxyId, ["cat", "/proc/1/limits"]), /^Max open files\s+4096\s+4096\s+files\s*$/mu);
      // The socket buffer caps of both namespaces a tunnel crosses (lib/docker/keeper/socket_buffers.ts):
      // read back from the Engine and from the kernel, in the proxy and in the guest.
      const sysctls = { "net.ipv4.tcp_rmem": "4096 131072 1048576", "net.ipv4.tcp_wmem": "4096 16384 1048576" };
      const printed = "4096\t131072\t1048576\n4096\t16384\t1048576\n";
      assert.deepEqual(proxy.HostConfig.Sysctls, sysctls);
      assert.equal(await execInProxy(engine, proxyId, ["cat", "/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"]), printed);
      assert.deepEqual((await inspectContainer(engine, sandbox.resources.keeperId)).HostConfig.Sysctls, sysctls);
      assert.equal((await sandbox.run("/bin/sh", ["-c", "cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem"])).stdoutText, printed);

      // 2,000 connections that never send a byte, 400 at once: the proxy holds exactly 8 (and
      // sends them nothing); every other one it refuses at once (503, or closed without an
      // answer while 8 refused ones are still closing).
      const flood = await client(sandbox, "flood", "2000", "400", "8");
      assert.deepEqual(
        { opened: flood.opened, other: flood.other, held: flood.held, heldReceived: flood.heldReceived, refused: flood.answered503! + flood.bare! },
        { opened: 2000, other: 0, held: 8, heldReceived: 0, refused: 1992 },
        JSON.stringify(flood),
      );
      assert.ok(flood.answered503! >= 1, JSON.stringify(flood));
      const tooMany = () => events.seen.filter((e) => e.event === "denied" && e.host === "" && e.port === 0 && e.reason === "more than 8 connections at once").length;
      await eventually("one denied event per refused connection", () => (tooMany() + sandbox.egress!.dropped === 1992 ? true : undefined));

      // The guest's exit closed the 8: the proxy is still running, not restarted or killed,
      // and serves an allowed request.
      const after = await inspectContainer(engine, proxyId);
      assert.equal(after.State.Running, true);
      assert.equal((after.State as { OOMKilled?: boolean }).OOMKilled, false);
      assert.equal(sandbox.state, "running");
      assert.deepEqual(await client(sandbox, "http", `http://allowed.test:${up.httpPort}/after`), { status: 200, body: `upstream allowed.test:${up.httpPort} /after` });
    }, up);

    // A second sandbox with a short head timeout: a silent connection is answered 408 and closed.
    const short = { ...(base.network as object), headersTimeoutMs: 1_000 };
    await withAllowlistSandbox(engine, { ...base, network: short } as SandboxPolicyInput, async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      assert.deepEqual(await client(sandbox, "silent"), { line: "HTTP/1.1 408 Request Timeout", body: "egress proxy: no complete request head within 1000 ms\n" });
      await eventually("a denied event for the silent connection", () =>
        events.seen.find((e) => e.event === "denied" && e.host === "" && e.port === 0 && e.reason === "no complete request head within 1000 ms"));
      assert.equal((await client(sandbox, "http", `http://allowed.test:${up.httpPort}/`)).status, 200);
    }, up);
  } finally {
    await up.close();
  }
}, { timeout: 300_000 });

engineTest("DockerSandbox allowlist: an allowed upstream answering a malformed status (099) gets the guest a 502 and a denied event, and the proxy and the sandbox go on running", async (engine) => {
  const up = await startUpstreams();
  const malformed = await startRawUpstream("HTTP/1.1 099 X\r\ncontent-length: 2\r\n\r\nok");
  try {
    await withAllowlistSandbox(engine, allowlistPolicy(up), async (sandbox) => {
      const events = collectEvents(sandbox.egress!);
      const reason = "upstream sent a malformed reply: status 99 is not a final status (200 to 599)";
      assert.deepEqual(await client(sandbox, "http", `http://allowed.test:${malformed.port}/`), { status: 502, body: `egress proxy: ${reason}\n` });
      await eventually("the denied and closed events", () =>
        events.seen.some((e) => e.event === "closed" && e.port === malformed.port) ? true : undefined);
      assert.deepEqual(events.seen.filter((e) => e.port === malformed.port).map((e) => [e.event, e.host, e.reason]), [
        ["allowed", "allowed.test", undefined],
        ["denied", "allowed.test", reason],
        ["closed", "allowed.test", reason],
      ]);
      // The proxy did not exit, so the sandbox was not stopped, and the next request is served.
      const proxy = await inspectContainer(engine, sandbox.resources.proxyId!);
      assert.equal(proxy.State.Running, true);
      assert.equal(sandbox.state, "running");
      assert.deepEqual(await client(sandbox, "http", `http://allowed.test:${up.httpPort}/after`), { status: 200, body: `upstream allowed.test:${up.httpPort} /after` });
      assert.equal(sandbox.state, "running");
    }, up);
  } finally {
    await malformed.close();
    await up.close();
  }
}, { timeout: 300_000 });
