import assert from "node:assert/strict";
import { test } from "node:test";
import { exchange, requestBuffered } from "../../../lib/engine/http/mod.ts";
import { bytes, concat, type FakeConnection, startFakeEngine } from "../_fake_engine.ts";
import { latin1, readAll, readText, scriptedConnector, transportError } from "./_helpers.ts";

const decoder = new TextDecoder();

test("exchange reads a Content-Length body and sends a Connection: close request", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n",
    );
    await connection.write('{"ok":true}');
    await connection.end();
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/v1.51/containers/json?all=1",
      headers: { "X-Registry-Auth": "e30=" },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(await readText(response.body), '{"ok":true}');
    assert.equal(response.downloadedBytes(), 11n);
    assert.equal(response.uploadedBytes(), 0n);
    assert.equal(
      engine.requests[0].head,
      "GET /v1.51/containers/json?all=1 HTTP/1.1\r\nHost: docker\r\nConnection: close\r\nX-Registry-Auth: e30=",
    );
    assert.deepEqual(engine.scriptErrors, []);
  } finally {
    await engine.close();
  }
});

test("exchange sends a byte body with Content-Length and counts it", async () => {
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    await connection.write(
      `HTTP/1.1 201 Created\r\nContent-Length: ${request.body.byteLength}\r\n\r\n`,
    );
    await connection.write(request.body);
    await connection.end();
  });
  try {
    const body = bytes('{"Image":"busybox"}');
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/containers/create",
      body,
      contentType: "application/json",
    });
    assert.equal(response.status, 201);
    assert.deepEqual(await readAll(response.body), body);
    assert.equal(response.uploadedBytes(), BigInt(body.byteLength));
    assert.match(
      engine.requests[0].head,
      /\r\nContent-Type: application\/json\r\nContent-Length: 19$/,
    );
  } finally {
    await engine.close();
  }
});

test("exchange sends Content-Length: 0 for a POST without body", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 204 No Content\r\n\r\n");
    await connection.end();
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "POST",
      target: "/containers/c/start",
    });
    assert.equal(response.status, 204);
    assert.equal((await readAll(response.body)).byteLength, 0);
    assert.match(engine.requests[0].head, /\r\nContent-Length: 0$/);
  } finally {
    await engine.close();
  }
});

test("exchange decodes a chunked body over the socket", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    await connection.write("5\r\nhello\r\n");
    await connection.sleep(5);
    await connection.write("1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n");
    await connection.end();
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/logs",
    });
    assert.equal(await readText(response.body), "hello 0123456789");
    assert.equal(response.downloadedBytes(), 16n);
  } finally {
    await engine.close();
  }
});

const CHUNKED_RESPONSE = latin1(
  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "3\r\nabc\r\n10\r\n0123456789abcdef\r\n1;name=value\r\nZ\r\n0\r\nTrailer-One: 1\r\n\r\n",
);

test("exchange decodes a chunked body delivered one byte per read", async () => {
  const pieces = Array.from(CHUNKED_RESPONSE, (byte) => Uint8Array.of(byte));
  const { connector } = scriptedConnector(pieces);
  const response = await exchange({
    socketPath: "/fake.sock",
    method: "GET",
    target: "/",
    connector,
  });
  assert.equal(await readText(response.body), "abc0123456789abcdefZ");
});

test("exchange decodes a chunked body split at every byte offset", async () => {
  for (let split = 1; split < CHUNKED_RESPONSE.byteLength; split++) {
    const { connector } = scriptedConnector([
      CHUNKED_RESPONSE.subarray(0, split),
      CHUNKED_RESPONSE.subarray(split),
    ]);
    const response = await exchange({
      socketPath: "/fake.sock",
      method: "GET",
      target: "/",
      connector,
    });
    assert.equal(await readText(response.body), "abc0123456789abcdefZ", `split at ${split}`);
  }
});

