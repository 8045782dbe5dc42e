/**
 * The sandbox policy: execution lifetime, infrastructure deadlines, compute limits, network
 * profile, workspace disk quota request, tmpfs sizes and resource limits (ulimits). {@linkcode normalizePolicy} validates
 * caller input and fills every default, so a backend only ever sees finite, explicit values.
 *
 * @module
 */
import { z } from "zod";
import { SandboxConfigurationError } from "./errors.ts";
import { MAX_TIMER_MS } from "../internal/long_timer.ts";
import { expect, integerFrom, parseConfiguration } from "../internal/zod_issues.ts";
import {
  normalizeAllowlist,
  type SandboxAllowlistNetwork,
  type SandboxAllowlistNetworkSettings,
  sandboxNetworkSchema,
} from "./network_allowlist.ts";
import { normalizeUlimits, type SandboxUlimits, type SandboxUlimitsInput, sandboxUlimitsInputSchema } from "./ulimits.ts";

const MIB = 1024 * 1024;

/**
 * Smallest memory limit accepted, in bytes: 6 MiB, the Docker Engine's own minimum.
 */
export const MIN_MEMORY_BYTES = 6 * MIB;

/**
 * Largest CPU count accepted (`resources.cpus`).
 */
export const MAX_CPUS = 1024;

/** Smallest CPU limit accepted (`resources.cpus`): the Docker Engine's minimum, 0.01 CPU. */
export const MIN_CPUS = 0.01;
/** Smallest PID limit accepted (`resources.pids`): 8 (the keeper and exec setup need a few). */
export const MIN_PIDS = 8;
/**
 * Largest PID limit accepted (`resources.pids`): Linux's `PID_MAX_LIMIT`, 4,194,304.
 */
export const MAX_PIDS = 4_194_304;

/**
 * Largest infrastructure deadline accepted, in milliseconds: 2^31 - 1 (one timer's range).
 */
export const MAX_INFRASTRUCTURE_DEADLINE_MS: number = MAX_TIMER_MS;

/**
 * Default `deadlines.startupMs`, in milliseconds: 60 seconds.
 */
export const DEFAULT_STARTUP_MS = 60_000;

/**
 * Default `deadlines.cleanupMs`, in milliseconds: 30 seconds.
 */
export const DEFAULT_CLEANUP_MS = 30_000;

/**
 * Default `deadlines.guestFileMs`, in milliseconds: 60 seconds.
 */
export const DEFAULT_GUEST_FILE_MS = 60_000;

/**
 * Largest default size of each of the home and temporary tmpfs mounts, in bytes: 64 MiB
 * (the default is this or an eighth of `resources.memoryBytes`, whichever is smaller).
 */
export const DEFAULT_TMPFS_BYTES = 64 * MIB;

/**
 * Largest default size of `/dev/shm`, in bytes: 8 MiB (the default is this or a sixteenth
 * of `resources.memoryBytes`, whichever is smaller; Docker's own default is 64 MiB).
 */
export const DEFAULT_SHM_BYTES = 8 * MIB;

/**
 * Default `tmpfs.inodes`, the inode (file and directory) bound of each tmpfs mount: 8192.
 */
export const DEFAULT_TMPFS_INODES = 8192;

/**
 * Largest `tmpfs.inodes` accepted: 1,048,576 (each inode takes kernel memory, about 1 KiB,
 * charged to the sandbox).
 */
export const MAX_TMPFS_INODES = 1_048_576;

/**
 * Smallest tmpfs size accepted, in bytes: one 4 KiB page.
 */
export const MIN_TMPFS_BYTES = 4096;

/**
 * How long the sandbox's compute may run.
 *
 * - `{ kind: "until_stopped" }` installs no execution or idle timer: processes run until they
 *   exit or the sandbox is stopped.
 * - `{ kind: "deadline", timeoutMs }` stops the whole sandbox `timeoutMs` milliseconds after its
 *   first process starts (imports before it do not count; later processes do not restart
 *   it). Any positive safe integer is accepted (days and more; a backend must chain timers
 *   beyond one timer's 2^31 - 1 ms range).
 *
 * @example
 * ```ts
 * import type { SandboxExecutionPolicy } from "./policy.ts";
 *
 * const oneHour: SandboxExecutionPolicy = { kind: "deadline", timeoutMs: 3_600_000 };
 * ```
 */
