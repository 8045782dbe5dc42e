/**
 * Resource limits (`setrlimit(2)`) of every sandbox process: the keeper and every exec. A
 * Docker backend sends them as `HostConfig.Ulimits` (Engine API v1.44+; soft = hard) and
 * reads them back; execs inherit them (measured on Engine 28.5 with runc: `/proc/self/limits`
 * of an exec shows the keeper's values). `core` is always 0/0 (no core dumps) and not
 * configurable.
 *
 * Three of these limits count per **user ID across the host**, not per sandbox: `nproc`
 * (processes and threads of the uid), `msgqueue` (POSIX message queue bytes of the uid) and
 * `sigpending` (queued signals of the uid). Sandboxes that share a uid share these budgets;
 * the per-sandbox process bound is `resources.pids`.
 *
 * @module
 */
import { z } from "zod";
import { SandboxConfigurationError } from "./errors.ts";
import { integerFrom } from "../internal/zod_issues.ts";

/**
 * Default `ulimits.nofile` (open file descriptors per process): 4096.
 */
export const DEFAULT_NOFILE = 4096;

/**
 * Largest `ulimits.nofile`: 1,048,576, Linux's default `fs.nr_open` (a larger value cannot
 * be applied).
 */
export const MAX_NOFILE = 1_048_576;

/**
 * Default `ulimits.nproc` (processes and threads of the uid, host-wide): 65,536. Generous on
 * purpose: it is shared by every sandbox of the same uid (and the keepers share
 * `keeperUser`), so a tight value would let one sandbox's processes fail another's forks.
 */
export const DEFAULT_NPROC = 65_536;

/**
 * Largest `ulimits.nproc`: 4,194,304, Linux's `PID_MAX_LIMIT`.
 */
export const MAX_NPROC = 4_194_304;

/**
 * Default `ulimits.msgqueue` (POSIX message queue bytes of the uid, host-wide): 819,200, the
 * Linux default.
 */
export const DEFAULT_MSGQUEUE_BYTES = 819_200;

/**
 * Default `ulimits.memlock` (bytes a process may lock in memory): 65,536 (64 KiB).
 */
export const DEFAULT_MEMLOCK_BYTES = 65_536;

/**
 * Default `ulimits.sigpending` (queued signals of the uid, host-wide): 1024.
 */
export const DEFAULT_SIGPENDING = 1024;

/**
 * Largest `ulimits.sigpending`: 1,048,576 (each queued signal holds kernel memory).
 */
export const MAX_SIGPENDING = 1_048_576;

/**
 * Resource limits as the caller writes them (`policy.ulimits`). Each value is both the soft
 * and the hard limit (the guest, without capabilities, cannot raise it).
 *
 * @example
 * ```ts
 * import type { SandboxUlimitsInput } from "./ulimits.ts";
 *
 * const ulimits: SandboxUlimitsInput = { nofile: 1024 }; // the others keep their defaults
 * ```
 */
export interface SandboxUlimitsInput {
  /**
   * Open file descriptors per process (`RLIMIT_NOFILE`): an integer from 16 to 1,048,576.
   * Past it `open(2)` fails with `EMFILE`.
   *
   * @default {4096}
   */
  readonly nofile?: number;
  /**
   * Processes and threads of the sandbox user's uid on the whole host (`RLIMIT_NPROC`): an
   * integer from 8 to 4,194,304. Past it `fork(2)` fails with `EAGAIN`. Shared by every
   * sandbox of that uid; `resources.pids` bounds one sandbox.
   *
   * @default {65536}
   */
  readonly nproc?: number;
  /**
   * Bytes of POSIX message queues of the uid on the whole host (`RLIMIT_MSGQUEUE`): an
   * integer from 0 to `resources.memoryBytes`. 0 refuses every `mq_open(3)` that creates a
   * queue.
   *
   * @default {819200}
   */
  readonly msgqueue?: number;
  /**
   * Bytes a process may lock in memory (`RLIMIT_MEMLOCK`, `mlock(2)`): an integer from 0 to
   * `resources.memoryBytes`.
   *
   * @default {65536}
   */
  readonly memlock?: number;
  /**
   * Signals queued for the uid on the whole host (`RLIMIT_SIGPENDING`): an integer from 0
   * to 1,048,576. Past it `sigqueue(3)` fails with `EAGAIN`.
   *
   * @default {1024}
   */
  readonly sigpending?: number;
}

/**
 * Resource limits after normalisation: every value present (soft = hard); `core` is always 0.
 *
 * @example
 * ```ts
 * import type { SandboxUlimits } from "./ulimits.ts";
 *
 * const ulimits: SandboxUlimits = { nofile: 4096, nproc: 65536, msgqueue: 819200, memlock: 65536, sigpending: 1024 };
 * ```
 */
export interface SandboxUlimits {
  /** Open file descriptors per process. */
  readonly nofile: number;
  /** Processes and threads of the uid, host-wide. */
  readonly nproc: number;
  /** POSIX message queue bytes of the uid, host-wide. */
  readonly msgqueue: number;
  /** Lockable bytes per process. */
  readonly memlock: number;
  /** Queued signals of the uid, host-wide. */
  readonly sigpending: number;
}

const memorySentence = "must be an integer from 0 bytes to policy.resources.memoryBytes";

/**
 * zod schema of {@linkcode SandboxUlimitsInput} (the bounds against `resources.memoryBytes`
 * are checked by {@linkcode normalizeUlimits}).
 */
export const sandboxUlimitsInputSchema: z.ZodType<SandboxUlimitsInput> = z.strictObject({
  nofile: integerFrom(16, MAX_NOFILE, "files").optional(),
  nproc: integerFrom(8, MAX_NPROC, "processes").optional(),
  msgqueue: integerFrom(0, Number.MAX_SAFE_INTEGER, "bytes", memorySentence).optional(),
  memlock: integerFrom(0, Number.MAX_SAFE_INTEGER, "bytes", memorySentence).optional(),
  sigpending: integerFrom(0, MAX_SIGPENDING, "signals").optional(),
});

/**
 * Fill the defaults of parsed `policy.ulimits` and check the byte limits against memory.
 *
 * @param parsed the output of {@linkcode sandboxUlimitsInputSchema}, or `undefined`
 * @param memoryBytes `resources.memoryBytes`
 * @param action the "<action>" of an error message
 * @returns the limits, frozen
 * @throws {SandboxConfigurationError} when `msgqueue` or `memlock` exceeds `memoryBytes`
 */
export function normalizeUlimits(parsed: SandboxUlimitsInput | undefined, memoryBytes: number, action: string): SandboxUlimits {
  const ulimits: SandboxUlimits = {
    nofile: parsed?.nofile ?? DEFAULT_NOFILE,
    nproc: parsed?.nproc ?? DEFAULT_NPROC,
    msgqueue: parsed?.msgqueue ?? DEFAULT_MSGQUEUE_BYTES,
    memlock: parsed?.memlock ?? DEFAULT_MEMLOCK_BYTES,
    sigpending: parsed?.sigpending ?? DEFAULT_SIGPENDING,
  };
  for (const field of ["msgqueue", "memlock"] as const) {
    if (ulimits[field] > memoryBytes) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: policy.ulimits.${field} (${ulimits[field]} bytes) must be at most policy.resources.memoryBytes (${memoryBytes} bytes); lower it or raise memoryBytes`,
      );
    }
  }
  return Object.freeze(ulimits);
}
