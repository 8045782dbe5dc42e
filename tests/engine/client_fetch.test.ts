import assert from "node:assert/strict";
import { MAX_API_VERSION } from "../../lib/engine/api_version.ts";
import { DockerEngineTransportError } from "../../lib/engine/errors.ts";
import { writeTar } from "../../lib/tar/write_tar.ts";
import { busyboxImage, engineTest } from "./_engine.ts";

const json = { "Content-Type": "application/json" };

engineTest("DockerEngine.fetch GET /containers/json answers a standard Response with a JSON array", async (engine) => {
  const response = await engine.fetch("/containers/json?all=true");
  assert.ok(response instanceof Response);
  assert.equal(response.status, 200);
  assert.equal(response.ok, true);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.ok(Number(response.headers.get("api-version")) >= Number("1.44"));
  assert.ok(response.body instanceof ReadableStream);
  const containers = await response.json();
  assert.ok(Array.isArray(containers));
  for (const container of containers) assert.equal(typeof container.Id, "string");
});

engineTest("DockerEngine.fetch takes a Request or an http: URL and keeps an explicit API version", async (engine) => {
  const negotiated = await engine.apiVersion();
  assert.ok(Number(negotiated) <= Number(MAX_API_VERSION));
  const viaRequest = await engine.fetch(new Request("http://docker/info"));
  assert.equal(viaRequest.status, 200);
  assert.equal(typeof (await viaRequest.json()).ID, "string");
  const viaUrl = await engine.fetch(new URL("http://ignored.example/v1.44/version"));
  assert.equal(viaUrl.status, 200);
  assert.equal((await viaUrl.json()).ApiVersion.length > 0, true);
});

engineTest("DockerEngine.fetch POSTs a JSON body, answers 404 as a Response and 204 with a null body", async (engine) => {
  const name = `agentcell-fetch-${crypto.randomUUID()}`;
  const created = await engine.fetch("/volumes/create", {
    method: "post",
    headers: json,
    body: JSON.stringify({ Name: name, Labels: { "dev.agentcell.test": "fetch" } }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const volume = await created.json();
  assert.equal(volume.Name, name);
  assert.deepEqual(volume.Labels, { "dev.agentcell.test": "fetch" });
  const removed = await engine.fetch(`/volumes/${name}`, { method: "DELETE" });
  assert.equal(removed.status, 204);
  assert.equal(removed.body, null);
  const missing = await engine.fetch(`/volumes/${name}`);
  assert.equal(missing.status, 404);
  assert.equal(missing.ok, false);
  assert.match((await missing.json()).message, /no such volume/i);
});

engineTest("DockerEngine.fetch PUTs a streamed tar body into a container and HEADs the path back", async (engine) => {
  const created = await engine.fetch("/containers/create", {
    method: "POST",
    headers: json,
    body: new TextEncoder().encode(JSON.stringify({ Image: busyboxImage, Cmd: ["/bin/true"], HostConfig: { NetworkMode: "none" } })),
  });
  assert.equal(created.status, 201);
  const { Id: id } = await created.json();
  try {
    const content = new TextEncoder().encode("streamed through fetch\n".repeat(10_000));
    const archive = writeTar([{ path: "fetched.txt", type: "file", mode: 0o644, mtime: 1_700_000_000, size: content.byteLength, body: new Blob([content]).stream() }]);
    const put = await engine.fetch(`/containers/${id}/archive?path=/tmp`, {
      method: "PUT",
      headers: { "Content-Type": "application/x-tar" },
      body: archive,
      duplex: "half",
    });
    assert.equal(put.status, 200, await put.clone().text());
    await put.body?.cancel();
    const head = await engine.fetch(`/containers/${id}/archive?path=/tmp/fetched.txt`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.body, null);
    const stat = JSON.parse(atob(head.headers.get("x-docker-container-path-stat") ?? ""));
    assert.equal(stat.name, "fetched.txt");
    assert.equal(stat.size, content.byteLength);
  } finally {
    const removed = await engine.fetch(`/containers/${id}?force=true`, { method: "DELETE" });
    assert.equal(removed.status, 204);
  }
});

engineTest("DockerEngine.fetch honours its signal and timeoutMs while the body streams", async (engine) => {
  // /events streams until the client leaves: the body read is what the signal must end.
  const controller = new AbortController();
  const events = await engine.fetch(`/events?since=${Math.floor(Date.now() / 1000)}`, { signal: controller.signal });
  assert.equal(events.status, 200);
  const reader = events.body!.getReader();
  const pending = reader.read();
  controller.abort(new Error("caller left"));
  await assert.rejects(pending, (error) => error instanceof DockerEngineTransportError && error.code === "aborted");

  await assert.rejects(
    engine.fetch("/info", { signal: AbortSignal.abort() }),
    (error) => error instanceof DockerEngineTransportError && error.code === "aborted",
  );

  // The whole deadline ends the exchange wherever it is (head or body), never the test.
  await assert.rejects(
    engine.fetch(`/events?since=${Math.floor(Date.now() / 1000)}`, { timeoutMs: 500 }).then((bounded) => new Response(bounded.body).arrayBuffer()),
    (error) => error instanceof DockerEngineTransportError && error.code === "deadline" && /longer than 500 ms/.test(error.message),
  );
});

engineTest("DockerEngine.fetch refuses what an Engine socket cannot carry with a TypeError", async (engine) => {
  for (const [input, init, reason] of [
    ["ftp://docker/info", {}, /must be a path such as "\/containers\/json" or an http: URL/],
    ["/info", { method: "PATCH" }, /method must be GET, HEAD, POST, PUT or DELETE/],
    ["/info", { body: "x" }, /must be POST or PUT to carry a body/],
    ["/info", { headers: { Connection: "keep-alive" } }, /headers must map token names/],
  ] as const) {
    await assert.rejects(engine.fetch(input, init), (error) => error instanceof TypeError && reason.test(error.message), String(reason));
  }
  const body = new ReadableStream<Uint8Array>({ pull() {} });
  await assert.rejects(engine.fetch("/info", { method: "GET", body }), TypeError);
  assert.equal(body.locked, false);
  // the refused stream body was cancelled, not left waiting
  await body.getReader().closed;
});