export type SandboxExecutionPolicy =
  | { readonly kind: "until_stopped" }
  | { readonly kind: "deadline"; readonly timeoutMs: number };

/**
 * Deadlines of infrastructure observations (not of the process), as given by the caller.
 *
 * @example
 * ```ts
 * import type { SandboxDeadlinesInput } from "./policy.ts";
 *
 * const deadlines: SandboxDeadlinesInput = { startupMs: 120_000 }; // cleanupMs: 30000, guestFileMs: 60000
 * ```
 */
export interface SandboxDeadlinesInput {
  /**
   * Time allowed for sandbox startup, in milliseconds (integer 1 to 2^31 - 1).
   *
   * @default {60000}
   */
  readonly startupMs?: number;
  /**
   * Time allowed for each cleanup step (stop, destroy), in milliseconds (integer 1 to
   * 2^31 - 1).
   *
   * @default {30000}
   */
  readonly cleanupMs?: number;
  /**
   * Time allowed for each `writeFile` and `readFile` that sets no `options.deadlineAt`, in
   * milliseconds (integer 1 to 2^31 - 1): past it the call fails with `SandboxDeadlineError`
   * (`deadline`) and its writer or reader in the guest is ended, so no guest file operation
   * holds a `maxConcurrentProcesses` slot without bound.
   *
   * @default {60000}
   */
  readonly guestFileMs?: number;
}

/**
 * Infrastructure deadlines after normalisation: both values present, in milliseconds.
 *
 * @example
 * ```ts
 * import type { SandboxDeadlines } from "./policy.ts";
 *
 * const deadlines: SandboxDeadlines = { startupMs: 60_000, cleanupMs: 30_000, guestFileMs: 60_000 };
 * ```
 */
export interface SandboxDeadlines {
  /** Time allowed for sandbox startup, in milliseconds. */
  readonly startupMs: number;
  /** Time allowed for each cleanup step, in milliseconds. */
  readonly cleanupMs: number;
  /** Time allowed for each `writeFile` / `readFile` without its own `deadlineAt`, in milliseconds. */
  readonly guestFileMs: number;
}

/**
 * Exact compute limits of the sandbox. All are required: there is no unlimited default.
 *
 * @example
 * ```ts
 * import type { SandboxResources } from "./policy.ts";
 *
 * const resources: SandboxResources = { cpus: 0.5, memoryBytes: 256 * 1024 * 1024, pids: 128 };
 * ```
 */
export interface SandboxResources {
  /**
   * CPU limit in CPUs, a finite number from 0.01 to 1024. A Docker backend converts it to
   * `NanoCpus = Math.round(cpus * 1e9)`; 0.01 CPU is the Docker Engine's smallest quota (it
   * also refuses more CPUs than the host has).
   */
  readonly cpus: number;
  /** Memory limit in bytes, an integer from 6 MiB (6,291,456) to 2^53 - 1. */
  readonly memoryBytes: number;
  /**
   * Maximum number of processes and threads, an integer from 8 to 4,194,304 (the keeper,
   * its sleep and the Engine's exec setup need a few: below 8 an exec fails to start).
   */
  readonly pids: number;
}

/**
 * How many processes a sandbox runs.
 *
 * - `"many"`: `reserveProcess(request).start()` (and `run()`) may be called any number of
 *   times while the sandbox runs, up to `maxConcurrentProcesses` at once. A fault of one
 *   process (its output overflow, an abandoned reader, a framing error, its own `timeoutMs`)
 *   ends that process only.
 * - `"one"`: the sandbox runs exactly one process (a second `reserveProcess` is refused), and
 *   whatever ends that process early stops the whole sandbox.
 *
 * @example
 * ```ts
 * import type { SandboxProcessMode } from "./policy.ts";
 *
 * const mode: SandboxProcessMode = "one"; // an ACP host that owns the sandbox through one agent
 * ```
 */
