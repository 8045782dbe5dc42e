import assert from "node:assert/strict";
import { test } from "node:test";
import { exchange, requestBuffered, upgrade } from "../../../lib/engine/http/mod.ts";
import { type FakeConnection, startFakeEngine } from "../_fake_engine.ts";
import { readAll, transportError } from "./_helpers.ts";

/** Counts timers started through `globalThis.setTimeout` that neither fired nor were cleared. */
async function withTimerCount<T>(run: () => Promise<T>): Promise<{ value: T; liveTimers: number }> {
  const originalSet = globalThis.setTimeout;
  const originalClear = globalThis.clearTimeout;
  const live = new Set<unknown>();
  globalThis.setTimeout =
    ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const handle = originalSet(() => {
        live.delete(handle);
        callback(...args);
      }, ms);
      live.add(handle);
      return handle;
    }) as typeof setTimeout;
  globalThis.clearTimeout = ((handle: Parameters<typeof clearTimeout>[0]) => {
    live.delete(handle);
    originalClear(handle);
  }) as typeof clearTimeout;
  try {
    const value = await run();
    return { value, liveTimers: live.size };
  } finally {
    globalThis.setTimeout = originalSet;
    globalThis.clearTimeout = originalClear;
    for (const handle of live) originalClear(handle as Parameters<typeof clearTimeout>[0]);
  }
}

/** A signal that counts its registered abort listeners. */
function countedSignal(): { signal: AbortSignal; listeners: () => number } {
  const signal = new AbortController().signal;
  let listeners = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener =
    ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
      if (type === "abort") listeners++;
      add(type, listener, options);
    }) as typeof signal.addEventListener;
  signal.removeEventListener =
    ((type: string, listener: EventListener, options?: EventListenerOptions) => {
      if (type === "abort") listeners--;
      remove(type, listener, options);
    }) as typeof signal.removeEventListener;
  return { signal, listeners: () => listeners };
}

/**
 * Runs `run` against a fake engine playing `script`, with a signal that counts its abort
 * listeners and a count of live timers, and asserts that neither is left behind.
 */
async function assertNothingLeft(
  script: (connection: FakeConnection) => Promise<void>,
  run: (socketPath: string, signal: AbortSignal, listeners: () => number) => Promise<void>,
): Promise<void> {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await script(connection);
  });
  try {
    const { signal, listeners } = countedSignal();
    const { liveTimers } = await withTimerCount(() => run(engine.socketPath, signal, listeners));
    assert.equal(liveTimers, 0, "no timer is left");
    assert.equal(listeners(), 0, "no abort listener is left");
  } finally {
    await engine.close();
  }
}

test("requestBuffered leaves no timer or abort listener behind on success", async () => {
  await assertNothingLeft(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK");
    await connection.end();
  }, async (socketPath, signal) => {
    const reply = await requestBuffered({ socketPath, method: "GET", target: "/_ping", timeoutMs: 5_000, maxResponseBytes: 10, signal });
    assert.equal(reply.status, 200);
  });
});

test("exchange leaves no timer or abort listener behind after a header deadline", async () => {
  await assertNothingLeft((connection) => connection.closed, async (socketPath, signal) => {
    await assert.rejects(
      exchange({ socketPath, method: "GET", target: "/", headerTimeoutMs: 50, timeoutMs: 60_000, signal }),
      transportError("deadline"),
    );
  });
});

test("exchange leaves no timer or abort listener behind after a truncated body", async () => {
  await assertNothingLeft(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc");
    await connection.end();
  }, async (socketPath, signal) => {
    const response = await exchange({ socketPath, method: "GET", target: "/", timeoutMs: 60_000, signal });
    await assert.rejects(readAll(response.body), transportError("invalid_response"));
  });
});

test("exchange leaves no timer or abort listener behind after the body is cancelled", async () => {
  await assertNothingLeft(async (connection) => {
    await connection.write("HTTP/1.1 200 OK\r\n\r\nstream");
    await connection.closed;
  }, async (socketPath, signal) => {
    const response = await exchange({ socketPath, method: "GET", target: "/", timeoutMs: 60_000, signal });
    await response.body.cancel();
  });
});

test("upgrade leaves no timer or abort listener behind once closed", async () => {
  await assertNothingLeft(async (connection) => {
    await connection.write("HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\n");
    await connection.closed;
  }, async (socketPath, signal, listeners) => {
    const attach = await upgrade({ socketPath, method: "POST", target: "/exec/a/start", signal });
    assert.equal(listeners(), 1, "the signal still guards the upgraded connection");
    await attach.close();
  });
});