test("exchange decodes chunk sizes of 1 to 16 hex digits in either case, buffered or split", async () => {
  // Up to 12 digits are parsed from buffered bytes, longer sizes by the strict line reader.
  for (let digits = 1; digits <= 16; digits++) {
    for (const [size, data] of [["a", "0123456789"], ["B", "0123456789a"]]) {
      const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      const response = latin1(`${head}${size.padStart(digits, "0")}\r\n${data}\r\n0\r\n\r\n`);
      // Whole, and split right after the size line's first digit.
      const split = head.length + 1;
      for (const pieces of [[response], [response.subarray(0, split), response.subarray(split)]]) {
        const { connector } = scriptedConnector(pieces);
        const body = (await exchange({ socketPath: "/fake.sock", method: "GET", target: "/", connector })).body;
        assert.equal(await readText(body), data, `${digits} digits of ${size}, ${pieces.length} pieces`);
      }
    }
  }
});

test("exchange reads a close-delimited body", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(
      "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\nfirst ",
    );
    await connection.sleep(5);
    await connection.write("second");
    await connection.end();
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/attach",
    });
    assert.equal(await readText(response.body), "first second");
  } finally {
    await engine.close();
  }
});

test("exchange delivers pieces of at most chunkBytes", async () => {
  const payload = new Uint8Array(10_000).map((_, index) => index % 251);
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${payload.byteLength}\r\n\r\n`);
    await connection.write(payload);
    await connection.end();
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/",
      chunkBytes: 1_000,
    });
    const reader = response.body.getReader();
    const parts: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      assert.ok(value.byteLength <= 1_000, `piece of ${value.byteLength} bytes`);
      parts.push(value);
    }
    assert.deepEqual(concat(parts), payload);
  } finally {
    await engine.close();
  }
});

test("exchange gives HEAD, 204 and 304 answers an empty body", async () => {
  const answers = [
    ["HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"],
    ["GET", "HTTP/1.1 204 No Content\r\n\r\n"],
    ["GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n"],
  ] as const;
  for (const [method, answer] of answers) {
    const engine = await startFakeEngine(async (connection) => {
      await connection.readRequest();
      await connection.write(answer);
      await connection.end();
    });
    try {
      const response = await exchange({
        socketPath: engine.socketPath,
        method,
        target: "/archive",
      });
      assert.equal((await readAll(response.body)).byteLength, 0);
      assert.equal(
        response.headers.get("content-length"),
        method === "HEAD" ? "1234" : (answer.includes("304") ? "0" : null),
      );
    } finally {
      await engine.close();
    }
  }
});

test("exchange skips a 100 Continue interim answer", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    );
    await connection.end();
  });
  try {
    const response = await exchange({ socketPath: engine.socketPath, method: "GET", target: "/" });
    assert.equal(response.status, 200);
    assert.equal(await readText(response.body), "ok");
  } finally {
    await engine.close();
  }
});

test("exchange accepts repeated equal Content-Length fields", async () => {
  const { connector } = scriptedConnector([
    latin1("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"),
  ]);
  const response = await exchange({
    socketPath: "/fake.sock",
    method: "GET",
    target: "/",
    connector,
  });
  assert.equal(await readText(response.body), "ok");
});

test("exchange streams a chunked upload and counts its bytes exactly", async () => {
  const sizes = [1, 0, 65_535, 65_536, 65_537, 200_000, 7];
  const total = sizes.reduce((sum, size) => sum + size, 0);
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    await connection.write(
      `HTTP/1.1 200 OK\r\nContent-Length: ${request.body.byteLength.toString().length}\r\n\r\n`,
    );
    await connection.write(String(request.body.byteLength));
    await connection.end();
  });
  try {
    let pulled = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        const size = sizes[pulled++];
        if (size === undefined) return controller.close();
        controller.enqueue(new Uint8Array(size).fill(pulled));
      },
    }, { highWaterMark: 0 });
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/containers/c/archive?path=%2Fworkspace",
      body: upload,
      contentType: "application/x-tar",
    });
    assert.equal(response.status, 200);
    assert.equal(await readText(response.body), String(total));
    assert.equal(response.uploadedBytes(), BigInt(total));
    const received = engine.requests[0];
    assert.match(
      received.head,
      /\r\nContent-Type: application\/x-tar\r\nTransfer-Encoding: chunked$/,
    );
    const expected = concat(sizes.map((size, index) => new Uint8Array(size).fill(index + 1)));
    assert.deepEqual(received.body, expected);
  } finally {
    await engine.close();
  }
});

/**
 * The Engine answers 404 to a PUT whose body never arrives, then `afterAnswer` (close, or
 * keep the connection open as dockerd does while it waits for the rest of the body). The
 * exchange must deliver the error body, cancel the request body and not wait for a close.
 */
async function earlyErrorAnswer(afterAnswer: (connection: FakeConnection) => Promise<void>): Promise<void> {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readHead();
    await connection.write("HTTP/1.1 404 Not Found\r\nContent-Length: 29\r\n\r\n");
    await connection.write('{"message":"No such volume"}\n');
    await afterAnswer(connection);
  });
  try {
    let cancelled: unknown;
    const upload = new ReadableStream<Uint8Array>({
      pull: () => new Promise(() => {}), // the producer never delivers
      cancel: (reason) => {
        cancelled = reason;
      },
    });
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "PUT",
      target: "/containers/c/archive?path=%2F",
      body: upload,
    });
    assert.equal(response.status, 404);
    assert.equal(await readText(response.body), '{"message":"No such volume"}\n');
    assert.ok(cancelled !== undefined, "the body stream was cancelled");
    assert.equal(response.uploadedBytes(), 0n);
    await engine.scriptDone(); // the client closed its side
  } finally {
    await engine.close();
  }
}

test("exchange stops an upload when the Engine answers an error first", async () => {
  await earlyErrorAnswer((connection) => connection.end());
});

test("exchange ends an early error body without waiting for a close the Engine never sends", async () => {
  await earlyErrorAnswer((connection) => connection.closed);
});

test("exchange body cancel closes the connection", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\n\r\nendless");
    await connection.closed;
  });
  try {
    const response = await exchange({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/events",
    });
    const reader = response.body.getReader();
    assert.equal(decoder.decode((await reader.read()).value), "endless");
    await reader.cancel();
    await engine.scriptDone();
  } finally {
    await engine.close();
  }
});

test("exchange rejects invalid options with TypeError before connecting", async () => {
  const base = { socketPath: "/fake.sock", method: "GET", target: "/" } as const;
  const invalid: Record<string, unknown>[] = [
    { socketPath: "relative.sock" },
    { target: "//x" },
    { method: "PATCH" },
    { method: "GET", body: new Uint8Array(1) },
    { chunkBytes: 65_537 },
    { chunkBytes: 0 },
    { headerTimeoutMs: 0 },
    { connectTimeoutMs: 2 ** 31 },
    { timeoutMs: 1.5 },
    { maxBodyBytes: -1 },
    { headers: { Host: "evil" } },
    { headers: { "Transfer-Encoding": "chunked" } },
    { headers: { "X-A": "a\r\nInjected: yes" } },
    { headers: { "Bad Name": "x" } },
    { contentType: "text/plain\r\nX: y" },
  ];
  for (const override of invalid) {
    await assert.rejects(
      exchange({ ...base, ...override } as Parameters<typeof exchange>[0]),
      (error: unknown) =>
        error instanceof TypeError && /^Cannot send the Engine request: /.test(error.message),
      JSON.stringify(Object.keys(override)),
    );
  }
});

test("requestBuffered returns the whole body", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nApi-Version: 1.51\r\n\r\nOK");
    await connection.end();
  });
  try {
    const reply = await requestBuffered({
      socketPath: engine.socketPath,
      method: "GET",
      target: "/_ping",
      timeoutMs: 5_000,
      maxResponseBytes: 2,
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get("api-version"), "1.51");
    assert.equal(decoder.decode(reply.body), "OK");
  } finally {
    await engine.close();
  }
});

test("requestBuffered rejects a body over maxResponseBytes with code response_limit", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
    await connection.closed;
  });
  try {
    await assert.rejects(
      requestBuffered({
        socketPath: engine.socketPath,
        method: "GET",
        target: "/",
        timeoutMs: 5_000,
        maxResponseBytes: 2,
      }),
      transportError("response_limit", /limit of 2 bytes/),
    );
  } finally {
    await engine.close();
  }
});

test("requestBuffered validates target and limits with TypeError", async () => {
  const base = {
    socketPath: "/fake.sock",
    method: "GET",
    target: "/",
    timeoutMs: 1,
    maxResponseBytes: 0,
  } as const;
  await assert.rejects(requestBuffered({ ...base, target: "/a b" }), TypeError);
  await assert.rejects(requestBuffered({ ...base, timeoutMs: 0 }), TypeError);
  await assert.rejects(requestBuffered({ ...base, maxResponseBytes: 0.5 }), TypeError);
});