export type SandboxProcessMode = "many" | "one";

/**
 * Default `maxConcurrentProcesses`: 16 processes at once.
 */
export const DEFAULT_MAX_CONCURRENT_PROCESSES = 16;

/**
 * Largest `maxConcurrentProcesses` accepted: 1024.
 */
export const MAX_CONCURRENT_PROCESSES = 1024;

/**
 * Network profile.
 *
 * - `isolated`: no network interface but loopback (Docker network `none`).
 * - `outbound`: a private bridge network; the guest can reach host, LAN and internet services.
 *   There is no domain allowlist and no inbound port.
 * - `{ kind: "allowlist", hosts, … }`: only the listed hosts, through an egress proxy (see
 *   {@linkcode SandboxAllowlistNetwork}).
 *
 * @example
 * ```ts
 * import type { SandboxNetwork } from "./policy.ts";
 *
 * const network: SandboxNetwork = "outbound";
 * ```
 */
export type SandboxNetwork = "isolated" | "outbound" | SandboxAllowlistNetwork;

/**
 * A network profile after normalisation: an allowlist has every default filled.
 *
 * @example
 * ```ts
 * import type { SandboxNetworkSettings } from "./policy.ts";
 *
 * const network: SandboxNetworkSettings = "isolated";
 * ```
 */
export type SandboxNetworkSettings = "isolated" | "outbound" | SandboxAllowlistNetworkSettings;

/**
 * Request for a hard workspace disk quota.
 *
 * - `{ kind: "not_requested" }`: no hard quota; the workspace can grow with Docker storage.
 * - `{ kind: "required", bytes, accounting: "allocated_blocks" }`: a hard quota of `bytes`
 *   (positive safe integer) counted in allocated blocks. Accepted by validation, but see
 *   the Docker backend refuses it (`lib/docker/admission/disk_quota.ts`).
 *
 * @example
 * ```ts
 * import type { SandboxWorkspaceDiskQuota } from "./policy.ts";
 *
 * const quota: SandboxWorkspaceDiskQuota = { kind: "not_requested" };
 * ```
 */
export type SandboxWorkspaceDiskQuota =
  | { readonly kind: "not_requested" }
  | {
    readonly kind: "required";
    readonly bytes: number;
    readonly accounting: "allocated_blocks";
  };

/**
 * Sizes of the guest's tmpfs mounts (`/home/sandbox`, `/tmp`, `/dev/shm`), as given by the
 * caller. tmpfs pages count against the memory limit, so the three sizes together must
 * leave at least half of `resources.memoryBytes` to the processes:
 * `homeBytes + tmpBytes + shmBytes <= memoryBytes / 2` (checked by `reserve()`).
 *
 * @example
 * ```ts
 * import type { SandboxTmpfsInput } from "./policy.ts";
 *
 * const tmpfs: SandboxTmpfsInput = { tmpBytes: 256 * 1024 * 1024 }; // homeBytes: 64 MiB
 * ```
 */
export interface SandboxTmpfsInput {
  /**
   * Size of the home tmpfs (`/home/sandbox`), in bytes: an integer from 4096 to
   * `resources.memoryBytes`. tmpfs pages count against the memory limit.
   *
   * @default {67108864} 64 MiB, or `resources.memoryBytes / 8` (rounded down to 4 KiB) when that is smaller
   */
  readonly homeBytes?: number;
  /**
   * Size of the temporary tmpfs (`/tmp`), in bytes: an integer from 4096 to
   * `resources.memoryBytes`.
   *
   * @default {67108864} 64 MiB, or `resources.memoryBytes / 8` (rounded down to 4 KiB) when that is smaller
   */
  readonly tmpBytes?: number;
  /**
   * Size of `/dev/shm` (POSIX shared memory, a private tmpfs; a Docker backend also sends it
   * as `HostConfig.ShmSize`), in bytes: an integer from 4096 to `resources.memoryBytes`.
   *
   * @default {8388608} 8 MiB, or `resources.memoryBytes / 16` (rounded down to 4 KiB) when that is smaller
   */
  readonly shmBytes?: number;
  /**
   * Inode bound of each of the three tmpfs mounts (tmpfs `nr_inodes`): an integer from 16 to
   * 1,048,576. Creating a file or directory past it fails with `ENOSPC`.
   *
   * @default {8192}
   */
  readonly inodes?: number;
}

