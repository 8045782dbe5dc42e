import assert from "node:assert/strict";
import { test } from "node:test";
import { exchange, requestBuffered, upgrade } from "../../../lib/engine/http/mod.ts";
import { startFakeEngine } from "../_fake_engine.ts";
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

test("requestBuffered leaves no timer or abort listener behind on success", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK");
    await connection.end();
  });
  try {
    const { signal, listeners } = countedSignal();
    const { value, liveTimers } = await withTimerCount(() =>
      requestBuffered({
        socketPath: engine.socketPath,
        method: "GET",
        target: "/_ping",
        timeoutMs: 5_000,
        maxResponseBytes: 10,
        signal,
      })
    );
    assert.equal(value.status, 200);
    assert.equal(liveTimers, 0);
    assert.equal(listeners(), 0);
  } finally {
    await engine.close();
  }
});

test("exchange leaves no timer or abort listener behind after a header deadline", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.closed;
  });
  try {
    const { signal, listeners } = countedSignal();
    const { liveTimers } = await withTimerCount(() =>
      assert.rejects(
        exchange({
          socketPath: engine.socketPath,
          method: "GET",
          target: "/",
          headerTimeoutMs: 50,
          timeoutMs: 60_000,
          signal,
        }),
        transportError("deadline"),
      )
    );
    assert.equal(liveTimers, 0);
    assert.equal(listeners(), 0);
  } finally {
    await engine.close();
  }
});

test("exchange leaves no timer or abort listener behind after a truncated body", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc");
  });
  try {
    const { signal, listeners } = countedSignal();
    const { liveTimers } = await withTimerCount(async () => {
      const response = await exchange({
        socketPath: engine.socketPath,
        method: "GET",
        target: "/",
        timeoutMs: 60_000,
        signal,
      });
      await assert.rejects(readAll(response.body), transportError("invalid_response"));
    });
    assert.equal(liveTimers, 0);
    assert.equal(listeners(), 0);
  } finally {
    await engine.close();
  }
});

test("exchange leaves no timer or abort listener behind after the body is cancelled", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 200 OK\r\n\r\nstream");
    await connection.closed;
  });
  try {
    const { signal, listeners } = countedSignal();
    const { liveTimers } = await withTimerCount(async () => {
      const response = await exchange({
        socketPath: engine.socketPath,
        method: "GET",
        target: "/",
        timeoutMs: 60_000,
        signal,
      });
      await response.body.cancel();
    });
    assert.equal(liveTimers, 0);
    assert.equal(listeners(), 0);
  } finally {
    await engine.close();
  }
});

test("upgrade leaves no timer or abort listener behind once closed", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readRequest();
    await connection.write("HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\n");
    await connection.closed;
  });
  try {
    const { signal, listeners } = countedSignal();
    const { liveTimers } = await withTimerCount(async () => {
      const attach = await upgrade({
        socketPath: engine.socketPath,
        method: "POST",
        target: "/exec/a/start",
        signal,
      });
      assert.equal(listeners(), 1, "the signal still guards the upgraded connection");
      await attach.close();
    });
    assert.equal(liveTimers, 0);
    assert.equal(listeners(), 0);
  } finally {
    await engine.close();
  }
});
