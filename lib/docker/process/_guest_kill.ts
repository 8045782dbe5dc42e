/**
 * Ending one process inside the guest: an exec of the sandbox's own `/bin/sh` that finds the
 * process's leader by its mark and kills its process group.
 *
 * Every process gets a random 15-digit mark from its wrapper shell (see `process.ts`): the
 * plain wrapper sets its soft `RLIMIT_LOCKS` to it and `exec`s the command (the mark survives
 * `exec`); the forking wrapper of `killDescendantsOnExit` names itself with it
 * (`/proc/self/comm`). Either way the marked process is its exec's leader: runc starts every
 * exec in a session of its own, so the leader is its session and process-group leader, and
 * its parent lies outside the guest's PID namespace (its `ppid` there is 0). The command and
 * its descendants stay in that group unless they leave it; with the plain wrapper they carry
 * the mark wherever they go (limits are inherited across `fork`, `exec` and `setsid`). The
 * kill scans `/proc/<pid>/stat` and `/proc/<pid>/limits` with shell builtins only (no fork,
 * so it still runs when a fork bomb holds every PID but the one of its own exec) and sends
 * `SIGKILL` to the group and its leader, and to every other process that carries the mark
 * in its limits (a descendant that left the group) with the group it leads. A mark no exec
 * leader carries any more is reported as not found (what still carries it in its limits is
 * killed all the same). A guest process can change its own mark, and, with `prlimit(2)`,
 * the limits of another process of the same uid — never `comm` of another, nor anything of
 * the keeper's or guards' uid. So a guest can make a kill miss or find the wrong leader; the
 * kill therefore counts only once its own exec ended, and the sandbox stops otherwise
 * (`DockerProcess`), so the bound holds either way.
 *
 * @module
 */
import { createExec, startExec } from "../../engine/exec.ts";
import { type ExitObserverHost, observeExit } from "./exit_observer.ts";
import { WORK_PATH } from "../guest_paths.ts";

/**
 * The kill script; `$1` is the process's mark. For every exec leader (`ppid` 0) whose `comm`
 * or soft `RLIMIT_LOCKS` is the mark, it kills the leader's process group and the leader; it
 * exits 0 when it found one, {@linkcode NOT_FOUND} when none carries the mark. It also kills
 * every other live process whose soft `RLIMIT_LOCKS` is the mark, with the group it leads: a
 * descendant that left the leader's process group (`setsid`, a shell's job control) still
 * carries the mark it inherited, so it is ended with the command instead of running on until
 * the sandbox stops. It scans again while a scan killed such a process (a descendant may fork
 * while it runs; at most 100 scans). A `stat` line cut short by a newline in the process's
 * name (which the process chooses: it could write `x) S 0 1 ` there to pose as an exec leader,
 * or hide that it is a zombie) has fewer than 20 fields where the kernel writes more than 40:
 * such a process is killed when it carries the mark, but never counts as the leader found nor
 * as a reason to scan again. `read`, `set`, `kill` and `$((…))` are builtins of every
 * POSIX shell, so the script needs nothing but `/bin/sh` and `/proc`.
 */
export const KILL_SCRIPT = 'm=$1; f=3; n=1; i=0; while [ $n -gt 0 ] && [ $i -lt 100 ]; do i=$((i + 1)); n=0; ' +
  'for d in /proc/[0-9]*; do p=${d#/proc/}; read -r l 2>/dev/null < "$d/stat" || continue; ' +
  'set -f; set -- ${l##*) }; set +f; case $2.$l in "0.$p ($m) "*) ;; ' +
  '*) [ "$1" = Z ] && continue; k=; while read -r a b c s r; do [ "$a $b $c" = "Max file locks" ] && k=$s; done 2>/dev/null < "$d/limits"; ' +
  '[ "$k" = "$m" ] || continue;; esac; kill -9 -"$p" "$p" 2>/dev/null; if [ $# -lt 20 ]; then :; elif [ "$2" = 0 ]; then f=0; else n=$((n + 1)); fi; done; done; exit $f';

/** Exit code of the kill script when no exec leader carries the mark. */
const NOT_FOUND = 3;

const KILLED: GuestKillOutcome = Object.freeze({ kind: "killed" });
const ABSENT: GuestKillOutcome = Object.freeze({ kind: "absent" });

/** What the kill needs: the sandbox (its `stopping` ends the kill early) and the user. */
export interface GuestKillHost extends ExitObserverHost {
  readonly user: { readonly uid: number; readonly gid: number };
}

/**
 * What one kill found: `killed`, the leader was found and signalled; `absent`, no exec leader
 * carries the mark (its wrapper has not set it yet, it is gone, or the sandbox stopped
 * meanwhile); `unstarted`, the Engine reported the kill exec with `code`, neither 0 nor "not
 * found": it could not start it (say, the runtime's own setup needed a PID while a fork bomb
 * held every one), so the script never ran.
 */
export type GuestKillOutcome = { readonly kind: "killed" } | { readonly kind: "absent" } | { readonly kind: "unstarted"; readonly code: number };

/**
 * Kill the process group whose exec leader carries `mark`, once. Bounded by
 * `policy.deadlines.cleanupMs`.
 *
 * @returns what the kill found (see {@linkcode GuestKillOutcome})
 * @throws {Error} when the kill exec could not be created or started, or did not end within
 *   the deadline
 */
export async function killProcessGroup(host: GuestKillHost, mark: string): Promise<GuestKillOutcome> {
  const { engine, keeperId, user } = host;
  const timeoutMs = host.policy.deadlines.cleanupMs;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([host.stopping, deadline]);
  const execId = await createExec(engine, keeperId, {
    Cmd: ["/bin/sh", "-c", KILL_SCRIPT, "sh", mark],
    Env: [],
    User: `${user.uid}:${user.gid}`,
    WorkingDir: WORK_PATH,
    AttachStdin: false,
  }, { timeoutMs, signal });
  const attach = await startExec(engine, execId, { signal });
  try {
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
  if (exit.kind === "unavailable" || exit.code === NOT_FOUND) return ABSENT;
  return exit.code === 0 ? KILLED : Object.freeze({ kind: "unstarted", code: exit.code });
}
