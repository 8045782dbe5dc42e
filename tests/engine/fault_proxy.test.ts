// The fault proxy between the library's client and the real Engine: each fault it offers
// (a reply dropped after the Engine performed the request, a delayed reply, a body cut after
// N bytes, a keep-alive proxy that never closes) and untouched pass-through of everything
// else, exec attach upgrades and half-close included. Whatever a test creates is removed by
// its exact name or ID on the real Engine.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { z } from "zod";
import { DockerEngine } from "../../lib/engine/client.ts";
import { createContainer, removeContainer } from "../../lib/engine/containers.ts";
import { createExec, startExec } from "../../lib/engine/exec.ts";
import { DockerEngineTransportError, type DockerEngineTransportErrorCode, requestBuffered } from "../../lib/engine/http/mod.ts";
import { createVolume, inspectVolume, removeVolume } from "../../lib/engine/volumes.ts";
import { busyboxImage, endpoint, engineTest, eventually } from "./_engine.ts";
import { type FaultProxy, startFaultProxy } from "./_fault_proxy.ts";
import { assertGone, recordingPort, testPolicy, text, withBackend, withSandbox } from "./_sandbox.ts";

const VOLUMES_CREATE = { method: "POST", path: "/volumes/create" } as const;

function uniqueName(role: string): string {
  return `agentcell-test-proxy-${role}-${crypto.randomUUID().slice(0, 12)}`;
}

function transport(code: DockerEngineTransportErrorCode, message?: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof DockerEngineTransportError, `not a transport error: ${error}`);
    assert.equal(error.code, code, error.message);
    if (message !== undefined) assert.match(error.message, message);
    return true;
  };
}

/** Runs `fn` with a proxy in front of the lane's engine; the proxy is closed afterwards. */
async function withProxy(fn: (proxy: FaultProxy, client: DockerEngine) => Promise<void>, keepAlive = false): Promise<void> {
  const proxy = await startFaultProxy({ upstream: endpoint!, keepAlive });
  try {
    await fn(proxy, new DockerEngine(proxy.endpoint));
  } finally {
    await proxy.close();
  }
}

/** A fresh volume name; whatever the test made under it is removed by that exact name afterwards. */
async function withVolumeName(engine: DockerEngine, fn: (name: string) => Promise<void>): Promise<void> {
  const name = uniqueName("volume");
  try {
    await fn(name);
  } finally {
    await removeVolume(engine, name);
    assert.equal(await inspectVolume(engine, name), undefined);
  }
}

/** A created, never-started busybox container on the real engine, removed by exact ID afterwards. */
async function withContainer(engine: DockerEngine, fn: (id: string) => Promise<void>): Promise<void> {
  const { id } = await createContainer(engine, uniqueName("container"), {
    Image: busyboxImage,
    Cmd: ["true"],
    HostConfig: { NetworkMode: "none" },
  });
  try {
    await fn(id);
  } finally {
    assert.equal(await removeContainer(engine, id), true);
  }
}

