// DockerEngine.fetch against a scripted fake engine: the bounds and faults a real Engine will
// not produce on demand (an oversized head, a body past its limit, a truncated body, a stall,
// an unasked 101), and the exact bytes of the request it sends.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineTransportError } from "../../../lib/engine/errors.ts";
import { MAX_RESPONSE_HEAD_BYTES } from "../../../lib/engine/http/limits.ts";
import { type FakeConnection, startVersionedFakeEngine } from "../_fake_engine.ts";


/** A fake engine that answers `/version` itself and hands every other request to `script`. */
async function withEngine(
  script: (connection: FakeConnection, head: string) => Promise<void>,
  fn: (client: DockerEngine, heads: () => string[], bodies: () => Uint8Array[]) => Promise<void>,
): Promise<void> {
  const engine = await startVersionedFakeEngine(script);
  try {
    await fn(
      new DockerEngine(`unix://${engine.socketPath}`),
      () => engine.requests.map((request) => request.head),
      () => engine.requests.map((request) => request.body),
    );
    assert.deepEqual(engine.scriptErrors, []);
  } finally {
    await engine.close();
  }
}

function fails(code: string, message?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof DockerEngineTransportError, `expected DockerEngineTransportError, got ${error}`);
    assert.equal(error.code, code);
    if (message) assert.match(error.message, message);
    return true;
  };
}

test("DockerEngine.fetch sends the path under the negotiated version, bytes with Content-Length and streams chunked", async () => {
  await withEngine(async (connection) => {
    await connection.write("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    await connection.end();
  }, async (client, heads, bodies) => {
    const bytes = await client.fetch("/volumes/create?x=1#dropped", { method: "POST", headers: { "Content-Type": "application/json", "X-Trace": "a" }, body: '{"Name":"v"}' });
    assert.equal(bytes.status, 201);
    assert.deepEqual(await bytes.json(), {});
    const stream = await client.fetch("http://ignored/v1.44/images/create?fromSrc=-", {
      method: "POST",
      body: new Blob(["first ", "second"]).stream(),
    });
    assert.equal(stream.status, 201);
    await stream.body!.cancel();
    const [version, first, second] = heads();
    assert.equal(version.split("\r\n")[0], "GET /version HTTP/1.1");
    assert.equal(first.split("\r\n")[0], "POST /v1.51/volumes/create?x=1 HTTP/1.1");
    assert.match(first, /\r\ncontent-type: application\/json/i);
    assert.match(first, /\r\ncontent-length: 12/i);
    assert.match(first, /\r\nx-trace: a/i);
    assert.equal(second.split("\r\n")[0], "POST /v1.44/images/create?fromSrc=- HTTP/1.1");
    assert.match(second, /\r\ntransfer-encoding: chunked/i);
    assert.doesNotMatch(second, /content-type/i);
    assert.equal(new TextDecoder().decode(bodies()[1]), '{"Name":"v"}');
    assert.equal(new TextDecoder().decode(bodies()[2]), "first second");
  });
});

test("DockerEngine.fetch rejects a head over 16 KiB with response_limit", async () => {
  await withEngine(async (connection) => {
    await connection.write(`HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(MAX_RESPONSE_HEAD_BYTES)}\r\n\r\n`);
    await connection.end();
  }, async (client) => {
    await assert.rejects(client.fetch("/info"), fails("response_limit"));
  });
});

test("DockerEngine.fetch delivers the body in pieces of at most chunkBytes and stops past maxBodyBytes", async () => {
  const body = "x".repeat(10_000);
  await withEngine(async (connection) => {
    await connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await connection.end();
  }, async (client) => {
    const small = await client.fetch("/containers/json", { chunkBytes: 1_000 });
    const sizes: number[] = [];
    for await (const piece of small.body!) sizes.push(piece.byteLength);
    assert.equal(sizes.reduce((a, b) => a + b, 0), body.length);
    assert.ok(sizes.every((size) => size <= 1_000), `pieces ${sizes}`);

    const limited = await client.fetch("/containers/json", { maxBodyBytes: 9_999 });
    await assert.rejects(limited.text(), fails("response_limit", /exceeds the limit of 9999 bytes/));
  });
});

test("DockerEngine.fetch fails a truncated body with invalid_response", async () => {
  await withEngine(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
    await connection.end();
  }, async (client) => {
    const response = await client.fetch("/containers/json");
    await assert.rejects(response.arrayBuffer(), fails("invalid_response"));
  });
});

test("DockerEngine.fetch ends a head that never comes at headerTimeoutMs with deadline", async () => {
  await withEngine(async (connection) => {
    await connection.sleep(60_000);
  }, async (client) => {
    await assert.rejects(client.fetch("/info", { headerTimeoutMs: 50 }), fails("deadline", /none within 50 ms/));
  });
});

test("DockerEngine.fetch refuses a 101 it did not ask for with invalid_response", async () => {
  await withEngine(async (connection) => {
    await connection.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\n");
    await connection.end();
  }, async (client) => {
    await assert.rejects(client.fetch("/info"), fails("invalid_response", /switched protocols \(101\)/));
  });
});
