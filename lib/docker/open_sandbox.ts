/**
 * {@linkcode openSandbox}: the short path to one started sandbox, for a newcomer, the
 * `agentcell` command and the MCP server. It fills in what is safe to default (a private
 * spill directory it creates and removes, a namespace, uid 65534, a small policy, an
 * in-memory recovery port) and asks for what grants authority (the endpoint, the image).
 *
 * @module
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { configurationError } from "../internal/zod_issues.ts";
import { denialOfDirectory, denialReason, denoPermissionDenial } from "../internal/deno_permission.ts";
import type { SandboxRecoveryPort, SandboxRecoveryRecord } from "../sandbox/backend.ts";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import type { SandboxPolicyInput, SandboxResources } from "../sandbox/policy.ts";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "./backend.ts";
import { canonicalPathDefect, type DockerSandboxBackendConfig } from "./config.ts";
import type { DockerSandboxRecoveryRecord } from "./recovery/record.ts";
import { createFileRecoveryStore } from "./recovery/store.ts";
import type { DockerSandbox } from "./sandbox.ts";
import { addDestroyStep } from "./_destroy_steps.ts";

/** Namespace of {@linkcode openSandbox} when none is given. */
export const DEFAULT_OPEN_NAMESPACE = "agentcell";

/** Guest identity of {@linkcode openSandbox} when none is given: `nobody` (65534:65534). */
export const DEFAULT_OPEN_USER: { readonly uid: number; readonly gid: number } = Object.freeze({ uid: 65534, gid: 65534 });

/** Resources of {@linkcode openSandbox} when the policy names none: 1 CPU, 256 MiB, 128 PIDs. */
export const DEFAULT_OPEN_RESOURCES: SandboxResources = Object.freeze({ cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 });

/**
 * Where {@linkcode openSandbox} makes its private spill directory: `/tmp`, fixed (the
 * library reads no environment, so not `$TMPDIR`).
 */
export const OPEN_SPILL_PARENT = "/tmp";

/** Prefix of the private spill directory {@linkcode openSandbox} makes in {@linkcode OPEN_SPILL_PARENT}. */
export const OPEN_SPILL_PREFIX = "agentcell-open-spill-";

/** A sandbox policy whose `resources` may be left out ({@linkcode DEFAULT_OPEN_RESOURCES}). */
export type OpenSandboxPolicyInput = Omit<SandboxPolicyInput, "resources"> & { readonly resources?: SandboxResources };

/**
 * Options of {@linkcode openSandbox}: every field of {@linkcode DockerSandboxBackendConfig}
 * but `userRange` (one sandbox needs no range), with `namespace`, `spillDirectory` and `user`
 * made optional, plus the policy, where records go, and a start signal.
 */
export interface OpenSandboxOptions extends Omit<DockerSandboxBackendConfig, "namespace" | "spillDirectory" | "user" | "userRange"> {
  /** Docker Engine endpoint, `unix:///absolute/path.sock` (required; never read from the environment). */
  readonly endpoint: string;
  /** Exact local image ID, `sha256:` and 64 lowercase hex digits (required; never pulled). */
  readonly imageDigest: string;
  /**
   * Namespace of the sandbox's resource names and labels (see `DockerSandboxBackendConfig`).
   *
   * @default {"agentcell"}
   */
  readonly namespace?: string;
  /**
   * Spill directory (absolute, canonical, owned by this process), kept as it is.
   *
   * @default {undefined} a private directory `/tmp/agentcell-open-spill-*` (mode 0700), made before
   *   start and removed by `destroy()` or a failed start (Deno: `--allow-read=/tmp
   *   --allow-write=/tmp`)
   */
  readonly spillDirectory?: string;
  /**
   * Non-root guest identity of the agent's processes and files.
   *
   * @default {{ uid: 65534, gid: 65534 }}
   */
  readonly user?: { readonly uid: number; readonly gid: number };
  /**
   * The sandbox's policy; `resources` may be left out.
   *
   * @default {{ resources: { cpus: 1, memoryBytes: 268435456, pids: 128 } }} (and the policy's own defaults: `isolated` network, …)
   */
  readonly policy?: OpenSandboxPolicyInput;
  /**
   * Directory of a file recovery store (`createFileRecoveryStore`): each record lands there
   * before its resource exists, so a crashed program's sandbox can be reclaimed
   * (`backend.recover()`, `agentcell reclaim`); `destroy()` removes the record once the
   * sandbox is gone. Absolute and canonical, private to this user (created 0700 if missing).
   *
   * @default {undefined} records kept in memory only: a crash leaves the sandbox's resources
   *   unrecorded (find them by the namespace's labels)
   */
  readonly recordsDirectory?: string;
  /**
   * Cancels the start (see `SandboxStartOptions.signal`).
   *
   * @default {undefined} no cancellation
   */
  readonly signal?: AbortSignal;
}