for (const keepAlive of [false, true]) {
  const mode = keepAlive ? "as a keep-alive proxy that never closes a connection" : "untouched";
  engineTest(`FaultProxy passes a whole sandbox lifecycle through ${mode}, exec attach and half-close included`, async (engine) => {
    await withProxy(async (proxy) => {
      await withBackend(async (backend) => {
        const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
        try {
          await sandbox.importTree([{ path: "in.txt", type: "file", mode: 0o644, size: 9, body: new Blob(["imported\n"]).stream() }]);
          const agent = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "cat in.txt -; echo done > out.txt"] }).start();
          const writer = agent.stdin.getWriter();
          await writer.write(new TextEncoder().encode("through stdin\n"));
          await writer.close(); // half-close through the proxy: cat sees end of file
          const [out, err, exit] = await Promise.all([text(agent.stdout), text(agent.stderr), agent.exit]);
          assert.deepEqual([out, err, exit], ["imported\nthrough stdin\n", "", { kind: "exited", code: 0 }]);
          await sandbox.stop();
          const entries = await sandbox.exportTree({ kind: "file", path: "work/out.txt" });
          const exported: string[] = [];
          for await (const entry of entries) exported.push(`${entry.path}=${await text(entry.body)}`);
          assert.deepEqual(exported, ["work/out.txt=done\n"]);
        } finally {
          await sandbox.destroy();
          await assertGone(engine, sandbox);
        }
      }, busyboxImage, proxy.endpoint);
      // Each kind of exchange went through the proxy with the Engine's own answer.
      const archive = /^\/containers\/[0-9a-f]{64}\/archive$/;
      const expected: Array<[string, RegExp, number]> = [
        ["POST", /^\/volumes\/create$/, 201],
        ["POST", /^\/containers\/create$/, 201],
        ["PUT", archive, 200], // the import, a streamed chunked request body
        ["HEAD", archive, 200], // the export's path stats
        ["GET", archive, 200], // the export, a chunked reply
        ["DELETE", /^\/containers\/[0-9a-f]{64}$/, 204],
        ["DELETE", /^\/volumes\/[^/]+$/, 204],
      ];
      for (const [method, path, status] of expected) {
        const seen = proxy.matching({ method, path });
        assert.ok(seen.length > 0 && seen.every((request) => request.status === status), `${method} ${path}: ${JSON.stringify(seen)}`);
      }
      const attach = proxy.matching({ method: "POST", path: /^\/exec\/[0-9a-f]{64}\/start$/ });
      assert.deepEqual(attach.map((request) => [request.status, request.upgraded]), [[101, true]]);
      assert.ok(proxy.requests.every((request) => request.status !== undefined && request.fault === undefined));
      // Every connection was closed by the client, also those the keep-alive proxy held open.
      await eventually("every client connection closed", () => proxy.openConnections() === 0 || undefined);
    }, keepAlive);
  }, { timeout: 180_000 });
}

engineTest("FaultProxy in keep-alive mode: ping, a JSON reply and a chunked archive complete by their framing", async (engine) => {
  await withProxy(async (proxy, client) => {
    await withContainer(engine, async (id) => {
      assert.equal(await client.ping(), true);
      const image = await client.request("GET", `/images/${busyboxImage}/json`, { schema: z.looseObject({ Id: z.string() }) });
      assert.equal(image.value.Id, busyboxImage);
      const archive = await client.stream("GET", `/containers/${id}/archive`, { query: { path: "/bin" } });
      assert.equal(archive.headers.get("transfer-encoding"), "chunked");
      const tar = new Uint8Array(await new Response(archive.body).arrayBuffer());
      assert.ok(tar.byteLength > 0 && tar.byteLength % 512 === 0, `a whole tar: ${tar.byteLength} bytes`);
      await eventually("every client connection closed", () => proxy.openConnections() === 0 || undefined);
      assert.deepEqual(proxy.requests.map((request) => `${request.method} ${request.path} ${request.status}`), [
        "GET /_ping 200",
        "GET /version 200",
        `GET /images/${busyboxImage}/json 200`,
        `GET /containers/${id}/archive 200`,
      ]);
    });
  }, true);
});

engineTest("FaultProxy drops the reply to POST /volumes/create and stalls: the volume exists, the client fails with deadline", async (engine) => {
  await withProxy(async (proxy, client) => {
    await withVolumeName(engine, async (name) => {
      const lost = proxy.inject({ ...VOLUMES_CREATE, fault: { kind: "drop", then: "stall" } });
      const created = createVolume(client, name, { "dev.agentcell.test": "proxy" }, { timeoutMs: 2_000 }).then(
        () => assert.fail("the create resolved although its reply was dropped"),
        (error: unknown) => error,
      );
      // The Engine performed the request; the client, never answered, ends at its deadline.
      assert.equal((await lost.applied).status, 201);
      assert.deepEqual((await inspectVolume(engine, name))?.Labels, { "dev.agentcell.test": "proxy" });
      transport("deadline", /took longer than 2000 ms/)(await created);
      assert.deepEqual(proxy.matching(VOLUMES_CREATE).map((request) => [request.status, request.fault]), [[201, "drop"]]);
    });
  });
});

