/**
 * `sandbox.processes()`: the Engine's process list of the keeper container
 * (`GET /containers/{id}/top`, Engine API v1.44), read as {@linkcode SandboxProcessInfo} rows.
 *
 * Why the Engine's list and not a listing made in the guest: the Engine runs `ps` on the
 * host over the container's cgroup, so it needs no tool in the agent's image, costs no exec,
 * and reads the kernel's own records, which no guest program can shadow (a process can
 * still choose its own command line).
 *
 * @module
 */
import { z } from "zod";
import { MAX_PROCESS_COMMAND_CHARS, type SandboxProcessInfo } from "../sandbox/processes.ts";

/**
 * The `ps` arguments the Engine runs with: numeric columns, then the command line last;
 * `--cols` bounds each line, so the reply is bounded by the number of processes (and that by
 * `resources.pids`). The width leaves at least {@linkcode MAX_PROCESS_COMMAND_CHARS}
 * characters for the command after the numeric columns.
 */
export const TOP_PS_ARGS = `-o pid,ppid,uid,rss,etimes,args --cols ${MAX_PROCESS_COMMAND_CHARS + 100}`;

/** Bytes of one row of the reply at most (the line width, JSON quoting and separators). */
const ROW_BYTES = 2 * (MAX_PROCESS_COMMAND_CHARS + 100) + 64;

/**
 * The reply bound for a sandbox of `pids` tasks: every row at its widest, and the titles.
 * A reply past it cannot come from `ps` within that task limit.
 */
export function topReplyBytes(pids: number): number {
  return (pids + 2) * ROW_BYTES + 1024;
}

const topSchema = z.looseObject({
  Titles: z.array(z.string()),
  Processes: z.array(z.array(z.string())).nullable(),
});

const TITLES = ["PID", "PPID", "UID", "RSS", "ELAPSED", "COMMAND"];

function integer(text: string, what: string): number {
  if (!/^\d+$/.test(text.trim())) throw new Error(`${what} is ${JSON.stringify(text)}, not a whole number`);
  return Number(text.trim());
}

/**
 * The rows of a `top` reply made with {@linkcode TOP_PS_ARGS}, oldest PID first.
 *
 * @param reply The Engine's JSON.
 * @param guardUid The keeper's uid: its processes are `guard`.
 * @throws {Error} when the reply has other columns or a cell is not what `ps` writes
 *   (the caller turns it into an Engine error)
 */
export function processesOf(reply: unknown, guardUid: number): SandboxProcessInfo[] {
  const top = topSchema.parse(reply);
  if (top.Titles.join(" ") !== TITLES.join(" ")) throw new Error(`the columns are ${top.Titles.join(", ")}, not ${TITLES.join(", ")}`);
  const rows = (top.Processes ?? []).map((row): SandboxProcessInfo => {
    if (row.length !== TITLES.length) throw new Error(`a row has ${row.length} cells, not ${TITLES.length}`);
    const [pid, ppid, uid, rss, elapsed, command] = row as [string, string, string, string, string, string];
    const uidNumber = integer(uid, "UID");
    return Object.freeze({
      pid: integer(pid, "PID"),
      ppid: integer(ppid, "PPID"),
      uid: uidNumber,
      rssBytes: integer(rss, "RSS") * 1024,
      elapsedSeconds: integer(elapsed, "ELAPSED"),
      command: command.slice(0, MAX_PROCESS_COMMAND_CHARS),
      commandCut: command.length > MAX_PROCESS_COMMAND_CHARS,
      guard: uidNumber === guardUid,
    });
  });
  return rows.sort((a, b) => a.pid - b.pid);
}
