import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { startFakeEngine } from "../_fake_engine.ts";

function json(status: number, body: unknown): string {
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status} X\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`;
}

function versionReply(apiVersion: string): string {
  return json(200, { Version: "x", ApiVersion: apiVersion, Os: "linux", Arch: "amd64" });
}

test("DockerEngine rejects a daemon below API 1.44, naming both versions, before any versioned request", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(versionReply("1.41"));
    await connection.end();
  });
  try {
    const client = new DockerEngine(`unix://${engine.socketPath}`);
    await assert.rejects(
      client.request("GET", "/containers/json"),
      (error) =>
        error instanceof DockerEngineError && error.code === "unsupported_api_version" &&
        /1\.41/.test(error.message) && /1\.44/.test(error.message),
    );
    assert.deepEqual(engine.requests.map((r) => r.head.split("\r\n")[0]), ["GET /version HTTP/1.1"]);
  } finally {
    await engine.close();
  }
});

test("DockerEngine sends requests under /v{min(daemon, 1.52)} and negotiates once", async () => {
  for (const [daemon, used] of [["1.53", "1.52"], ["1.45", "1.45"]]) {
    const engine = await startFakeEngine(async (connection) => {
      const request = await connection.readRequest();
      if (request.head.startsWith("GET /version ")) await connection.write(versionReply(daemon));
      else await connection.write(json(200, { ok: true }));
      await connection.end();
    });
    try {
      const client = new DockerEngine(`unix://${engine.socketPath}`);
      await client.request("GET", "/info", { expect: [200] });
      await client.request("POST", "/containers/abc/start", { expect: [200] });
      assert.deepEqual(engine.requests.map((r) => r.head.split("\r\n")[0]), [
        "GET /version HTTP/1.1",
        `GET /v${used}/info HTTP/1.1`,
        `POST /v${used}/containers/abc/start HTTP/1.1`,
      ]);
    } finally {
      await engine.close();
    }
  }
});

test("DockerEngine maps statuses to codes with the Engine's message", async () => {
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    if (request.head.startsWith("GET /version ")) await connection.write(versionReply("1.51"));
    else await connection.write(json(409, { message: "container is in use" }));
    await connection.end();
  });
  try {
    const client = new DockerEngine(`unix://${engine.socketPath}`);
    await assert.rejects(
      client.request("DELETE", "/volumes/v", { action: "remove volume" }),
      (error) =>
        error instanceof DockerEngineError && error.code === "conflict" && error.status === 409 &&
        error.engineMessage === "container is in use" &&
        error.message === "Cannot remove volume: the Engine answered 409 (container is in use)",
    );
  } finally {
    await engine.close();
  }
});
