import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type EngineExchangeOptions,
  exchange,
  type UnixConnector,
} from "../../../lib/engine/http/mod.ts";
import { type FakeConnection, startFakeEngine } from "../_fake_engine.ts";
import { latin1, readAll, scriptedConnector, transportError } from "./_helpers.ts";

/** Runs a GET against a fake engine that reads the request, then runs `answer`. */
async function against(
  answer: (connection: FakeConnection) => Promise<void>,
  run: (options: EngineExchangeOptions) => Promise<void>,
): Promise<void> {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await answer(connection);
  });
  try {
    await run({ socketPath: engine.socketPath, method: "GET", target: "/v1.51/test" });
  } finally {
    await engine.close();
  }
}

/** The body of a response given as raw bytes by an in-memory peer, read to the end. */
async function bodyOf(
  raw: string,
  options: Partial<EngineExchangeOptions> = {},
): Promise<Uint8Array> {
  const { connector } = scriptedConnector([latin1(raw)]);
  const response = await exchange({
    socketPath: "/fake.sock",
    method: "GET",
    target: "/",
    connector,
    ...options,
  });
  return await readAll(response.body);
}

/** The exchange of a response given as raw bytes by an in-memory peer. */
function headOf(raw: string): Promise<unknown> {
  const { connector } = scriptedConnector([latin1(raw)]);
  return exchange({ socketPath: "/fake.sock", method: "GET", target: "/", connector });
}

test("exchange fails a truncated Content-Length body with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd");
  }, async (options) => {
    const response = await exchange(options);
    await assert.rejects(
      readAll(response.body),
      transportError("invalid_response", /after 4 of 10 bytes/),
    );
  });
});

test("exchange fails a chunked body without its last chunk with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  }, async (options) => {
    const response = await exchange(options);
    await assert.rejects(
      readAll(response.body),
      transportError("invalid_response", /before the last chunk/),
    );
  });
});

test("exchange fails an invalid chunk size with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    );
  }, async (options) => {
    const response = await exchange(options);
    await assert.rejects(
      readAll(response.body),
      transportError("invalid_response", /not hexadecimal/),
    );
  });
  for (const size of ["-1", "+3", " 3", "3 ", "0x3", "", "11111111111111111"]) {
    await assert.rejects(
      bodyOf(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\nabc\r\n0\r\n\r\n`),
      transportError("invalid_response"),
      `size line ${JSON.stringify(size)}`,
    );
  }
});

test("exchange fails chunk data longer than its declared size with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n",
    );
  }, async (options) => {
    const response = await exchange(options);
    await assert.rejects(
      readAll(response.body),
      transportError("invalid_response", /longer than its declared size/),
    );
  });
});

test("exchange fails an oversized chunk-size line with response_limit", async () => {
  const extension = ";x=" + "y".repeat(5_000);
  await assert.rejects(
    bodyOf(
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3${extension}\r\nabc\r\n0\r\n\r\n`,
    ),
    transportError("response_limit", /chunk-size line: it exceeds 4096 bytes/),
  );
});

