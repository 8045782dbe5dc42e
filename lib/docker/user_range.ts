/**
 * Per-sandbox agent identities drawn from `config.userRange`: one uid (gid = uid) per live
 * sandbox of a backend, so per-uid kernel limits (inotify instances, `RLIMIT_MSGQUEUE`,
 * `RLIMIT_NPROC`) are not shared between sandboxes.
 *
 * Two layers exclude collisions. Within one backend, `reserve()` draws uniformly at random
 * among the uids no reservation of that backend holds (synchronous, no I/O; a held uid is
 * released once the sandbox's compute is removed or its start failed). Across backends and
 * controllers, every resource is labelled with its uid, and `start()` lists the daemon's
 * keeper containers with that label after creating its own keeper
 * ({@linkcode foreignHolders}): each of two overlapping starts creates first and looks
 * second, so the later one always sees the earlier and fails; both may fail, both never
 * succeed. The random draw keeps such meetings rare.
 *
 * @module
 */
import { SandboxQuotaError } from "../sandbox/errors.ts";
import type { DockerEngine } from "../engine/client.ts";
import { listContainers } from "../engine/containers.ts";
import { LABELS } from "./names.ts";

/** An agent identity. */
export interface GuestUser {
  /** Numeric uid. */
  readonly uid: number;
  /** Numeric gid. */
  readonly gid: number;
}

/** The uids of one backend's live reservations (see the module doc). */
export class UserRangeAllocator {
  readonly #first: number;
  readonly #count: number;
  readonly #held = new Set<number>();

  /** @param range the validated `config.userRange` */
  constructor(range: { readonly first: number; readonly count: number }) {
    this.#first = range.first;
    this.#count = range.count;
  }

  /**
   * Draw a uid no reservation of this backend holds, uniformly at random, and hold it.
   *
   * @returns the identity (gid = uid)
   * @throws {SandboxQuotaError} when every uid of the range is held
   */
  draw(): GuestUser {
    const free = this.#count - this.#held.size;
    if (free <= 0) {
      throw new SandboxQuotaError(
        `Cannot reserve sandbox: all ${this.#count} uids of config.userRange (${this.#first} … ${this.#first + this.#count - 1}) are held by live sandboxes of this backend: destroy one, or widen config.userRange`,
      );
    }
    // The n-th free uid for a random n: the held set is at most the number of live sandboxes.
    let n = randomBelow(free);
    for (let uid = this.#first;; uid++) {
      if (this.#held.has(uid)) continue;
      if (n-- === 0) {
        this.#held.add(uid);
        return Object.freeze({ uid, gid: uid });
      }
    }
  }

  /** Release a uid drawn by {@linkcode draw}; idempotent. */
  release(uid: number): void {
    this.#held.delete(uid);
  }
}

function randomBelow(bound: number): number {
  // Rejection sampling over 32 bits: no modulo bias.
  const limit = Math.floor(0x1_0000_0000 / bound) * bound;
  const word = new Uint32Array(1);
  for (;;) {
    crypto.getRandomValues(word);
    if (word[0] < limit) return word[0] % bound;
  }
}

/**
 * The reservation IDs of keeper containers on the daemon, other than `reservationId`, that
 * run as `uid` (label `dev.agentcell.uid`), in any namespace and any state.
 *
 * @param engine the Engine
 * @param uid the drawn uid
 * @param reservationId this sandbox's reservation
 * @param options deadline and signal of the request
 * @returns the other holders' reservation IDs (empty when the uid is this sandbox's alone)
 */
export async function foreignHolders(
  engine: DockerEngine,
  uid: number,
  reservationId: string,
  options: { readonly timeoutMs: number; readonly signal?: AbortSignal },
): Promise<string[]> {
  const found = await listContainers(engine, { label: [`${LABELS.uid}=${uid}`, `${LABELS.role}=keeper`] }, options);
  return found
    .map((container) => container.Labels?.[LABELS.reservation] ?? `(container ${container.Id})`)
    .filter((holder) => holder !== reservationId);
}