/**
 * tmpfs sizes after normalisation: both values present, in bytes.
 *
 * @example
 * ```ts
 * import type { SandboxTmpfs } from "./policy.ts";
 *
 * const MIB = 1024 * 1024;
 * const tmpfs: SandboxTmpfs = { homeBytes: 64 * MIB, tmpBytes: 64 * MIB, shmBytes: 8 * MIB, inodes: 8192 };
 * ```
 */
export interface SandboxTmpfs {
  /** Size of the home tmpfs, in bytes. */
  readonly homeBytes: number;
  /** Size of the temporary tmpfs, in bytes. */
  readonly tmpBytes: number;
  /** Size of `/dev/shm`, in bytes. */
  readonly shmBytes: number;
  /** Inode bound of each tmpfs mount. */
  readonly inodes: number;
}

/**
 * A sandbox policy as the caller writes it; see {@linkcode normalizePolicy}.
 *
 * @example
 * ```ts
 * import type { SandboxPolicyInput } from "./policy.ts";
 *
 * const policy: SandboxPolicyInput = {
 *   execution: { kind: "deadline", timeoutMs: 15 * 60_000 },
 *   resources: { cpus: 2, memoryBytes: 2 * 1024 ** 3, pids: 1024 },
 *   network: "outbound",
 * };
 * ```
 */
export interface SandboxPolicyInput {
  /**
   * Compute lifetime (from the first process on).
   *
   * @default {{ kind: "until_stopped" }}
   */
  readonly execution?: SandboxExecutionPolicy;
  /**
   * Infrastructure deadlines.
   *
   * @default {{ startupMs: 60000, cleanupMs: 30000, guestFileMs: 60000 }}
   */
  readonly deadlines?: SandboxDeadlinesInput;
  /** Exact CPU, memory and PID limits (required). */
  readonly resources: SandboxResources;
  /**
   * Network profile.
   *
   * @default {"isolated"}
   */
  readonly network?: SandboxNetwork;
  /**
   * Hard workspace disk quota request.
   *
   * @default {{ kind: "not_requested" }}
   */
  readonly workspaceDiskQuota?: SandboxWorkspaceDiskQuota;
  /**
   * tmpfs sizes and inode bound (see {@linkcode SandboxTmpfsInput}).
   *
   * @default {{ homeBytes: 67108864, tmpBytes: 67108864, shmBytes: 8388608, inodes: 8192 }} (sizes scale down with memory)
   */
  readonly tmpfs?: SandboxTmpfsInput;
  /**
   * Resource limits of every process (see {@linkcode SandboxUlimitsInput}).
   *
   * @default {{ nofile: 4096, nproc: 65536, msgqueue: 819200, memlock: 65536, sigpending: 1024 }}
   */
  readonly ulimits?: SandboxUlimitsInput;
  /**
   * What happens to compute when the controlling process dies or loses its Engine
   * connection: `"continue"` keeps it running until a later controller recovers and cleans
   * up (the record still names it); `"stop"` ends it from inside the guest within moments
   * (a lease the controller holds open; see the README's "Controller loss").
   *
   * @default {"continue"}
   */
  readonly controllerLoss?: SandboxControllerLoss;
  /**
   * Whether the sandbox runs many processes or exactly one (see {@linkcode SandboxProcessMode}).
   *
   * @default {"many"}
   */
  readonly processes?: SandboxProcessMode;
  /**
   * Most processes running at once, an integer from 1 to 1024. Every exec the caller causes
   * counts from its `start()` until its exit receipt is observed: processes, `run()`,
   * `writeFile` and `readFile`; the backend's own guard execs do not. The next start beyond it
   * is refused with `SandboxQuotaError` (`quota`). Each process also takes PIDs from
   * `resources.pids` (a Docker backend: two, its wrapper shell and the command).
   *
   * @default {16}
   */
  readonly maxConcurrentProcesses?: number;
}