test("exchange fails oversized trailers with response_limit", async () => {
  const trailers = Array.from({ length: 200 }, (_, index) => `X-T${index}: ${"v".repeat(100)}\r\n`)
    .join("");
  await assert.rejects(
    bodyOf(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${trailers}\r\n`),
    transportError("response_limit", /trailer section: it exceeds 16384 bytes/),
  );
});

test("exchange fails an oversized head with response_limit", async () => {
  await against(async (connection) => {
    await connection.write(
      `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(20_000)}\r\nContent-Length: 0\r\n\r\n`,
    );
  }, async (options) => {
    await assert.rejects(
      exchange(options),
      transportError("response_limit", /response head: it exceeds 16384 bytes/),
    );
  });
  // Many small lines add up to the same bound.
  const lines = Array.from({ length: 2_000 }, (_, index) => `X-${index}: v\r\n`).join("");
  await assert.rejects(headOf(`HTTP/1.1 200 OK\r\n${lines}\r\n`), transportError("response_limit"));
});

test("exchange counts interim 1xx heads against the head limit with response_limit", async () => {
  await assert.rejects(
    headOf("HTTP/1.1 100 Continue\r\n\r\n".repeat(1_000) + "HTTP/1.1 200 OK\r\n\r\n"),
    transportError("response_limit", /response head: it exceeds 16384 bytes/),
  );
});

test("exchange fails when no head arrives within headerTimeoutMs with deadline", async () => {
  await against((connection) => connection.closed, async (options) => {
    // The server never answers: only the head timeout can end the exchange.
    await assert.rejects(
      exchange({ ...options, headerTimeoutMs: 100 }),
      transportError("deadline", /none within 100 ms after the request was sent/),
    );
  });
});

test("exchange fails a server that never answers within timeoutMs with deadline", async () => {
  await against((connection) => connection.closed, async (options) => {
    await assert.rejects(
      exchange({ ...options, timeoutMs: 100 }),
      transportError("deadline", /longer than 100 ms/),
    );
  });
});

test("exchange fails a body that stalls past timeoutMs with deadline", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    await connection.closed;
  }, async (options) => {
    const response = await exchange({ ...options, timeoutMs: 150 });
    await assert.rejects(readAll(response.body), transportError("deadline"));
  });
});

test("exchange fails when connecting takes longer than connectTimeoutMs with deadline", async () => {
  let connectSignal: AbortSignal | undefined;
  const connector: UnixConnector = (_path, options) => {
    connectSignal = options?.signal;
    return new Promise(() => {});
  };
  await assert.rejects(
    exchange({
      socketPath: "/fake.sock",
      method: "GET",
      target: "/",
      connectTimeoutMs: 50,
      connector,
    }),
    transportError("deadline", /no connection within 50 ms/),
  );
  assert.equal(connectSignal?.aborted, true);
});

test("exchange fails a missing socket with connection", async () => {
  await assert.rejects(
    exchange({ socketPath: "/nonexistent-agentcell/docker.sock", method: "GET", target: "/" }),
    transportError("connection"),
  );
});

test("exchange fails a connection closed without an answer with connection", async () => {
  await against((connection) => Promise.resolve(connection.destroy()), async (options) => {
    await assert.rejects(exchange(options), transportError("connection", /without answering/));
  });
});

test("exchange aborted mid-body errors the body with aborted", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    await connection.closed;
  }, async (options) => {
    const controller = new AbortController();
    const response = await exchange({ ...options, signal: controller.signal });
    const reader = response.body.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), "first");
    const pending = reader.read();
    const reason = new Error("caller stopped");
    controller.abort(reason);
    await assert.rejects(
      pending,
      (error: unknown) => transportError("aborted")(error) && (error as Error).cause === reason,
    );
  });
});

test("exchange aborted while idle mid-body errors the body with aborted", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome");
    await connection.closed;
  }, async (options) => {
    const controller = new AbortController();
    const response = await exchange({ ...options, signal: controller.signal });
    controller.abort();
    await assert.rejects(readAll(response.body), transportError("aborted"));
  });
});

test("exchange aborted before the head rejects with aborted", async () => {
  await against((connection) => connection.closed, async (options) => {
    const controller = new AbortController();
    const pending = exchange({ ...options, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(pending, transportError("aborted"));
  });
  await assert.rejects(
    exchange({ socketPath: "/fake.sock", method: "GET", target: "/", signal: AbortSignal.abort() }),
    transportError("aborted"),
  );
});

test("exchange fails an unexpected 101 on a plain request with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write(
      "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\nraw",
    );
  }, async (options) => {
    await assert.rejects(
      exchange(options),
      transportError("invalid_response", /switched protocols \(101\)/),
    );
  });
});

test("exchange fails more bytes than Content-Length with invalid_response", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more");
  }, async (options) => {
    const response = await exchange(options);
    await assert.rejects(
      readAll(response.body),
      transportError("invalid_response", /more bytes than the body declared/),
    );
  });
  await assert.rejects(
    bodyOf("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nextra"),
    transportError("invalid_response"),
  );
});

test("exchange fails a body over maxBodyBytes with response_limit", async () => {
  await against(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world");
  }, async (options) => {
    const response = await exchange({ ...options, maxBodyBytes: 10 });
    await assert.rejects(
      readAll(response.body),
      transportError("response_limit", /limit of 10 bytes/),
    );
  });
  await assert.rejects(
    bodyOf("HTTP/1.1 200 OK\r\n\r\nhello world", { maxBodyBytes: 10 }),
    transportError("response_limit"),
  );
  assert.equal((await bodyOf("HTTP/1.1 200 OK\r\n\r\nhello", { maxBodyBytes: 5 })).byteLength, 5);
  assert.equal(
    (await bodyOf("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", { maxBodyBytes: 0 })).byteLength,
    0,
  );
});

test("exchange fails Content-Length with Transfer-Encoding with invalid_response", async () => {
  await assert.rejects(
    headOf(
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ),
    transportError("invalid_response", /both Content-Length and Transfer-Encoding/),
  );
});

test("exchange fails differing Content-Length values with invalid_response", async () => {
  await assert.rejects(
    headOf("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
    transportError("invalid_response", /differing Content-Length/),
  );
  for (const value of ["-1", "1.0", "0x10", "", "1 2", "1234567890123456"]) {
    await assert.rejects(
      headOf(`HTTP/1.1 200 OK\r\nContent-Length: ${value}\r\n\r\n`),
      transportError("invalid_response"),
      `Content-Length ${JSON.stringify(value)}`,
    );
  }
});

test("exchange fails a transfer coding other than chunked with invalid_response", async () => {
  for (const coding of ["gzip", "gzip, chunked", "chunked, chunked", "identity"]) {
    await assert.rejects(
      headOf(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${coding}\r\n\r\n`),
      transportError("invalid_response", /not supported/),
      coding,
    );
  }
});

