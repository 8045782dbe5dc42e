import assert from "node:assert/strict";
import { z } from "zod";
import { MAX_API_VERSION } from "../../lib/engine/api_version.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { busyboxImage, engineTest, eventually } from "./_engine.ts";

const idSchema = z.looseObject({ Id: z.string() });

async function withContainer(
  engine: DockerEngine,
  fn: (id: string) => Promise<void>,
): Promise<void> {
  const created = await engine.request("POST", "/containers/create", {
    json: {
      Image: busyboxImage,
      Entrypoint: ["/bin/sh"],
      Cmd: ["-c", "mkdir -p /tmp/box && printf 'archived bytes' > /tmp/box/file.txt && exec sleep 600"],
      HostConfig: { NetworkMode: "none" },
    },
    schema: idSchema,
    expect: [201],
  });
  const id = created.value.Id;
  try {
    await engine.request("POST", `/containers/${id}/start`, { expect: [204] });
    await fn(id);
  } finally {
    await engine.request("DELETE", `/containers/${id}`, { query: { force: true, v: true }, expect: [204] });
    await assert.rejects(
      engine.request("GET", `/containers/${id}/json`),
      (error) => error instanceof DockerEngineError && error.code === "not_found",
    );
  }
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

engineTest("DockerEngine pings the engine", async (engine) => {
  assert.equal(await engine.ping(), true);
});

engineTest("DockerEngine negotiates min(daemon API version, 1.52)", async (engine) => {
  const version = await engine.version();
  const negotiated = await engine.apiVersion();
  const [major, minor] = version.ApiVersion.split(".").map(Number);
  const expected = major > 1 || minor > 52 ? MAX_API_VERSION : version.ApiVersion;
  assert.equal(negotiated, expected);
});

engineTest("DockerEngine parses /info", async (engine) => {
  const info = await engine.info();
  assert.equal(info.OSType, "linux");
  assert.equal(typeof info.MemoryLimit, "boolean");
  assert.ok(info.CgroupDriver.length > 0);
});

engineTest("DockerEngine request validates a JSON reply and maps 404", async (engine) => {
  const image = await engine.request("GET", `/images/${busyboxImage}/json`, {
    schema: z.looseObject({ Id: z.string(), Architecture: z.string() }),
  });
  assert.equal(image.value.Id, busyboxImage);
  await assert.rejects(
    engine.request("GET", `/containers/${"0".repeat(64)}/json`, { action: "inspect container" }),
    (error) =>
      error instanceof DockerEngineError && error.code === "not_found" && error.status === 404 &&
      error.message.startsWith("Cannot inspect container:"),
  );
  await assert.rejects(
    engine.request("GET", `/images/${busyboxImage}/json`, { schema: z.object({ Id: z.number() }) }),
    (error) => error instanceof DockerEngineError && error.code === "invalid_body",
  );
});

engineTest("DockerEngine streams a container archive", async (engine) => {
  await withContainer(engine, async (id) => {
    // the keeper writes the file right after start; wait until it is there
    const response = await eventually("the keeper's file", async () => {
      const response = await engine.stream("GET", `/containers/${id}/archive`, { query: { path: "/tmp/box/file.txt" } });
      if (response.status === 200) return response;
      await response.body.cancel();
    });
    const tar = await readAll(response.body);
    assert.equal(response.downloadedBytes(), BigInt(tar.byteLength));
    assert.equal(tar.byteLength % 512, 0);
    const name = new TextDecoder().decode(tar.subarray(0, 100)).replace(/\0.*$/s, "");
    assert.equal(name, "file.txt");
    const body = new TextDecoder().decode(tar.subarray(512, 512 + 14));
    assert.equal(body, "archived bytes");
  });
});

engineTest("DockerEngine upgrades an exec attach: stdin, half-close, multiplexed output, EOF", async (engine) => {
  await withContainer(engine, async (id) => {
    const exec = await engine.request("POST", `/containers/${id}/exec`, {
      json: {
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        Cmd: ["/bin/sh", "-c", "cat; echo after-eof; echo to-stderr >&2"],
      },
      schema: idSchema,
      expect: [201],
    });
    const attach = await engine.upgrade("POST", `/exec/${exec.value.Id}/start`, {
      body: new TextEncoder().encode(JSON.stringify({ Detach: false, Tty: false })),
      contentType: "application/json",
    });
    try {
      const writer = attach.writable.getWriter();
      await writer.write(new TextEncoder().encode("hello through stdin\n"));
      writer.releaseLock();
      await attach.closeWrite();
      const raw = await readAll(attach.readable);
      const out: Record<number, string> = { 1: "", 2: "" };
      for (let offset = 0; offset < raw.byteLength;) {
        assert.ok(offset + 8 <= raw.byteLength, "complete frame header");
        const kind = raw[offset];
        const size = new DataView(raw.buffer, raw.byteOffset + offset + 4, 4).getUint32(0);
        out[kind] += new TextDecoder().decode(raw.subarray(offset + 8, offset + 8 + size));
        offset += 8 + size;
      }
      assert.equal(out[1], "hello through stdin\nafter-eof\n");
      assert.equal(out[2], "to-stderr\n");
    } finally {
      await attach.close();
    }
    const execSchema = z.looseObject({ Running: z.boolean(), ExitCode: z.number().nullable() });
    const state = await eventually("the exec ending", async () => {
      const state = (await engine.request("GET", `/exec/${exec.value.Id}/json`, { schema: execSchema })).value;
      return state.Running ? undefined : state;
    });
    assert.deepEqual([state.Running, state.ExitCode], [false, 0]);
  });
});
