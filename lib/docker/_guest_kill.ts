/**
 * Ending one process inside the guest: an exec of the sandbox's own `/bin/sh` that finds the
 * process's wrapper by its name and kills its process group.
 *
 * Every process runs under a wrapper shell that renames itself (`/proc/self/comm`, 15 bytes)
 * to a random name of the process; the wrapper is its exec's session and process-group
 * leader (runc starts every exec in a session of its own), and the command and its
 * descendants stay in that group unless they leave it. The kill scans `/proc/<pid>/stat`
 * with shell builtins only (no fork, so it still runs when a fork bomb holds every PID but
 * the one of its own exec) and sends `SIGKILL` to the group and its leader. A name no process
 * carries any more kills nothing. A process may rename itself, but never another process
 * (the kernel allows writing `comm` of the caller's own thread group only), so a guest
 * process can at most make its own kill miss.
 *
 * @module
 */
import { createExec, startExec } from "../engine/exec.ts";
import { type ExitObserverHost, observeExit } from "./exit_observer.ts";
import { WORK_PATH } from "./workload.ts";

/**
 * The kill script; `$1` is the wrapper's name. It exits 0 when it found (and signalled) the
 * wrapper, {@linkcode NOT_FOUND} when no process carries the name. `read` and `kill` are
 * builtins of every POSIX shell, so the script needs nothing but `/bin/sh` and `/proc`.
 */
export const KILL_SCRIPT = 'f=3; for d in /proc/[0-9]*; do read -r l 2>/dev/null < "$d/stat" || continue; ' +
  'case $l in "${d#/proc/} ($1) "*) kill -9 -"${d#/proc/}" "${d#/proc/}" 2>/dev/null; f=0;; esac; done; exit $f';

/** Exit code of the kill script when no process carries the name. */
const NOT_FOUND = 3;

/** What the kill needs: the sandbox (its `stopping` ends the kill early) and the user. */
export interface GuestKillHost extends ExitObserverHost {
  readonly user: { readonly uid: number; readonly gid: number };
}

/**
 * Kill the process group whose leader is named `name`, once. Bounded by
 * `policy.deadlines.cleanupMs`.
 *
 * @returns `true` when the leader was found and signalled, `false` when no process carries
 *   the name (it has not renamed itself yet, it is gone, or the sandbox stopped meanwhile)
 * @throws {Error} when the kill did not run: the exec could not be created or started, its
 *   exit code is neither 0 nor "not found" (the Engine could not start it, say with every PID
 *   taken), or it did not end within the deadline
 */
export async function killProcessGroup(host: GuestKillHost, name: string): Promise<boolean> {
  const { engine, keeperId, user } = host;
  const timeoutMs = host.policy.deadlines.cleanupMs;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([host.stopping, deadline]);
  const execId = await createExec(engine, keeperId, {
    Cmd: ["/bin/sh", "-c", KILL_SCRIPT, "sh", name],
    Env: [],
    User: `${user.uid}:${user.gid}`,
    WorkingDir: WORK_PATH,
  }, { timeoutMs, signal });
  const attach = await startExec(engine, execId, { signal });
  try {
    await attach.closeWrite();
    // The script writes nothing; its stream ends when it exits (anything the Engine writes
    // instead, say why it could not start it, is drained and judged by the exit code).
    await attach.readable.pipeTo(new WritableStream());
  } finally {
    await attach.close().catch(() => {});
  }
  const exit = await new Promise<Awaited<ReturnType<typeof observeExit>>>((resolve, reject) => {
    const onDeadline = () => reject(new Error(`the kill exec did not end within ${timeoutMs} ms`));
    deadline.addEventListener("abort", onDeadline, { once: true });
    observeExit(host, execId, Promise.resolve()).then(resolve, reject)
      .finally(() => deadline.removeEventListener("abort", onDeadline));
  });
  if (exit.kind === "unavailable" || exit.code === NOT_FOUND) return false;
  if (exit.code !== 0) throw new Error(`the kill exec exited with code ${exit.code}`);
  return true;
}
