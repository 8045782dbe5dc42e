// Helpers of the unit tests that start a sandbox against a scripted fake engine: a backend on
// its socket, a fresh spill directory, and a fake engine that admits the recorded cgroupfs
// daemon and the configured image.
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../../lib/docker/config.ts";
import { type FakeEngine, startFakeEngine } from "../_fake_engine.ts";

/** The image ID the backends are configured with. */
export const image = `sha256:${"c".repeat(64)}`;
/** A small policy with a 1.5 s startup deadline. */
export const policy = { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 32 }, deadlines: { startupMs: 1500 } };

/** A `200 OK` reply carrying `body` as JSON. */
export function json(body: unknown): string {
  const text = JSON.stringify(body);
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`;
}

/** A backend (`linux-x64-cgroupfs`) on `socketPath`; `overrides` replace fields of its config. */
export function backendOn(socketPath: string, spillDirectory: string, overrides: Partial<DockerSandboxBackendConfig> = {}): DockerSandboxBackend {
  return createDockerSandboxBackend({
    profile: "linux-x64-cgroupfs",
    endpoint: `unix://${socketPath}`,
    namespace: "unit",
    spillDirectory,
    imageDigest: image,
    user: { uid: 1000, gid: 1000 },
    ...overrides,
  });
}

/** Runs `fn` with a fresh spill directory, removed afterwards. */
export async function withSpill(fn: (spill: string) => Promise<void>): Promise<void> {
  const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    await fn(spill);
  } finally {
    await rm(spill, { recursive: true, force: true });
  }
}

/**
 * A fake engine that admits the daemon and image and finds no volume of the sandbox's name
 * (as a real Engine does for a fresh reservation), then fails any other call with 500.
 * `answer` may take over a request first: it returns the raw reply, or `undefined` to let
 * the default answer it.
 */
export async function admittingEngine(answer: (target: string) => string | undefined = () => undefined): Promise<FakeEngine> {
  const fixtures = new URL("../../fixtures/engine/", import.meta.url);
  const version = JSON.parse(await readFile(new URL("linux-cgroupfs-v1.version.json", fixtures), "utf8"));
  const info = JSON.parse(await readFile(new URL("linux-cgroupfs-v1.info.json", fixtures), "utf8"));
  return await startFakeEngine(async (connection) => {
    const request = await connection.readRequest();
    const target = request.head.split(" ")[1];
    const own = answer(target);
    if (own !== undefined) await connection.write(own);
    else if (target === "/version") await connection.write(json(version));
    else if (target.endsWith("/info")) await connection.write(json(info));
    else if (target.includes("/images/")) {
      await connection.write(json({ Id: image, Architecture: "amd64", Os: "linux", Config: { Env: null } }));
    } else if (request.head.startsWith("GET ") && target.includes("/volumes/")) {
      const body = JSON.stringify({ message: "get agentcell-volume: no such volume" });
      await connection.write(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    } else await connection.write("HTTP/1.1 500 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    await connection.end();
  });
}
