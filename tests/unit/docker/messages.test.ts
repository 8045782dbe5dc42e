// Messages of wrapped failures read as one chain, "Cannot <action>: <step>: <reason>", never
// "Cannot <action>: Cannot <step>: …". Each case drives a real wrapping path of the library
// (startup against a missing socket or a scripted engine, a failing recovery port, a failing
// request body, an import source, an Engine archive) and asserts the exact message: exactly
// one "Cannot", and the inner step and reason kept (so the check is not trivially true).
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { asSandboxError } from "../../../lib/docker/_engine_errors.ts";
import { exportTarError } from "../../../lib/docker/files/_tar_errors.ts";
import { importTreeInto } from "../../../lib/docker/files/import_tree.ts";
import { DockerEngine } from "../../../lib/engine/client.ts";
import { DockerEngineTransportError } from "../../../lib/engine/errors.ts";
import { exchange } from "../../../lib/engine/http/exchange.ts";
import { SandboxAbortedError, SandboxEngineError, SandboxError } from "../../../lib/sandbox/errors.ts";
import { reasonOf } from "../../../lib/internal/reason.ts";
import { TarError } from "../../../lib/tar/error.ts";
import { readTar } from "../../../lib/tar/read_tar.ts";
import { startFakeEngine } from "../_fake_engine.ts";
import { concat, end, file, header, streamOf } from "../tar/_build.ts";
import { admittingEngine, backendOn, json, policy, withSpill } from "./_start_engine.ts";

const NO_SPACE = JSON.stringify({ message: "no space left on device" });

/** Asserts `message` is exactly `expected` and says "Cannot" once. */
function assertOneCannot(message: string, expected: string): void {
  assert.equal(message, expected);
  assert.equal(message.match(/Cannot/g)?.length, 1, `"Cannot" more than once: ${message}`);
}

async function startError(socketPath: string, record: () => Promise<void> = () => Promise.resolve()): Promise<SandboxError> {
  let caught: unknown;
  await withSpill(async (spill) => {
    caught = await backendOn(socketPath, spill).reserve({ policy }, { record }).start().then(() => undefined, (error) => error);
  });
  assert.ok(caught instanceof SandboxError, `expected a SandboxError, got ${caught}`);
  return caught;
}

test("reasonOf drops the inner Cannot of every step and a repeated outer action", () => {
  assert.equal(reasonOf(new Error("Cannot create exec: the Engine answered 409 (x)")), "create exec: the Engine answered 409 (x)");
  assert.equal(reasonOf(new Error("Cannot a: Cannot b: c"), "a"), "b: c");
  assert.equal(reasonOf(new Error("Cannot start sandbox: aborted"), "start sandbox"), "aborted");
  assert.equal(reasonOf("plain words"), "plain words");
  assert.equal(reasonOf(new Error("disk full; Cannot is a word here")), "disk full; Cannot is a word here");
});