const ownFields = z.object({
  namespace: z.string().optional(),
  spillDirectory: z.string().optional(),
  user: z.unknown().optional(),
  policy: z.looseObject({}, { error: "must be an object (a sandbox policy; resources may be left out)" }).optional(),
  recordsDirectory: z.string({ error: "must be a string: the absolute path of a records directory" }).optional(),
  signal: z.instanceof(AbortSignal, { error: "must be an AbortSignal" }).optional(),
  userRange: z.undefined({ error: "is not an option of openSandbox (one sandbox needs no range): use createDockerSandboxBackend" }).optional(),
});

const ACTION = "open sandbox";

/** Stands in for the spill directory while the options are checked (never touched). */
const PLACEHOLDER_SPILL = "/nonexistent/agentcell-spill";

/**
 * Open one started sandbox with safe defaults: validate every option (no I/O), make a
 * private spill directory unless one is given, open the file recovery store when
 * `recordsDirectory` is given, create the backend, reserve and start. `destroy()` (and
 * `await using`) of the sandbox then also removes what this call made: the spill directory
 * it created and the record in `recordsDirectory`, once the sandbox's own resources are
 * gone. A failed start removes the spill directory it made, and its record when that names
 * nothing that may still exist (every resource never made, or removed by the start's own
 * cleanup); otherwise the record stays for reclaiming, since a create whose outcome is
 * unknown, or a removal that failed, may have left something.
 *
 * @param options the endpoint and image (required) and what to override (see {@linkcode OpenSandboxOptions})
 * @returns the running sandbox
 * @throws {SandboxConfigurationError} naming the first invalid option (`options.<field>`, or
 *   `config.<field>` / `policy.<field>` as the backend words them), before anything is made;
 *   an unusable `recordsDirectory` (see `createFileRecoveryStore`)
 * @throws what `reservation.start()` throws (`SandboxUnsupportedError` for a daemon or image
 *   the profile refuses, `SandboxEngineError`, `SandboxAbortedError`, …)
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine and a local image ID
 * import { openSandbox } from "@agentcell/docker";
 *
 * await using sandbox = await openSandbox({
 *   endpoint: "unix:///var/run/docker.sock",
 *   imageDigest: "sha256:<64 lowercase hex digits>",
 * });
 * const result = await sandbox.run("/bin/echo", ["hello"]);
 * console.log(result.stdoutText, result.exit); // "hello\n" { kind: "exited", code: 0 }
 * ```
 */
export async function openSandbox(options: OpenSandboxOptions): Promise<DockerSandbox> {
  const { backendConfig, policy, recordsDirectory, signal } = checkedOpenOptions(options);
  const store = recordsDirectory === undefined ? undefined : await createFileRecoveryStore(recordsDirectory);
  const madeSpill = backendConfig.spillDirectory === undefined ? await makePrivateSpillDirectory() : undefined;
  const removeSpill = () => madeSpill === undefined ? Promise.resolve() : rm(madeSpill, { recursive: true, force: true });
  // The latest record the store holds durably: after a failed start whose cleanup completed
  // (every resource never made or removed), it names nothing to reclaim and is dropped.
  let stored: SandboxRecoveryRecord | undefined;
  const port: SandboxRecoveryPort = store === undefined ? memoryPort() : {
    record: async (record) => {
      await store.record(record);
      stored = record;
    },
  };
  let sandbox: DockerSandbox;
  try {
    const backend: DockerSandboxBackend = createDockerSandboxBackend({ ...backendConfig, spillDirectory: backendConfig.spillDirectory ?? madeSpill! });
    const reservation = backend.reserve({ policy }, port);
    sandbox = await reservation.start({ signal });
  } catch (error) {
    await removeSpill();
    if (store !== undefined && stored !== undefined && namesNothing(stored)) {
      await store.remove(String(stored.reservationId)).catch(() => {});
    }
    throw error;
  }
  if (store !== undefined) addDestroyStep(sandbox, () => store.remove(sandbox.id));
  addDestroyStep(sandbox, removeSpill);
  return sandbox;
}

