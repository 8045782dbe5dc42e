/**
 * What a running sandbox uses: one sample of CPU, memory, PIDs, network and block I/O.
 *
 * @module
 */

/**
 * One sample of a sandbox's resource use, from the keeper container's cgroup (every guest
 * process runs in it).
 *
 * @example
 * ```ts
 * import type { SandboxStats } from "./stats.ts";
 *
 * function describe(stats: SandboxStats): string {
 *   const percent = Math.round(stats.cpu.fraction * 100);
 *   return `${percent}% of ${stats.cpu.cpus} CPUs, ${stats.memory.workingSetBytes} of ${stats.memory.limitBytes} bytes`;
 * }
 * ```
 */
export interface SandboxStats {
  /** When the Engine read the sample (ISO 8601, the Engine's clock). */
  readonly readAt: string;
  /** CPU over the last interval (about a second, the Engine's previous read to this one). */
  readonly cpu: {
    /**
     * CPU time used over the interval as a fraction of the policy's `resources.cpus`: `1`
     * is every allowed CPU busy (0 when the Engine gave no previous read).
     */
    readonly fraction: number;
    /** The policy's `resources.cpus`. */
    readonly cpus: number;
    /** CPU time used since the keeper started, nanoseconds. */
    readonly totalNs: number;
  };
  /** Memory, bytes. */
  readonly memory: {
    /** Charged to the sandbox, page cache included, bytes. */
    readonly usageBytes: number;
    /** The limit (the policy's `resources.memoryBytes`), bytes. */
    readonly limitBytes: number;
    /** Usage without the inactive file cache (what the OOM killer weighs; `docker stats`' figure), bytes. */
    readonly workingSetBytes: number;
  };
  /** Tasks (processes and threads). */
  readonly pids: {
    /** Tasks alive now. */
    readonly current: number;
    /** The limit (the policy's `resources.pids`), or `undefined` when the Engine reports none. */
    readonly limit: number | undefined;
  };
  /** Network bytes since start, over every interface (0 with `network: none`). */
  readonly network: { readonly rxBytes: number; readonly txBytes: number };
  /** Block device bytes since start (0 where the Engine's cgroup reports none, e.g. tmpfs and overlay page cache). */
  readonly blockIo: { readonly readBytes: number; readonly writeBytes: number };
  /**
   * The backend's own containers beside the keeper, each in the same shape against its own
   * fixed limits (`cpu.cpus` and `memory.limitBytes` are the sidecar's, not the policy's):
   * `proxy` (the egress proxy of an allowlist sandbox) and `relay` (the port relay, once a
   * `connect()` made it). `sandbox.stats()` fills it; samples of `statsStream()` have none.
   */
  readonly sidecars?: { readonly proxy?: SandboxContainerStats; readonly relay?: SandboxContainerStats };
}

/**
 * One container's sample: {@linkcode SandboxStats} without `sidecars` (a sidecar's own
 * limits in `cpu.cpus` and `memory.limitBytes`).
 */
export type SandboxContainerStats = Omit<SandboxStats, "sidecars">;
