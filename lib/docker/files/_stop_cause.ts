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
 * lives; when it cannot, the keeper may be dying, and its end is awaited (the Engine's `wait`,
 * bounded by `policy.deadlines.cleanupMs`; a keeper still running then, say one whose PIDs a
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
  if (!host.stopping.aborted && await checkKeeper(host) === "running" && exit?.kind === "exited" && exit.code > 128 && await keeperRefusesExecs(host)) {
    const bound = AbortSignal.any([host.stopping, AbortSignal.timeout(host.policy.deadlines.cleanupMs)]);
    await waitContainer(host.engine, host.keeperId, { condition: "not-running", signal: bound }).catch(() => {});
    if (!host.stopping.aborted) await checkKeeper(host);
  }
  return host.stopping.aborted ? host.stopping.reason as SandboxError : undefined;
}
