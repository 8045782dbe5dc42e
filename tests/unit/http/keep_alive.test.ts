// A server that keeps the connection open after a complete response (a keep-alive server,
// a socket proxy in front of the Engine): the framing alone ends the response and our side
// closes. The fake engine below never closes, so only the framing can end these exchanges;
// every test asserts the completion and then that the client closed the connection.
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { exchange, upgrade } from "../../../lib/engine/http/mod.ts";
import { type FakeEngine, type FakeRequest, startFakeEngine } from "../_fake_engine.ts";
import { readText, transportError } from "./_helpers.ts";

const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });

/** A generous deadline of the client's own, so a regression fails with its reason instead of hanging. */
const DEADLINE_MS = 30_000;

function json(body: string): string {
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/**
 * A fake engine that answers each request with the pieces `answer` gives and then keeps
 * the connection open until the client closes it; `closedByClient` counts those closes.
 */
async function keepAliveEngine(
  answer: (request: FakeRequest) => readonly string[],
): Promise<FakeEngine & { readonly closedByClient: () => number }> {
  let closedByClient = 0;
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    for (const piece of answer(request)) await connection.write(piece);
    await connection.closed;
    closedByClient++;
  });
  return Object.assign(engine, { closedByClient: () => closedByClient });
}

/** Waits until every script ran to its end and asserts the client closed each connection. */
async function closedByClient(engine: FakeEngine & { readonly closedByClient: () => number }, connections: number): Promise<void> {
  for (let n = 1; n <= connections; n++) await engine.scriptDone(n);
  assert.deepEqual(engine.scriptErrors, []);
  assert.equal(engine.closedByClient(), connections);
}

test("DockerEngine.ping completes on a connection the server keeps open after Content-Length", async () => {
  const engine = await keepAliveEngine(() => ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nOK"]);
  try {
    const client = new DockerEngine(`unix://${engine.socketPath}`);
    assert.equal(await client.ping({ timeoutMs: DEADLINE_MS }), true);
    await closedByClient(engine, 1);
  } finally {
    await engine.close();
  }
});

test("DockerEngine.request completes version negotiation and a JSON reply on kept-open connections", async () => {
  const engine = await keepAliveEngine((request) =>
    request.head.startsWith("GET /version ") ? [json(VERSION)] : [json('{"Id":"abc","State":{"Running":true}}')]
  );
  try {
    const client = new DockerEngine(`unix://${engine.socketPath}`);
    const reply = await client.request("GET", "/containers/abc/json", {
      schema: z.object({ Id: z.string(), State: z.object({ Running: z.boolean() }) }),
      timeoutMs: DEADLINE_MS,
    });
    assert.deepEqual(reply.value, { Id: "abc", State: { Running: true } });
    await closedByClient(engine, 2);
    assert.match(engine.requests[1].head, /^GET \/v1\.51\/containers\/abc\/json HTTP\/1\.1\r\n/);
  } finally {
    await engine.close();
  }
});

test("exchange streams a chunked body to its last chunk on a connection the server keeps open", async () => {
  const engine = await keepAliveEngine(() => [
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    "5\r\nhello\r\n",
    "6\r\n world\r\n",
    "0\r\nX-Trailer: done\r\n\r\n",
  ]);
  try {
    const response = await exchange({ socketPath: engine.socketPath, method: "GET", target: "/v1.51/archive", timeoutMs: DEADLINE_MS });
    assert.equal(await readText(response.body), "hello world");
    assert.equal(response.downloadedBytes(), 11n);
    await closedByClient(engine, 1);
  } finally {
    await engine.close();
  }
});

test("exchange sends a streamed request body and completes the answer on a kept-open connection", async () => {
  const engine = await keepAliveEngine((request) => [`HTTP/1.1 200 OK\r\nContent-Length: ${request.body.byteLength}\r\n\r\n`, new TextDecoder().decode(request.body)]);
  try {
    const parts = ["first ", "second"];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const part = parts.shift();
        if (part === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(part));
      },
    });
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/v1.51/containers/abc/archive",
      body,
      contentType: "application/x-tar",
      timeoutMs: DEADLINE_MS,
    });
    assert.equal(await readText(response.body), "first second");
    assert.equal(response.uploadedBytes(), 12n);
    await closedByClient(engine, 1);
  } finally {
    await engine.close();
  }
});

test("exchange ends a HEAD answer and a 204 without a body on kept-open connections", async () => {
  const engine = await keepAliveEngine((request) =>
    request.head.startsWith("HEAD ")
      ? ["HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nX-Docker-Container-Path-Stat: e30=\r\n\r\n"]
      : ["HTTP/1.1 204 No Content\r\n\r\n"]
  );
  try {
    const head = await exchange({ socketPath: engine.socketPath, method: "HEAD", target: "/v1.51/containers/abc/archive?path=%2F", timeoutMs: DEADLINE_MS });
    assert.equal(head.headers.get("x-docker-container-path-stat"), "e30=");
    assert.equal(await readText(head.body), "");
    const deleted = await exchange({ socketPath: engine.socketPath, method: "DELETE", target: "/v1.51/volumes/abc", timeoutMs: DEADLINE_MS });
    assert.equal(deleted.status, 204);
    assert.equal(await readText(deleted.body), "");
    await closedByClient(engine, 2);
  } finally {
    await engine.close();
  }
});

test("exchange still fails bytes that arrive past Content-Length on a kept-open connection", async () => {
  const engine = await keepAliveEngine(() => ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more"]);
  try {
    const response = await exchange({ socketPath: engine.socketPath, method: "GET", target: "/v1.51/test", timeoutMs: DEADLINE_MS });
    await assert.rejects(readText(response.body), transportError("invalid_response", /more bytes than the body declared/));
    await closedByClient(engine, 1);
  } finally {
    await engine.close();
  }
});

test("upgrade reports a refusal with a Content-Length body on a kept-open connection", async () => {
  const message = '{"message":"No such exec instance: abc"}';
  const engine = await keepAliveEngine(() => [
    `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${message.length}\r\n\r\n${message}`,
  ]);
  try {
    await assert.rejects(
      upgrade({ socketPath: engine.socketPath, method: "POST", target: "/v1.51/exec/abc/start", headerTimeoutMs: DEADLINE_MS }),
      (error) => transportError("invalid_response", /answered 404 Not Found instead of 101: .*No such exec instance/)(error) && (error as { status?: number }).status === 404,
    );
    await closedByClient(engine, 1);
  } finally {
    await engine.close();
  }
});
