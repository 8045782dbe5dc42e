// Helpers of the real-engine sandbox tests: a backend on the lane's engine with a fresh
// spill directory, a recording recovery port, and exact-resource absence checks.
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxRecoveryRecord } from "../../lib/sandbox/backend.ts";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../lib/docker/config.ts";
import type { DockerSandboxStartOptions } from "../../lib/docker/egress/secrets.ts";
import type { DockerSandboxDataset } from "../../lib/docker/datasets/configuration.ts";
import type { SandboxResourceNames } from "../../lib/docker/names.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { busyboxImage, endpoint } from "./_engine.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

/** A modest default policy for tests. */
export const testPolicy: SandboxPolicyInput = {
  resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 },
};

/** A recovery port that keeps every record. */
export function recordingPort(): { records: SandboxRecoveryRecord[]; record(record: SandboxRecoveryRecord): Promise<void> } {
  const records: SandboxRecoveryRecord[] = [];
  return { records, record: (record) => Promise.resolve(void records.push(record)) };
}

/**
 * Run `fn` with a backend and a fresh spill directory, removed afterwards; `via` is the
 * endpoint the backend talks to (the lane's engine, or a fault proxy in front of it),
 * `datasets` its `config.datasets`, `proxyImageDigest` its `config.proxyImageDigest`, and
 * `overrides` any other fields of its config (a `userRange` replaces the default `user`).
 */
export async function withBackend(
  fn: (backend: DockerSandboxBackend, spillDirectory: string) => Promise<void>,
  image: string = busyboxImage,
  via: string = endpoint!,
  datasets: readonly DockerSandboxDataset[] = [],
  proxyImageDigest?: string,
  overrides: Partial<DockerSandboxBackendConfig> = {},
): Promise<void> {
  const spillDirectory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    const backend = createDockerSandboxBackend({
      profile: "linux-x64-cgroupfs",
      endpoint: via,
      namespace: TEST_NAMESPACE,
      spillDirectory,
      imageDigest: image,
      ...(overrides.userRange ? {} : { user: { uid: 65534, gid: 65534 } }),
      datasets,
      proxyImageDigest,
      ...overrides,
    });
    await fn(backend, spillDirectory);
  } finally {
    await rm(spillDirectory, { recursive: true, force: true });
  }
}

/**
 * Start a sandbox (with `start`'s options: secrets, say), run `fn`, destroy it, and check its
 * exact resources are gone; `config` overrides fields of the backend's configuration, `via` is the endpoint the backend talks
 * to (default: the lane's engine; a fault proxy in front of it, say).
 */
export async function withSandbox(
  engine: DockerEngine,
  fn: (sandbox: DockerSandbox) => Promise<void>,
  options: { policy?: SandboxPolicyInput; image?: string; config?: Partial<DockerSandboxBackendConfig>; via?: string; start?: DockerSandboxStartOptions } = {},
): Promise<void> {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: options.policy ?? testPolicy }, recordingPort()).start(options.start);
    try {
      await fn(sandbox);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, options.image, options.via, undefined, undefined, options.config);
}

async function assertAbsent(engine: DockerEngine, path: string): Promise<void> {
  await assert.rejects(
    engine.request("GET", path),
    (error) => error instanceof DockerEngineError && error.code === "not_found",
    `${path} still exists`,
  );
}

/** Assert that every resource of `sandbox` answers 404 by its exact identity. */
export async function assertGone(engine: DockerEngine, sandbox: DockerSandbox): Promise<void> {
  const { keeperId, volumeName, networkId, accessorId, proxyId, egressId, relayId } = sandbox.resources;
  await assertAbsent(engine, `/containers/${keeperId}/json`);
  await assertAbsent(engine, `/volumes/${volumeName}`);
  if (networkId) await assertAbsent(engine, `/networks/${networkId}`);
  if (accessorId) await assertAbsent(engine, `/containers/${accessorId}/json`);
  if (proxyId) await assertAbsent(engine, `/containers/${proxyId}/json`);
  if (egressId) await assertAbsent(engine, `/networks/${egressId}`);
  if (relayId) await assertAbsent(engine, `/containers/${relayId}/json`);
  assert.equal(sandbox.state, "destroyed");
}

/** Assert that no resource answers by any exact name of a reservation (nothing was left behind). */
export async function assertNamesAbsent(engine: DockerEngine, names: SandboxResourceNames): Promise<void> {
  await assertAbsent(engine, `/containers/${names.keeper}/json`);
  await assertAbsent(engine, `/containers/${names.accessor}/json`);
  await assertAbsent(engine, `/volumes/${names.volume}`);
  await assertAbsent(engine, `/networks/${names.network}`);
  await assertAbsent(engine, `/containers/${names.proxy}/json`);
  await assertAbsent(engine, `/networks/${names.egress}`);
  await assertAbsent(engine, `/containers/${names.relay}/json`);
}

/** Read a whole byte stream as UTF-8 text. */
export async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

/**
 * Read `stream` as UTF-8 until the text seen so far satisfies `done`; returns that text and
 * releases the reader (the rest stays unread). Fails when the stream ends or errors first.
 */
export async function readUntil(stream: ReadableStream<Uint8Array>, done: (seen: string) => boolean): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  try {
    while (!done(seen)) {
      const { done: ended, value } = await reader.read();
      if (ended) throw new Error(`the stream ended before the expected output; it gave: ${seen}`);
      seen += decoder.decode(value, { stream: true });
    }
    return seen;
  } finally {
    reader.releaseLock();
  }
}

/**
 * Wait for starts already under way (`reservation.start()`, `pool.take()`). Each sandbox that
 * started is pushed onto `into` before the first failure, if any, is thrown, so the caller's
 * `finally` destroys it (`Promise.all` would reject at the first failure and lose the
 * sandboxes that did start).
 */
export async function keepStarted(starts: readonly Promise<DockerSandbox>[], into: DockerSandbox[]): Promise<DockerSandbox[]> {
  const outcomes = await Promise.allSettled(starts);
  for (const outcome of outcomes) if (outcome.status === "fulfilled") into.push(outcome.value);
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
  return into;
}