/**
 * Check the options of {@linkcode openSandbox} without I/O: everything `openSandbox` checks
 * before it makes anything (its own options, the backend configuration, the policy against
 * the profile, the records directory's path), so a caller can refuse bad input before it
 * talks to the Engine (the `agentcell` command does, before it asks the Engine which profile
 * admits it).
 *
 * @param options as for {@linkcode openSandbox}
 * @throws {SandboxConfigurationError} naming the first invalid option, as `openSandbox` does
 * @throws {SandboxUnsupportedError} for a policy the profile cannot enforce
 *
 * @example
 * ```ts
 * import { checkOpenSandboxOptions } from "./open_sandbox.ts";
 *
 * checkOpenSandboxOptions({ endpoint: "unix:///var/run/docker.sock", imageDigest: `sha256:${"a".repeat(64)}` }); // passes: no I/O
 * ```
 */
export function checkOpenSandboxOptions(options: OpenSandboxOptions): void {
  checkedOpenOptions(options);
}

/**
 * The options checked (see {@linkcode checkOpenSandboxOptions}) and split: the backend
 * configuration, the full policy, the rest.
 */
function checkedOpenOptions(options: OpenSandboxOptions): ReturnType<typeof validateOpenOptions> {
  const checked = validateOpenOptions(options);
  const { backendConfig, policy, recordsDirectory } = checked;
  // The backend and a reservation are inert, so a trial pair with a placeholder spill
  // directory validates the configuration and the policy (against the profile too); the
  // real spill directory comes after.
  createDockerSandboxBackend({ ...backendConfig, spillDirectory: backendConfig.spillDirectory ?? PLACEHOLDER_SPILL })
    .reserve({ policy }, memoryPort());
  const defect = recordsDirectory === undefined ? undefined : canonicalPathDefect(recordsDirectory);
  if (defect !== undefined) throw new SandboxConfigurationError(`Cannot ${ACTION}: options.recordsDirectory ${defect}`);
  return checked;
}

/** The options split and their own fields checked: the backend configuration, the full policy, the rest. */
function validateOpenOptions(options: OpenSandboxOptions): {
  backendConfig: DockerSandboxBackendConfig & { spillDirectory?: string };
  policy: SandboxPolicyInput;
  recordsDirectory: string | undefined;
  signal: AbortSignal | undefined;
} {
  if (typeof options !== "object" || options === null) {
    throw new SandboxConfigurationError(`Cannot ${ACTION}: options must be an object with endpoint and imageDigest`);
  }
  const parsed = ownFields.safeParse(options);
  if (!parsed.success) throw configurationError(ACTION, "options", parsed.error);
  const { policy, recordsDirectory, signal, namespace, spillDirectory, user, ...rest } = options;
  const backendConfig = {
    ...rest,
    namespace: namespace ?? DEFAULT_OPEN_NAMESPACE,
    user: user ?? DEFAULT_OPEN_USER,
    ...(spillDirectory === undefined ? {} : { spillDirectory }),
  } as DockerSandboxBackendConfig & { spillDirectory?: string };
  const fullPolicy = { ...policy, resources: policy?.resources ?? DEFAULT_OPEN_RESOURCES } as SandboxPolicyInput;
  return { backendConfig, policy: fullPolicy, recordsDirectory, signal };
}

/**
 * A fresh `/tmp/agentcell-open-spill-*` directory (mode 0700), by its real path.
 *
 * @throws {SandboxConfigurationError} when Deno denies it (the message names the flag)
 */
async function makePrivateSpillDirectory(): Promise<string> {
  try {
    return await realpath(await mkdtemp(join(OPEN_SPILL_PARENT, OPEN_SPILL_PREFIX)));
  } catch (error) {
    const denial = denoPermissionDenial(error);
    if (denial === undefined) throw error;
    throw new SandboxConfigurationError(
      `Cannot ${ACTION}: make its spill directory in ${OPEN_SPILL_PARENT}: ${denialReason(denialOfDirectory(denial, OPEN_SPILL_PARENT))} (or pass options.spillDirectory)`,
      { cause: error },
    );
  }
}

/** Whether every resource `record` names was never made or is removed (nothing to reclaim). */
function namesNothing(record: SandboxRecoveryRecord): boolean {
  const resources = Object.values((record as DockerSandboxRecoveryRecord).resources ?? {});
  return resources.every((resource) => resource !== undefined && (resource.state === "planned" || resource.state === "removed"));
}

/** A recovery port that keeps only the latest record, in memory. */
function memoryPort(): SandboxRecoveryPort {
  let latest: SandboxRecoveryRecord | undefined;
  return {
    record: (record) => {
      latest = record;
      return Promise.resolve(void latest);
    },
  };
}