/**
 * What happens to compute when its controller is lost (see
 * {@linkcode SandboxPolicyInput.controllerLoss}).
 *
 * @example
 * ```ts
 * import type { SandboxControllerLoss } from "./policy.ts";
 *
 * const loss: SandboxControllerLoss = "stop";
 * ```
 */
export type SandboxControllerLoss = "continue" | "stop";

/**
 * A validated policy with every default filled; returned frozen by {@linkcode normalizePolicy}.
 *
 * @example
 * ```ts
 * import { normalizePolicy, type SandboxPolicy } from "./policy.ts";
 *
 * const policy: SandboxPolicy = normalizePolicy({
 *   resources: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 },
 * });
 * console.log(policy.tmpfs.homeBytes); // 67108864
 * ```
 */
export interface SandboxPolicy {
  /** Compute lifetime (from the first process on). */
  readonly execution: SandboxExecutionPolicy;
  /** Infrastructure deadlines, in milliseconds. */
  readonly deadlines: SandboxDeadlines;
  /** Exact compute limits. */
  readonly resources: SandboxResources;
  /** Network profile. */
  readonly network: SandboxNetworkSettings;
  /** Hard workspace disk quota request. */
  readonly workspaceDiskQuota: SandboxWorkspaceDiskQuota;
  /** tmpfs sizes, in bytes, and inode bound. */
  readonly tmpfs: SandboxTmpfs;
  /** Resource limits of every process (soft = hard; `core` always 0). */
  readonly ulimits: SandboxUlimits;
  /** What happens to compute when its controller is lost. */
  readonly controllerLoss: SandboxControllerLoss;
  /** Many processes or exactly one. */
  readonly processes: SandboxProcessMode;
  /** Most processes running at once. */
  readonly maxConcurrentProcesses: number;
}

const tmpfsSentence =
  `must be an integer from ${MIN_TMPFS_BYTES} bytes to policy.resources.memoryBytes`;
const cpusSentence = `must be a number of CPUs from ${MIN_CPUS} to ${MAX_CPUS}`;

/**
 * zod schema of {@linkcode SandboxPolicyInput}: field types and ranges, unknown fields
 * rejected. Cross-field bounds (tmpfs against memory) are checked by
 * {@linkcode normalizePolicy}, which callers should use instead of this schema.
 *
 * @example
 * ```ts
 * import { sandboxPolicyInputSchema } from "./policy.ts";
 *
 * const ok = sandboxPolicyInputSchema.safeParse({
 *   resources: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 },
 * }).success; // true
 * ```
 */
