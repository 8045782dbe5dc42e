// Helpers of the real-engine recovery tests: a "world" (a backend with a file recovery store
// and a spill directory in a fresh temporary directory), the store's one record, and the
// exact-name-and-ID absence check of everything a record names.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery_record.ts";
import { createFileRecoveryStore, type FileRecoveryStore } from "../../lib/docker/recovery_store.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { busyboxImage, endpoint } from "./_engine.ts";

/** A backend, its file recovery store and its spill directory. */
export interface World {
  /** A backend on the world's endpoint. */
  readonly backend: DockerSandboxBackend;
  /** The file recovery store (in the world's directory). */
  readonly store: FileRecoveryStore;
  /** The spill directory. */
  readonly spill: string;
  /** Another backend with the same configuration: a fresh controller. */
  fresh(): DockerSandboxBackend;
}

/** Run `fn` in a fresh world on `via` (default: the lane's engine); its directory is removed after. */
export async function withWorld(fn: (world: World) => Promise<void>, via: string = endpoint!): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-recovery-")));
  try {
    const spill = join(root, "spill");
    await mkdir(spill);
    const store = await createFileRecoveryStore(join(root, "records"));
    const fresh = () =>
      createDockerSandboxBackend({
        profile: "linux-x64-cgroupfs",
        endpoint: via,
        namespace: "test",
        spillDirectory: spill,
        imageDigest: busyboxImage,
        user: { uid: 65534, gid: 65534 },
      });
    await fn({ backend: fresh(), store, spill, fresh });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** The store's one record (asserts there is exactly one and it is readable). */
export async function onlyRecord(store: FileRecoveryStore): Promise<DockerSandboxRecoveryRecord> {
  const listed = await store.list();
  assert.equal(listed.length, 1, "one record in the store");
  assert.equal(listed[0].kind, "record");
  return (listed[0] as unknown as { record: DockerSandboxRecoveryRecord }).record;
}

/** Every name of the record is absent, and so is every recorded ID. */
export async function assertNothingLeft(engine: DockerEngine, record: DockerSandboxRecoveryRecord): Promise<void> {
  const { names } = record.identity;
  const gone = (path: string) =>
    assert.rejects(engine.request("GET", path), (error) => error instanceof DockerEngineError && error.code === "not_found", `${path} remains`);
  await gone(`/containers/${names.keeper}/json`);
  await gone(`/containers/${names.accessor}/json`);
  await gone(`/networks/${names.network}`);
  await gone(`/volumes/${names.volume}`);
  for (const [role, entry] of Object.entries(record.resources)) {
    if (!entry?.id) continue;
    const path = role === "volume" ? `/volumes/${entry.id}` : role === "network" ? `/networks/${entry.id}` : `/containers/${entry.id}/json`;
    await gone(path);
  }
}