test("DockerSandboxReservation.start against a missing socket names config.endpoint, with one Cannot", async () => {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-nosock-")));
  try {
    const socket = join(directory, "docker.sock");
    const error = await startError(socket);
    assert.ok(error instanceof SandboxEngineError);
    assert.match(error.message, new RegExp(`^Cannot start sandbox: connect to ${socket}: (connect )?ENOENT `));
    assert.match(error.message, /; no socket exists at that path: check config\.endpoint and that the Docker daemon runs$/);
    assert.equal(error.message.match(/Cannot/g)?.length, 1, error.message);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});

test("DockerSandboxReservation.start wraps an Engine status and a refused API version as one chain", async () => {
  const engine = await admittingEngine((target) =>
    target.endsWith("/info")
      ? `HTTP/1.1 500 X\r\nContent-Type: application/json\r\nContent-Length: ${NO_SPACE.length}\r\n\r\n${NO_SPACE}`
      : undefined
  );
  try {
    const error = await startError(engine.socketPath);
    assert.ok(error instanceof SandboxEngineError && error.status === 500);
    assertOneCannot(error.message, "Cannot start sandbox: read Engine info: the Engine answered 500 (no space left on device)");
  } finally {
    await engine.close();
  }
  const old = await admittingEngine((target) => target === "/version" ? json({ Version: "20.10", ApiVersion: "1.41", Os: "linux", Arch: "amd64" }) : undefined);
  try {
    const error = await startError(old.socketPath);
    assertOneCannot(error.message, "Cannot start sandbox: negotiate Engine API version: the daemon speaks API 1.41, this client needs at least 1.44");
  } finally {
    await old.close();
  }
});

test("DockerSandboxReservation.start keeps a recovery port's own Cannot out of its message", async () => {
  const engine = await admittingEngine();
  try {
    const error = await startError(engine.socketPath, () => Promise.reject(new Error("Cannot write the journal: disk full")));
    assert.ok(error instanceof SandboxAbortedError);
    assertOneCannot(error.message, "Cannot persist the recovery record: the recovery port failed: write the journal: disk full");
  } finally {
    await engine.close();
  }
});

test("exchange wraps a failing request body stream as one chain", async () => {
  const engine = await startFakeEngine(async (connection) => {
    await connection.readHead();
    await connection.closed;
  });
  try {
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error("Cannot read the upload: the producer went away"));
      },
    });
    await assert.rejects(
      exchange({ socketPath: engine.socketPath, method: "PUT", target: "/x", body }),
      (error) => {
        assert.ok(error instanceof DockerEngineTransportError && error.code === "aborted");
        assertOneCannot(error.message, "Cannot send the request body: the body stream failed: read the upload: the producer went away");
        return true;
      },
    );
  } finally {
    await engine.close();
  }
});

test("importTreeInto wraps a failing source as one chain", async () => {
  const VERSION = JSON.stringify({ Version: "28.5.2", ApiVersion: "1.51", Os: "linux", Arch: "amd64" });
  const engine = await startFakeEngine(async (connection) => {
    const request = await connection.readHead();
    if (request.startsWith("GET /version ")) await connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${VERSION.length}\r\n\r\n${VERSION}`);
    else await connection.readToEnd();
  });
  try {
    const source = async function* () {
      yield { path: "a", type: "directory" as const, mode: 0o755, size: 0 };
      throw new Error("Cannot list the project: EIO");
    };
    const host = { engine: new DockerEngine(`unix://${engine.socketPath}`), keeperId: "a".repeat(64), user: { uid: 1000, gid: 1000 }, stopping: new AbortController().signal };
    await assert.rejects(importTreeInto(host, source(), {}), (error) => {
      assert.ok(error instanceof SandboxAbortedError);
      assert.match(error.message, /^Cannot import files: the source failed: list the project: EIO/);
      assert.equal(error.message.match(/Cannot/g)?.length, 1, error.message);
      return true;
    });
  } finally {
    await engine.close();
  }
});

test("exportTarError and asSandboxError keep the archive's and the Engine's reason, with one Cannot", async () => {
  const archive = streamOf(concat(header({ name: "work", checksumDelta: 1 }), file("x"), end()));
  const tar = await Array.fromAsync(readTar(archive)).then(() => undefined, (error) => error);
  assert.ok(tar instanceof TarError);
  const exported = exportTarError(tar, "export files", undefined);
  assert.match(exported.message, /^Cannot export files: the Engine's archive is not acceptable: /);
  assert.equal(exported.message.match(/Cannot/g)?.length, 1, exported.message);

  const transport = new DockerEngineTransportError("invalid_response", "Cannot read the response head: the status line is not `HTTP/1.1 NNN reason`");
  assertOneCannot(asSandboxError(transport, "stop sandbox").message, "Cannot stop sandbox: read the response head: the status line is not `HTTP/1.1 NNN reason`");
  assertOneCannot(asSandboxError(new Error("Cannot start sandbox: Cannot start sandbox: twice"), "start sandbox").message, "Cannot start sandbox: twice");
});