export const sandboxPolicyInputSchema: z.ZodType<SandboxPolicyInput> = z.strictObject({
  execution: z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("until_stopped") }),
    z.strictObject({
      kind: z.literal("deadline"),
      timeoutMs: integerFrom(1, Number.MAX_SAFE_INTEGER, "milliseconds"),
    }),
  ]).optional(),
  deadlines: z.strictObject({
    startupMs: integerFrom(1, MAX_INFRASTRUCTURE_DEADLINE_MS, "milliseconds").optional(),
    cleanupMs: integerFrom(1, MAX_INFRASTRUCTURE_DEADLINE_MS, "milliseconds").optional(),
    guestFileMs: integerFrom(1, MAX_INFRASTRUCTURE_DEADLINE_MS, "milliseconds").optional(),
  }).optional(),
  resources: z.strictObject({
    cpus: z.number({ error: expect(cpusSentence) })
      .gte(MIN_CPUS, { error: expect(cpusSentence) })
      .lte(MAX_CPUS, { error: expect(cpusSentence) }),
    memoryBytes: integerFrom(MIN_MEMORY_BYTES, Number.MAX_SAFE_INTEGER, "bytes"),
    pids: integerFrom(MIN_PIDS, MAX_PIDS, "processes"),
  }),
  network: sandboxNetworkSchema.optional(),
  workspaceDiskQuota: z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("not_requested") }),
    z.strictObject({
      kind: z.literal("required"),
      bytes: integerFrom(1, Number.MAX_SAFE_INTEGER, "bytes"),
      accounting: z.literal("allocated_blocks", {
        error: expect('must be "allocated_blocks"'),
      }),
    }),
  ]).optional(),
  tmpfs: z.strictObject({
    homeBytes: integerFrom(MIN_TMPFS_BYTES, Number.MAX_SAFE_INTEGER, "bytes", tmpfsSentence)
      .optional(),
    tmpBytes: integerFrom(MIN_TMPFS_BYTES, Number.MAX_SAFE_INTEGER, "bytes", tmpfsSentence)
      .optional(),
    shmBytes: integerFrom(MIN_TMPFS_BYTES, Number.MAX_SAFE_INTEGER, "bytes", tmpfsSentence)
      .optional(),
    inodes: integerFrom(16, MAX_TMPFS_INODES, "inodes").optional(),
  }).optional(),
  ulimits: sandboxUlimitsInputSchema.optional(),
  controllerLoss: z.enum(["continue", "stop"], {
    error: expect('must be "continue" or "stop"'),
  }).optional(),
  processes: z.enum(["many", "one"], {
    error: expect('must be "many" or "one"'),
  }).optional(),
  maxConcurrentProcesses: integerFrom(1, MAX_CONCURRENT_PROCESSES, "processes").optional(),
});

const ACTION = "reserve sandbox";

/**
 * Validates a caller's policy and returns a deeply frozen copy with every default filled.
 *
 * Defaults: `execution` `{ kind: "until_stopped" }`; `deadlines.startupMs` 60,000 ms;
 * `deadlines.cleanupMs` 30,000 ms; `deadlines.guestFileMs` 60,000 ms; `network` `"isolated"`; `workspaceDiskQuota`
 * `{ kind: "not_requested" }`; `tmpfs.homeBytes` and `tmpfs.tmpBytes` 64 MiB each, or an
 * eighth of `resources.memoryBytes` when that is smaller; `tmpfs.shmBytes` 8 MiB or a
 * sixteenth of memory; `tmpfs.inodes` 8192; `ulimits` as in {@linkcode SandboxUlimitsInput};
 * `controllerLoss` `"continue"`; `processes` `"many"`; `maxConcurrentProcesses` 16.
 * `resources` has no default.
 *
 * A `workspaceDiskQuota` of kind `required` passes validation; whether a backend can honour it
 * is a separate question, answered by each backend (the Docker backend refuses a required one).
 *
 * @param input The policy as written by the caller (untrusted: checked at run time).
 * @returns The normalised policy, deeply frozen.
 * @throws {SandboxConfigurationError} When a field is missing, unknown, of the wrong type or
 *   out of range, a tmpfs size, `ulimits.msgqueue` or `ulimits.memlock` exceeds
 *   `resources.memoryBytes`, or the three tmpfs sizes together exceed half of it. The message
 *   names the field path, e.g. "Cannot reserve sandbox: policy.resources.memoryBytes must be
 *   an integer from 6291456 to 9007199254740991 bytes".
 *
 * @example
 * ```ts
 * import { normalizePolicy } from "./policy.ts";
 *
 * const policy = normalizePolicy({
 *   execution: { kind: "deadline", timeoutMs: 10 * 60_000 },
 *   resources: { cpus: 1.5, memoryBytes: 1024 * 1024 * 1024, pids: 512 },
 * });
 * console.log(policy.network, policy.deadlines.startupMs); // "isolated" 60000
 * ```
 */
