/**
 * Whether compute went away under a writer or reader that failed without an answer of its
 * own: then the call reports the sandbox's stop cause, never a defect of its path or image.
 *
 * The sandbox learns of a keeper that dies on its own from one long poll (`wait`), which may
 * answer after a helper's exit was already seen. So the keeper is inspected, and a keeper
 * that is gone stops the sandbox now. A keeper killed from outside (`docker rm -f`, `docker
 * kill`) may still look running for a while after its execs died of the signal: for a helper
 * that died of a signal while the keeper looks running, an exec that kills nothing (a mark no
 * process can carry) asks the guest itself. The guest runs it to its end while the keeper
 * lives, yet a keeper being removed may still do so: its end is awaited for at most 1 s
 * then; when the guest cannot run it, the keeper is dying, and its end is awaited (the
 * Engine's `wait`, bounded by `policy.deadlines.cleanupMs`; a keeper still running then, say one whose PIDs a
 * fork bomb holds, keeps the sandbox running and the helper's own exit is reported).
 *
 * @module
 */
import type { SandboxError } from "../../sandbox/errors.ts";
import type { SandboxExitReceipt } from "../../sandbox/process.ts";
import { waitContainer } from "../../engine/containers.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import { checkKeeper } from "../process/exit_observer.ts";
import { killProcessGroup } from "../process/_guest_kill.ts";
import type { ProcessHost } from "../process/process.ts";

/**
 * A mark no process can carry: longer than `comm`'s 15 bytes and not a number (the other
 * mark, a soft `RLIMIT_LOCKS`, is one), so its kill finds and kills nothing.
 */
const NO_MARK = "agentcell-no-process";

/**
 * How long a helper's death by a signal waits for the keeper's end while the guest still runs
 * execs, milliseconds: seen in CI (Deno), a removal through the Engine API killed a writer
 * (137) while a following exec still ran to its end, and the keeper went a moment later.
 */
const SIGNAL_DEATH_SETTLE_MS = 1_000;

/** Whether the guest cannot run an exec to its end any more (the keeper is dying). */
async function keeperRefusesExecs(host: ProcessHost): Promise<boolean> {
  try {
    return (await killProcessGroup(host, NO_MARK)).kind === "unstarted";
  } catch (error) {
    // 404 / 409: the Engine refuses an exec in a container that is gone or not running.
    return error instanceof DockerEngineError && (error.code === "not_found" || error.code === "conflict");
  }
}

/**
 * The sandbox's stop cause when compute went away under a helper (see the module doc), else
 * `undefined` (the keeper runs, or the Engine cannot tell).
 *
 * @param host The sandbox.
 * @param exit The helper's receipt, when there is one.
 */
export async function stopCauseOf(host: ProcessHost, exit: SandboxExitReceipt | undefined): Promise<SandboxError | undefined> {
  if (!host.stopping.aborted && await checkKeeper(host) === "running" && exit?.kind === "exited" && exit.code > 128) {
    // A guest that still runs an exec to its end may be dying all the same (the Engine's
    // removal kills the keeper's processes while it still answers execs): its end is awaited
    // briefly then, and for the whole cleanup deadline when it refuses execs.
    const waitMs = await keeperRefusesExecs(host) ? host.policy.deadlines.cleanupMs : Math.min(SIGNAL_DEATH_SETTLE_MS, host.policy.deadlines.cleanupMs);
    const bound = AbortSignal.any([host.stopping, AbortSignal.timeout(waitMs)]);
    await waitContainer(host.engine, host.keeperId, { condition: "not-running", signal: bound }).catch(() => {});
    if (!host.stopping.aborted) await checkKeeper(host);
  }
  return host.stopping.aborted ? host.stopping.reason as SandboxError : undefined;
}
