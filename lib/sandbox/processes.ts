/**
 * What runs in a sandbox: one row per guest process, as {@linkcode SandboxProcessInfo}.
 *
 * @module
 */

/**
 * One process of a running sandbox (every process of its compute: the agent's, and the
 * backend's own keeper and guards, marked `guard`).
 *
 * @example
 * ```ts
 * import type { SandboxProcessInfo } from "./processes.ts";
 *
 * function agentTop(processes: readonly SandboxProcessInfo[]): string[] {
 *   return processes.filter((each) => !each.guard).sort((a, b) => b.rssBytes - a.rssBytes)
 *     .map((each) => `${each.pid} ${Math.round(each.rssBytes / 1024)} KiB ${each.command}`);
 * }
 * ```
 */
export interface SandboxProcessInfo {
  /** Process ID, as the host's kernel numbers it (not the guest's own PID namespace). */
  readonly pid: number;
  /** Parent process ID (host numbering, as `pid`). */
  readonly ppid: number;
  /** Real user ID inside the sandbox. */
  readonly uid: number;
  /** Resident set size, bytes. */
  readonly rssBytes: number;
  /** Time since the process started, whole seconds. */
  readonly elapsedSeconds: number;
  /**
   * Its command line (arguments joined by spaces), at most
   * {@linkcode MAX_PROCESS_COMMAND_CHARS} characters: longer ones are cut (`commandCut`).
   */
  readonly command: string;
  /** `true` when `command` was cut at {@linkcode MAX_PROCESS_COMMAND_CHARS}. */
  readonly commandCut: boolean;
  /** `true` for the backend's own processes (keeper, guards), which run as another user. */
  readonly guard: boolean;
}

/** Longest `command` of a {@linkcode SandboxProcessInfo}, characters. */
export const MAX_PROCESS_COMMAND_CHARS = 1_000;