export function normalizePolicy(input: SandboxPolicyInput): SandboxPolicy {
  const parsed = parseConfiguration(sandboxPolicyInputSchema, input, ACTION, "policy");
  const { memoryBytes } = parsed.resources;
  const defaultTmpfs = Math.min(DEFAULT_TMPFS_BYTES, pageFloor(memoryBytes / 8));
  const tmpfs: SandboxTmpfs = {
    homeBytes: parsed.tmpfs?.homeBytes ?? defaultTmpfs,
    tmpBytes: parsed.tmpfs?.tmpBytes ?? defaultTmpfs,
    shmBytes: parsed.tmpfs?.shmBytes ?? Math.min(DEFAULT_SHM_BYTES, pageFloor(memoryBytes / 16)),
    inodes: parsed.tmpfs?.inodes ?? DEFAULT_TMPFS_INODES,
  };
  for (const key of ["homeBytes", "tmpBytes", "shmBytes"] as const) {
    if (tmpfs[key] > memoryBytes) {
      throw new SandboxConfigurationError(
        `Cannot ${ACTION}: policy.tmpfs.${key} must be at most policy.resources.memoryBytes ` +
          `(${memoryBytes} bytes)`,
      );
    }
  }
  assertTmpfsHeadroom(tmpfs, memoryBytes);
  const ulimits = normalizeUlimits(parsed.ulimits, memoryBytes, ACTION);
  const execution: SandboxExecutionPolicy = parsed.execution?.kind === "deadline"
    ? { kind: "deadline", timeoutMs: parsed.execution.timeoutMs }
    : { kind: "until_stopped" };
  const quota = parsed.workspaceDiskQuota;
  const workspaceDiskQuota: SandboxWorkspaceDiskQuota = quota?.kind === "required"
    ? { kind: "required", bytes: quota.bytes, accounting: quota.accounting }
    : { kind: "not_requested" };
  return Object.freeze({
    execution: Object.freeze(execution),
    deadlines: Object.freeze({
      startupMs: parsed.deadlines?.startupMs ?? DEFAULT_STARTUP_MS,
      cleanupMs: parsed.deadlines?.cleanupMs ?? DEFAULT_CLEANUP_MS,
      guestFileMs: parsed.deadlines?.guestFileMs ?? DEFAULT_GUEST_FILE_MS,
    }),
    resources: Object.freeze({
      cpus: parsed.resources.cpus,
      memoryBytes,
      pids: parsed.resources.pids,
    }),
    network: typeof parsed.network === "object" ? normalizeAllowlist(parsed.network) : parsed.network ?? "isolated",
    workspaceDiskQuota: Object.freeze(workspaceDiskQuota),
    tmpfs: Object.freeze(tmpfs),
    ulimits,
    controllerLoss: parsed.controllerLoss ?? "continue",
    processes: parsed.processes ?? "many",
    maxConcurrentProcesses: parsed.maxConcurrentProcesses ?? DEFAULT_MAX_CONCURRENT_PROCESSES,
  });
}

/** `bytes` rounded down to a whole 4 KiB page (at least one page). */
function pageFloor(bytes: number): number {
  return Math.max(MIN_TMPFS_BYTES, Math.floor(bytes / MIN_TMPFS_BYTES) * MIN_TMPFS_BYTES);
}

/**
 * tmpfs pages are charged to the memory limit: the home, temporary and shared-memory tmpfs
 * together may take at most half of it, so filling them cannot leave the processes nothing
 * (measured: filling `/tmp` and `/home` of a 96 MiB sandbox OOM-killed the writer).
 */
function assertTmpfsHeadroom(tmpfs: SandboxTmpfs, memoryBytes: number): void {
  const sum = tmpfs.homeBytes + tmpfs.tmpBytes + tmpfs.shmBytes;
  const most = Math.floor(memoryBytes / 2);
  if (sum <= most) return;
  throw new SandboxConfigurationError(
    `Cannot ${ACTION}: policy.tmpfs.homeBytes (${tmpfs.homeBytes}) + tmpBytes (${tmpfs.tmpBytes}) + ` +
      `shmBytes (${tmpfs.shmBytes}) = ${sum} bytes leave too little of policy.resources.memoryBytes ` +
      `(${memoryBytes} bytes) to the processes: tmpfs pages count against the memory limit, so the ` +
      `three must total at most half of it (${most} bytes); lower the tmpfs sizes or raise memoryBytes`,
  );
}
