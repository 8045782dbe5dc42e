/**
 * The guest's fixed paths, one place for every room that names them: the workspace volume,
 * the work directory the agent writes, and the tmpfs mounts of the keeper. `HOME` and
 * `TMPDIR` are the contract's own fixed values (`FIXED_GUEST_ENV` of `lib/sandbox/process.ts`),
 * so the keeper's tmpfs mounts and the processes' environment cannot drift apart.
 *
 * @module
 */
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import { FIXED_GUEST_ENV } from "../sandbox/process.ts";

/** Guest path of the workspace volume. */
export const WORKSPACE_PATH = "/workspace";
/** Guest path the workload writes (created owned by the sandbox user); processes start here. */
export const WORK_PATH = "/workspace/work";

/** The workload's directory relative to the workspace volume's root (`WORK_PATH` in the guest). */
export const WORK_DIRECTORY = "work";
/** Guest HOME (a tmpfs): `FIXED_GUEST_ENV.HOME`. */
export const HOME_PATH: string = FIXED_GUEST_ENV.HOME;
/** Guest TMPDIR (a tmpfs): `FIXED_GUEST_ENV.TMPDIR`. */
export const TMP_PATH: string = FIXED_GUEST_ENV.TMPDIR;
/** Guest POSIX shared memory (a private tmpfs that replaces the Engine's own `/dev/shm`). */
export const SHM_PATH = "/dev/shm";

/** The guest directories a process may start in (each, or a directory below it). */
export const WORKING_DIRECTORY_ROOTS: readonly string[] = Object.freeze([WORKSPACE_PATH, HOME_PATH, TMP_PATH]);

/**
 * The working directory of a process: `cwd` when it is one of
 * {@linkcode WORKING_DIRECTORY_ROOTS} or below one, else {@linkcode WORK_PATH} when it is
 * `undefined`.
 *
 * @param cwd An absolute canonical guest path (lexically checked already), or `undefined`.
 * @param action The "<action>" of the error message, e.g. "run process".
 * @param field The field named in the error message, e.g. "options.cwd".
 * @returns The guest working directory.
 * @throws {SandboxConfigurationError} When `cwd` lies outside every root.
 */
export function confineWorkingDirectory(cwd: string | undefined, action: string, field: string): string {
  if (cwd === undefined) return WORK_PATH;
  if (WORKING_DIRECTORY_ROOTS.some((root) => cwd === root || cwd.startsWith(`${root}/`))) return cwd;
  throw new SandboxConfigurationError(
    `Cannot ${action}: ${field} ${JSON.stringify(cwd)} must be ${WORKING_DIRECTORY_ROOTS.join(", ")} or a directory below one of them; ` +
      `start the process in the workspace (e.g. ${JSON.stringify(WORK_PATH)}) and let it change directory itself if it must`,
  );
}
