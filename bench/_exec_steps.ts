// The exec round trip the way `DockerProcessReservation.start()` (lib/docker/process/process.ts)
// does it, from our lower-level pieces, plus the exit-receipt poll of its `observeExit`.
import { demultiplex } from "../lib/engine/frames/demultiplex.ts";
import { createExec, inspectExec, startExec } from "../lib/engine/exec.ts";
import type { DockerEngine } from "../lib/engine/client.ts";
import { drain, sleep } from "./_setup.ts";
import { mark } from "./_trace.ts";

/** The wrapper `process.start()` runs every executable under (copied from lib/docker/process/process.ts). */
export const OOM_WRAPPER = 'echo 1000 > /proc/self/oom_score_adj 2>/dev/null; exec "$0" "$@"';

/** Default `maxBufferedOutputBytes` of a process: 4 MiB. */
export const MAX_BUFFERED_OUTPUT_BYTES = 4 * 1024 * 1024;

/** Counts of exit polls that found the exec still running after its stream ended. */
export const pollStats = { polls: 0, retries: 0 };

/**
 * Polls an exec's state until it is not running with a numeric exit code, sleeping
 * `min(10 · 2^round, 500)` ms between polls as `observeExit` does.
 *
 * @returns the exit code
 */
export async function pollExit(inspect: () => Promise<{ Running: boolean; ExitCode: number | null }>): Promise<number> {
  for (let round = 0;; round++) {
    pollStats.polls++;
    const state = await inspect();
    if (!state.Running && state.ExitCode !== null) return state.ExitCode;
    pollStats.retries++;
    if (round > 20) throw new Error("Cannot observe the exec's exit: still running after 20 polls");
    await sleep(Math.min(10 * 2 ** round, 500));
  }
}

/** The exec body `process.start()` sends, for `cmd` as the sandbox user. */
export function execBody(cmd: readonly string[], user: { uid: number; gid: number }) {
  return { Cmd: cmd, Env: [], User: `${user.uid}:${user.gid}`, WorkingDir: "/workspace/work" };
}

/**
 * `createExec` + `startExec` + `demultiplex` + drain + `inspectExec` (polled) in
 * `containerId`; resolves with stdout bytes and the exit code.
 */
export async function ourExec(
  engine: DockerEngine,
  containerId: string,
  cmd: readonly string[],
  user: { uid: number; gid: number },
): Promise<{ stdoutBytes: number; code: number }> {
  const execId = await createExec(engine, containerId, execBody(cmd, user));
  const attach = await startExec(engine, execId);
  try {
    const running = performance.now();
    const output = demultiplex(attach.readable, { maxBufferedOutputBytes: MAX_BUFFERED_OUTPUT_BYTES, onFault: () => {} });
    const [stdoutBytes] = await Promise.all([drain(output.stdout), drain(output.stderr), output.done]);
    mark("wait", "attach stream open until the output ended", running);
    const code = await pollExit(() => inspectExec(engine, execId));
    return { stdoutBytes, code };
  } finally {
    await attach.close();
  }
}
