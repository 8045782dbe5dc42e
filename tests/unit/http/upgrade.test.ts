import assert from "node:assert/strict";
import { test } from "node:test";
import { upgrade } from "../../../lib/engine/http/mod.ts";
import { bytes, startFakeEngine } from "../_fake_engine.ts";
import { latin1, readText, scriptedConnector, transportError } from "./_helpers.ts";

const decoder = new TextDecoder();
const SWITCHING = "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n" +
  "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
const EXEC_START = bytes(JSON.stringify({ Detach: false, Tty: false }));

test("upgrade hands on payload bytes that arrived in the same chunk as the 101 head", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(`${SWITCHING}first frame bytes`);
    await connection.sleep(10);
    await connection.write(" and later ones");
    await connection.end();
    await connection.closed;
  });
  try {
    const attach = await upgrade({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/v1.51/exec/abc/start",
      body: EXEC_START,
      contentType: "application/json",
    });
    assert.equal(attach.status, 101);
    assert.equal(attach.headers.get("upgrade"), "tcp");
    assert.equal(await readText(attach.readable), "first frame bytes and later ones");
    await attach.close();
    const request = engine.requests[0];
    assert.match(
      request.head,
      /^POST \/v1\.51\/exec\/abc\/start HTTP\/1\.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n/,
    );
    assert.deepEqual(request.body, EXEC_START);
  } finally {
    await engine.close();
  }
});

test("upgrade reads the 101 head and the first payload from one runtime chunk", async () => {
  const { connector, written } = scriptedConnector([
    latin1(`${SWITCHING}\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0002hi`),
  ]);
  const attach = await upgrade({
    socketPath: "/fake.sock",
    method: "POST",
    target: "/exec/abc/start",
    connector,
  });
  const reader = attach.readable.getReader();
  const first = await reader.read();
  assert.deepEqual(first.value, Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 2, 0x68, 0x69));
  assert.equal((await reader.read()).done, true);
  await attach.close();
  assert.match(
    decoder.decode(written[0]),
    /\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n$/,
  );
});

test("upgrade keeps half-close working: the Engine sees EOF, then writes more", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(SWITCHING);
    const stdin = await connection.readToEnd();
    await connection.write(`stdin had ${stdin.byteLength} bytes;`);
    await connection.sleep(10);
    await connection.write("exit 0");
    await connection.end();
  });
  try {
    const attach = await upgrade({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/exec/abc/start",
      body: EXEC_START,
    });
    const stdin = attach.writable.getWriter();
    await stdin.write(bytes("hello "));
    await stdin.write(bytes("world"));
    stdin.releaseLock();
    await attach.closeWrite();
    assert.equal(await readText(attach.readable), "stdin had 11 bytes;exit 0");
    await attach.close();
    assert.deepEqual(engine.scriptErrors, []);
  } finally {
    await engine.close();
  }
});

test("upgrade half-closes when its writable is closed", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(SWITCHING);
    const stdin = await connection.readToEnd();
    await connection.write(decoder.decode(stdin).toUpperCase());
    await connection.end();
  });
  try {
    const attach = await upgrade({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/exec/abc/start",
    });
    await new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes("piped stdin"));
        controller.close();
      },
    }).pipeTo(attach.writable);
    assert.equal(await readText(attach.readable), "PIPED STDIN");
    await attach.close();
  } finally {
    await engine.close();
  }
});

test("upgrade fails a non-101 answer with invalid_response, its status and body", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    const json = '{"message":"No such exec instance: abc"}\n';
    await connection.write(
      `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`,
    );
    await connection.end();
  });
  try {
    await assert.rejects(
      upgrade({
        socketPath: engine.socketPath,
        method: "POST",
        target: "/exec/abc/start",
        body: EXEC_START,
      }),
      (error: unknown) => {
        transportError(
          "invalid_response",
          /answered 404 Not Found instead of 101: \{"message":"No such exec instance: abc"\}$/,
        )(error);
        const { status, body } = error as { status: number; body: Uint8Array };
        assert.equal(status, 404);
        assert.equal(decoder.decode(body), '{"message":"No such exec instance: abc"}\n');
        return true;
      },
    );
  } finally {
    await engine.close();
  }
});

test("upgrade bounds the quoted body of a non-101 answer", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 500 Internal Server Error\r\n\r\n" + "x".repeat(100_000));
    await connection.closed;
  });
  try {
    await assert.rejects(
      upgrade({ socketPath: engine.socketPath, method: "POST", target: "/exec/abc/start" }),
      (error: unknown) => {
        transportError("invalid_response", /answered 500/)(error);
        assert.equal((error as { status: number }).status, 500);
        assert.equal((error as { body: Uint8Array }).body.byteLength, 4_096);
        return true;
      },
    );
  } finally {
    await engine.close();
  }
});

test("upgrade fails a 200 answer with invalid_response", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    await connection.end();
  });
  try {
    await assert.rejects(
      upgrade({ socketPath: engine.socketPath, method: "POST", target: "/exec/abc/start" }),
      transportError("invalid_response", /answered 200 OK instead of 101$/),
    );
  } finally {
    await engine.close();
  }
});

test("upgrade accepts a head up to 64 KiB and rejects a larger one with response_limit", async () => {
  for (const [size, ok] of [[40_000, true], [70_000, false]] as const) {
    const engine = await startFakeEngine(async (connection) => {
      await connection.readRequest();
      await connection.write(`HTTP/1.1 101 UPGRADED\r\nX-Pad: ${"p".repeat(size)}\r\n\r\n`);
      await connection.end();
      await connection.closed;
    });
    try {
      const attempt = upgrade({
        socketPath: engine.socketPath,
        method: "POST",
        target: "/exec/abc/start",
      });
      if (ok) await (await attempt).close();
      else await assert.rejects(attempt, transportError("response_limit", /exceeds 65536 bytes/));
    } finally {
      await engine.close();
    }
  }
});

test("upgrade aborted by its signal after the switch errors the readable with aborted", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(`${SWITCHING}some output`);
    await connection.closed;
  });
  try {
    const controller = new AbortController();
    const attach = await upgrade({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/exec/abc/start",
      signal: controller.signal,
      chunkBytes: 4,
    });
    const reader = attach.readable.getReader();
    assert.equal(decoder.decode((await reader.read()).value), "some");
    controller.abort();
    await assert.rejects(reader.read(), transportError("aborted"));
    await assert.rejects(attach.writable.getWriter().write(bytes("x")), transportError("aborted"));
    await engine.scriptDone();
  } finally {
    await engine.close();
  }
});

test("upgrade fails when no head arrives within headerTimeoutMs with deadline", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.closed;
  });
  try {
    await assert.rejects(
      upgrade({
        socketPath: engine.socketPath,
        method: "POST",
        target: "/exec/abc/start",
        headerTimeoutMs: 80,
      }),
      transportError("deadline"),
    );
  } finally {
    await engine.close();
  }
});