test("exchange fails a malformed head with invalid_response", async () => {
  const heads = {
    "obs-fold": "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\n\r\n",
    "bare LF": "HTTP/1.1 200 OK\nContent-Length: 0\n\n",
    "bare LF in a header line": "HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 0\r\n\r\n",
    "bare CR": "HTTP/1.1 200 OK\r\nX-A: 1\r2\r\n\r\n",
    "space before colon": "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",
    "invalid name": "HTTP/1.1 200 OK\r\nX(A): 1\r\n\r\n",
    "no colon": "HTTP/1.1 200 OK\r\nJustText\r\n\r\n",
    "empty name": "HTTP/1.1 200 OK\r\n: value\r\n\r\n",
    "NUL in value": "HTTP/1.1 200 OK\r\nX-A: a\u0000b\r\n\r\n",
    "HTTP/1.0": "HTTP/1.0 200 OK\r\n\r\n",
    "two-digit status": "HTTP/1.1 20 OK\r\n\r\n",
    "status 600": "HTTP/1.1 600 Odd\r\n\r\n",
    "lowercase version": "http/1.1 200 OK\r\n\r\n",
    "truncated head": "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",
    "truncated line": "HTTP/1.1 200 OK\r\nContent-Len",
  };
  for (const [name, head] of Object.entries(heads)) {
    await assert.rejects(headOf(head), transportError("invalid_response"), name);
  }
});

test("exchange fails when the request body stream errors with aborted", async () => {
  await against((connection) => connection.closed, async (options) => {
    const failure = new Error("tar writer failed");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(10));
      },
      pull(controller) {
        controller.error(failure);
      },
    });
    await assert.rejects(
      exchange({ ...options, method: "PUT", body }),
      (error: unknown) =>
        transportError("aborted", /body stream failed/)(error) &&
        (error as Error).cause === failure,
    );
  });
});

test("a failing request body still delivers every chunk queued before the failure", async () => {
  // The Engine extracts a tar as it arrives; what the caller counted as sent must arrive.
  const chunks = 12;
  const chunkBytes = 60_000;
  let received = 0;
  const engine = await startFakeEngine(async (connection) => {
    await connection.readHead();
    await connection.readToEnd().catch(() => {});
    received = connection.received();
  });
  try {
    let pulled = 0;
    const failure = new Error("quota exceeded");
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled++ === chunks) controller.error(failure);
        else controller.enqueue(new Uint8Array(chunkBytes).fill(pulled));
      },
    }, { highWaterMark: 0 });
    await assert.rejects(
      exchange({ socketPath: engine.socketPath, method: "PUT", target: "/containers/c/archive?path=%2F", body }),
      (error: unknown) => transportError("aborted", /quota exceeded/)(error) && (error as Error).cause === failure,
    );
    await engine.scriptDone();
    // Each 60,000-byte chunk goes out as one piece: size line "ea60", CRLFs, its bytes.
    assert.ok(received >= chunks * chunkBytes, `${received} bytes arrived`);
  } finally {
    await engine.close();
  }
});
