/**
 * The guest's fixed paths, one place for every room that names them: the workspace volume,
 * the work directory the agent writes, and the tmpfs mounts of the keeper. `HOME` and
 * `TMPDIR` are the contract's own fixed values (`FIXED_GUEST_ENV` of `lib/sandbox/process.ts`),
 * so the keeper's tmpfs mounts and the processes' environment cannot drift apart.
 *
 * @module
 */
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