engineTest("FaultProxy drops the reply to POST /volumes/create and closes: the volume exists, the client fails with connection", async (engine) => {
  await withProxy(async (proxy, client) => {
    await withVolumeName(engine, async (name) => {
      const lost = proxy.inject({ ...VOLUMES_CREATE, fault: { kind: "drop", then: "close" } });
      await assert.rejects(
        createVolume(client, name, {}, { timeoutMs: 30_000 }),
        transport("connection", /closed the connection without answering/),
      );
      assert.equal((await lost.applied).status, 201);
      assert.equal((await inspectVolume(engine, name))?.Name, name);
    });
  });
});

engineTest("FaultProxy swallows a request: the Engine never sees it, the client fails with connection", async (engine) => {
  await withProxy(async (proxy, client) => {
    await withVolumeName(engine, async (name) => {
      const swallowed = proxy.inject({ ...VOLUMES_CREATE, fault: { kind: "swallow", then: "close" } });
      await assert.rejects(createVolume(client, name, {}), transport("connection", /closed the connection without answering/));
      assert.equal((await swallowed.applied).status, undefined);
      assert.equal(await inspectVolume(engine, name), undefined);
      assert.deepEqual(proxy.matching(VOLUMES_CREATE).map((request) => [request.status, request.fault]), [[undefined, "swallow"]]);
      // Stalled instead: the client ends at its own deadline, and still nothing was created.
      proxy.inject({ ...VOLUMES_CREATE, fault: { kind: "swallow", then: "stall" } });
      await assert.rejects(createVolume(client, name, {}, { timeoutMs: 1_000 }), transport("deadline"));
      assert.equal(await inspectVolume(engine, name), undefined);
    });
  });
});

engineTest("FaultProxy applies a rule to the given occurrence only and records each request", async (engine) => {
  await withProxy(async (proxy, client) => {
    await withVolumeName(engine, async (name) => {
      await createVolume(engine, name, {});
      const inspect = { method: "GET", path: `/volumes/${name}` };
      const second = proxy.inject({ ...inspect, occurrence: 2, fault: { kind: "drop", then: "close" } });
      assert.equal((await inspectVolume(client, name))?.Name, name);
      await assert.rejects(inspectVolume(client, name), transport("connection"));
      assert.equal((await inspectVolume(client, name))?.Name, name);
      assert.deepEqual(proxy.matching(inspect).map((request) => [request.status, request.fault]), [
        [200, undefined],
        [200, "drop"],
        [200, undefined],
      ]);
      assert.equal((await second.applied).connection, proxy.matching(inspect)[1].connection);
      assert.equal(second.hits.length, 1);
      // "every" applies to each match until the rule is removed.
      const every = proxy.inject({ ...inspect, occurrence: "every", fault: { kind: "drop", then: "close" } });
      await assert.rejects(inspectVolume(client, name), transport("connection"));
      await assert.rejects(inspectVolume(client, name), transport("connection"));
      every.remove();
      assert.equal((await inspectVolume(client, name))?.Name, name);
      assert.equal(every.hits.length, 2);
    });
  });
});

engineTest("FaultProxy holds a reply until released, then passes it whole", async (engine) => {
  await withProxy(async (proxy, client) => {
    let release!: () => void;
    let released = false;
    const gate = new Promise<void>((resolve) => release = resolve);
    const held = proxy.inject({ method: "GET", path: "/info", fault: { kind: "delay", until: gate } });
    const info = client.info().then((value) => ({ value, releasedFirst: released }), (error: unknown) => ({ error }));
    // The Engine answered (its head was read by the proxy), the client still waits.
    assert.equal((await proxy.answered({ method: "GET", path: "/info" })).status, 200);
    released = true;
    release();
    const outcome = await info;
    assert.ok("value" in outcome, `the held request failed: ${"error" in outcome ? outcome.error : ""}`);
    assert.equal(outcome.releasedFirst, true, "the reply arrived only after the release");
    assert.equal(outcome.value.OSType, "linux");
    assert.equal((await held.applied).fault, "delay");
    // A delay in milliseconds passes the reply whole as well.
    proxy.inject({ method: "GET", path: "/_ping", fault: { kind: "delay", ms: 200 } });
    assert.equal(await client.ping(), true);
    assert.deepEqual(proxy.matching({ path: "/_ping" }).map((request) => request.fault), ["delay"]);
    assert.equal((await engine.info()).OSType, "linux");
  });
});

