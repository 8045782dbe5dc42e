// Helpers of the real-engine recovery tests: a "world" (a backend with a file recovery store
// and a spill directory in a fresh temporary directory), the store's one record, and the
// exact-name-and-ID absence check of everything a record names.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../lib/docker/config.ts";
import type { DockerSandboxRecoveryRecord } from "../../lib/docker/recovery/record.ts";
import { createFileRecoveryStore, type FileRecoveryStore } from "../../lib/docker/recovery/store.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { execFile, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { SandboxPolicyInput } from "../../lib/sandbox/policy.ts";
import { busyboxImage, endpoint, runtimeCommand } from "./_engine.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

const CHILD = fileURLToPath(new URL("./_controller_child.ts", import.meta.url));

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

/**
 * Run `fn` in a fresh world on `via` (default: the lane's engine); its directory is removed
 * after. `proxyImageDigest` is the backends' `config.proxyImageDigest` (allowlist policies);
 * `config` overrides other fields of the backends' configuration (`defaultExportQuota`, say).
 */
export async function withWorld(
  fn: (world: World) => Promise<void>,
  via: string = endpoint!,
  proxyImageDigest?: string,
  config: Partial<DockerSandboxBackendConfig> = {},
): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-recovery-")));
  try {
    const spill = join(root, "spill");
    await mkdir(spill);
    const store = await createFileRecoveryStore(join(root, "records"));
    const fresh = () =>
      createDockerSandboxBackend({
        profile: "linux-x64-cgroupfs",
        endpoint: via,
        namespace: TEST_NAMESPACE,
        spillDirectory: spill,
        imageDigest: busyboxImage,
        user: { uid: 65534, gid: 65534 },
        proxyImageDigest,
        ...config,
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

/**
 * The store's one record, whether handed out (`record`) or refused for a controller that
 * still runs (`locked`, e.g. this process's own live sandbox): `locked` says which.
 */
export async function storedRecord(store: FileRecoveryStore): Promise<{ record: DockerSandboxRecoveryRecord; locked: boolean }> {
  const listed = await store.list();
  assert.equal(listed.length, 1, "one record in the store");
  const [entry] = listed;
  assert.ok(entry.kind === "record" || entry.kind === "locked", `a readable record: ${entry.kind}`);
  return { record: entry.record as unknown as DockerSandboxRecoveryRecord, locked: entry.kind === "locked" };
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
  if (names.proxy) await gone(`/containers/${names.proxy}/json`);
  if (names.egress) await gone(`/networks/${names.egress}`);
  if (names.relay) await gone(`/containers/${names.relay}/json`);
  for (const [role, entry] of Object.entries(record.resources)) {
    if (!entry?.id) continue;
    const path = role === "volume" ? `/volumes/${entry.id}` : role === "network" || role === "egress" ? `/networks/${entry.id}` : `/containers/${entry.id}/json`;
    await gone(path);
  }
}

/**
 * Every record of `store` but those of `keep` (reservation IDs) holds nothing (each resource
 * `planned` or `removed`), is unlocked, and nothing it names exists on `engine`, its copier
 * included: what a refused or removed snapshot, fork or sandbox leaves in its store.
 *
 * @returns how many records were checked
 */
export async function assertRecordsHoldNothing(engine: DockerEngine, store: FileRecoveryStore, keep: readonly string[] = []): Promise<number> {
  let checked = 0;
  for (const entry of await store.list()) {
    if ("reservationId" in entry && keep.includes(entry.reservationId)) continue;
    assert.ok(entry.kind === "record", `a readable, unlocked record: ${entry.kind}`);
    const record = entry.record as unknown as DockerSandboxRecoveryRecord;
    checked++;
    for (const [role, resource] of Object.entries(record.resources)) {
      assert.ok(resource?.state === "planned" || resource?.state === "removed", `${role} of ${record.reservationId} is ${resource?.state}`);
    }
    await assertNothingLeft(engine, record);
    await assert.rejects(
      engine.request("GET", `/containers/${record.identity.names.copier}/json`),
      (error) => error instanceof DockerEngineError && error.code === "not_found",
    );
  }
  return checked;
}

/**
 * Remove every resource the record names, by exact name, ignoring what is already gone: the
 * `finally` of a test that may fail before its recovery removed them.
 */
export async function removeNamed(engine: DockerEngine, record: DockerSandboxRecoveryRecord): Promise<void> {
  const { names } = record.identity;
  const paths = [
    ...[names.relay, names.keeper, names.accessor, names.proxy].flatMap((name) => name ? [`/containers/${name}`] : []),
    ...[names.network, names.egress].flatMap((name) => name ? [`/networks/${name}`] : []),
    `/volumes/${names.volume}`,
  ];
  for (const path of paths) {
    await engine.request("DELETE", path, { query: path.startsWith("/containers/") ? { force: true } : undefined }).catch((error) => {
      if (!(error instanceof DockerEngineError && error.code === "not_found")) throw error;
    });
  }
}

/**
 * Run the child host program (`_controller_child.ts`) of `world` until it dies; it must die
 * by SIGKILL at `killAt`. `env` adds settings (`AGENTCELL_CHILD_PROXY_IMAGE`).
 */
export async function runChild(world: World, killAt: string, childPolicy: SandboxPolicyInput, env: Record<string, string> = {}): Promise<void> {
  const [command, args] = runtimeCommand(CHILD);
  const outcome = await new Promise<{ signal: string | null; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, {
      env: {
        ...process.env,
        AGENTCELL_CHILD_KILL_AT: killAt,
        AGENTCELL_CHILD_STORE: world.store.directory,
        AGENTCELL_CHILD_SPILL: world.spill,
        AGENTCELL_CHILD_POLICY: JSON.stringify(childPolicy),
        ...env,
      },
      timeout: 120_000,
    }, (error, stdout, stderr) => resolve({ signal: (error as { signal?: string } | null)?.signal ?? null, stdout, stderr }));
  });
  assert.equal(outcome.signal, "SIGKILL", `the child died by SIGKILL at ${killAt}: ${outcome.stdout} ${outcome.stderr}`);
}

/** A child host program that holds a running sandbox (`_controller_child.ts`, mode `hold`). */
export interface LiveController {
  /** The child's pid (the controller the record's lock names). */
  readonly pid: number;
  /** SIGKILL it and wait until it has exited (no-op once it has). */
  kill(): Promise<void>;
}

/**
 * Start the child host program of `world` in mode `hold` and resolve once its process runs.
 * The caller must `kill()` it (in a `finally`).
 */
export async function startLiveController(world: World, childPolicy: SandboxPolicyInput): Promise<LiveController> {
  const [command, args] = runtimeCommand(CHILD);
  const child = spawn(command, args, {
    env: {
      ...process.env,
      AGENTCELL_CHILD_KILL_AT: "hold",
      AGENTCELL_CHILD_STORE: world.store.directory,
      AGENTCELL_CHILD_SPILL: world.spill,
      AGENTCELL_CHILD_POLICY: JSON.stringify(childPolicy),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  let output = "";
  child.stderr!.on("data", (chunk) => output += String(chunk));
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pid = await new Promise<number>((resolve, reject) => {
      child.stdout!.on("data", (chunk) => {
        output += String(chunk);
        const running = /^running (\d+)$/mu.exec(output);
        if (running) resolve(Number(running[1]));
      });
      exited.then(() => reject(new Error(`the live controller exited before its process ran: ${output}`)));
      timer = setTimeout(() => reject(new Error(`the live controller did not run its process within 120 s: ${output}`)), 120_000);
    }).finally(() => clearTimeout(timer));
    assert.equal(pid, child.pid, "the controller is the child process itself");
    return { pid, kill };
  } catch (error) {
    await kill();
    throw error;
  }
}
