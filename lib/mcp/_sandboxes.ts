/**
 * The MCP server's sandboxes: opened within the operator's ceiling and count, each recorded
 * in the records directory before its resources exist (`openSandbox`), found by ID, listed,
 * destroyed one by one or all at once when the server ends; and, at start, the reclaim of
 * what a previous server of this configuration left.
 *
 * @module
 */
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../docker/backend.ts";
import { normalizeBackendConfig } from "../docker/config.ts";
import { openSandbox } from "../docker/open_sandbox.ts";
import { type ReclaimReport, reclaimRecords } from "../docker/recovery/reclaim.ts";
import { createFileRecoveryStore } from "../docker/recovery/store.ts";
import type { DockerSandbox } from "../docker/sandbox.ts";
import { SandboxConfigurationError, SandboxQuotaError } from "../sandbox/errors.ts";
import { normalizePolicy, type SandboxResources } from "../sandbox/policy.ts";
import type { McpServerSettings } from "./config.ts";
import { admitMcpConfig, admitMcpEngine } from "./_admit_engine.ts";

/** One sandbox of the server. */
export interface McpSandboxEntry {
  /** The sandbox. */
  readonly sandbox: DockerSandbox;
  /** Its resources as granted. */
  readonly resources: SandboxResources;
  /** When it started (ms since the epoch). */
  readonly startedAt: number;
}

/** The table of the server's sandboxes. */
export class McpSandboxes {
  readonly #settings: McpServerSettings;
  readonly #live = new Map<string, McpSandboxEntry>();
  #starting = 0;

  constructor(settings: McpServerSettings) {
    this.#settings = settings;
  }

  /** The backend fields of this configuration, shared by `openSandbox` and recovery. */
  #backendFields() {
    const s = this.#settings;
    return {
      endpoint: s.endpoint,
      ...(s.profile === undefined ? {} : { profile: s.profile }),
      namespace: s.namespace,
      imageDigest: s.imageDigest,
      user: s.user,
      ...(s.proxyImageDigest === undefined ? {} : { proxyImageDigest: s.proxyImageDigest }),
    };
  }

  /** The backend of this configuration (inert), for recovering its records. */
  #backend(): DockerSandboxBackend {
    return createDockerSandboxBackend(this.#backendConfig());
  }

  /** The backend's configuration of this server (recovery never spills: the records directory stands in). */
  #backendConfig() {
    return { ...this.#backendFields(), spillDirectory: this.#settings.spillDirectory ?? this.#settings.recordsDirectory };
  }

  /**
   * Check the configuration's backend fields, ceiling and network (no I/O), then its Engine:
   * the endpoint answers, the profile admits the daemon, the image is there and admissible
   * (`admitMcpEngine`). Creates nothing.
   *
   * @throws {SandboxConfigurationError} / {SandboxUnsupportedError} naming the config file's field (`mcp.…`)
   * @throws {SandboxError} from `admitMcpEngine`, naming the field of the config file (`mcp.…`)
   */
  async admit(): Promise<void> {
    const policy = { resources: this.#settings.ceiling, network: this.#settings.network };
    admitMcpConfig(() => this.#backend().reserve({ policy }, { record: () => Promise.resolve() }));
    await admitMcpEngine(normalizeBackendConfig(this.#backendConfig()), normalizePolicy(policy));
  }

  /**
   * Reclaim every record of the records directory (a previous server's sandboxes): the
   * records of a server that still runs are locked and stay. Runs after {@linkcode admit},
   * which checked the configuration's fields, ceiling and network.
   */
  async reclaim(): Promise<ReclaimReport> {
    const store = await createFileRecoveryStore(this.#settings.recordsDirectory);
    const backend = this.#backend();
    return await reclaimRecords(store, () => backend);
  }

  /**
   * Open a sandbox with `resources` (each already within the ceiling).
   *
   * @throws {SandboxQuotaError} when `maxSandboxes` run or start already
   */
  async create(resources: SandboxResources, signal: AbortSignal): Promise<McpSandboxEntry> {
    const max = this.#settings.maxSandboxes;
    if (this.#live.size + this.#starting >= max) {
      throw new SandboxQuotaError(
        `Cannot create sandbox: ${max} sandbox${max === 1 ? " runs" : "es run"} already, the most this server allows (maxSandboxes in its configuration): destroy one first with sandbox_destroy`,
      );
    }
    this.#starting += 1;
    try {
      const s = this.#settings;
      const sandbox = await openSandbox({
        ...this.#backendFields(),
        ...(s.spillDirectory === undefined ? {} : { spillDirectory: s.spillDirectory }),
        recordsDirectory: s.recordsDirectory,
        policy: { resources, network: s.network },
        signal,
      });
      const entry = { sandbox, resources, startedAt: Date.now() };
      this.#live.set(sandbox.id, entry);
      return entry;
    } finally {
      this.#starting -= 1;
    }
  }

  /**
   * The sandbox `id`, with the resources it was granted.
   *
   * @throws {SandboxConfigurationError} when no sandbox of this server has that ID
   */
  entry(id: string): McpSandboxEntry {
    const entry = this.#live.get(id);
    if (entry === undefined) {
      throw new SandboxConfigurationError(
        `Cannot find sandbox ${JSON.stringify(id)}: no sandbox of this server has that ID (it was destroyed, or never created); list them with sandbox_list`,
      );
    }
    return entry;
  }

  /**
   * The sandbox `id`.
   *
   * @throws {SandboxConfigurationError} when no sandbox of this server has that ID
   */
  get(id: string): DockerSandbox {
    return this.entry(id).sandbox;
  }

  /** Destroy the sandbox `id` (its record goes too); it leaves the table once destroyed. */
  async destroy(id: string): Promise<void> {
    const sandbox = this.get(id);
    await sandbox.destroy();
    this.#live.delete(id);
  }

  /** Every sandbox, oldest first. */
  list(): McpSandboxEntry[] {
    return [...this.#live.values()];
  }

  /** Destroy every sandbox (the server ends); failures stay in the records for the next start. */
  async destroyAll(): Promise<void> {
    await Promise.allSettled([...this.#live.keys()].map((id) => this.destroy(id)));
  }
}