engineTest("FaultProxy cuts a Content-Length body and a chunked body after N bytes", async (engine) => {
  await withProxy(async (proxy, client) => {
    const cutVersion = proxy.inject({ method: "GET", path: "/version", fault: { kind: "cut", afterBodyBytes: 100 } });
    await assert.rejects(client.version(), transport("invalid_response", /ended after 100 of [0-9]+ bytes \(Content-Length\)/));
    assert.equal((await cutVersion.applied).status, 200);
    await withContainer(engine, async (id) => {
      proxy.inject({ method: "GET", path: `/containers/${id}/archive`, fault: { kind: "cut", afterBodyBytes: 10_000 } });
      const archive = await client.stream("GET", `/containers/${id}/archive`, { query: { path: "/bin" } });
      assert.equal(archive.status, 200);
      await assert.rejects(new Response(archive.body).arrayBuffer(), transport("invalid_response", /inside a chunk|before the last chunk|after a chunk's data/));
      assert.ok(archive.downloadedBytes() < 10_000n, `${archive.downloadedBytes()} body bytes passed`);
    });
  });
});

engineTest("FaultProxy cuts a request after N bytes past its head: the start's JSON body, then exactly the rest of N as exec stdin reach the guest", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await withProxy(async (proxy, client) => {
      const execId = await createExec(client, sandbox.resources.keeperId, {
        Cmd: ["/bin/sh", "-c", "wc -c > count.tmp && mv count.tmp count"],
        Env: [],
        User: "65534:65534",
        WorkingDir: "/workspace/work",
      });
      const cutStdin = proxy.inject({ method: "POST", path: `/exec/${execId}/start`, fault: { kind: "cut", afterRequestBytes: 10_000 } });
      const attach = await startExec(client, execId);
      const writer = attach.writable.getWriter();
      // The proxy passes 10,000 bytes after the head, then cuts both connections: a later write fails.
      await assert.rejects(async () => {
        for (let i = 0; i < 1_000; i++) await writer.write(new Uint8Array(4096));
      });
      attach.abort(new Error("cut"));
      assert.equal((await cutStdin.applied).upgraded, true);
      const count = await eventually("the guest to count its stdin", async () => {
        const result = await sandbox.run("/bin/sh", ["-c", "cat count 2>/dev/null || true"]);
        return result.stdoutText === "" ? undefined : result.stdoutText;
      });
      // The bytes after the head are the start request's own body, then stdin.
      const startBody = JSON.stringify({ Detach: false, Tty: false }).length;
      assert.equal(Number(count.trim()), 10_000 - startBody);
    });
  });
});

engineTest("FaultProxy counts bare connections too, so a test can prove that no request was made", async () => {
  await withProxy(async (proxy) => {
    // A client that fails its validation makes no connection at all.
    await assert.rejects(
      requestBuffered({ socketPath: proxy.socketPath, method: "GET", target: "/_ping", timeoutMs: 0, maxResponseBytes: 1_024 }),
      TypeError,
    );
    assert.equal(proxy.connections(), 0);
    // A connection that never sends a whole head is counted, though it is no request.
    const bare = connect(proxy.socketPath);
    await new Promise<void>((resolve, reject) => bare.once("connect", resolve).once("error", reject));
    bare.end("GET /_pi");
    await eventually("the bare connection counted and closed", () => proxy.connections() === 1 && proxy.openConnections() === 0 || undefined);
    assert.deepEqual(proxy.requests, []);
  });
});
