/**
 * Configuration of {@linkcode createDockerSandboxBackend}: validated with zod at
 * construction (no I/O), normalised and frozen.
 *
 * @module
 */
import { z } from "zod";
import { parseConfiguration } from "../internal/zod_issues.ts";
import { SandboxConfigurationError } from "../sandbox/errors.ts";
import { endpointDefect } from "../engine/endpoint.ts";
import { DOCKER_SANDBOX_PROFILES, type DockerSandboxProfile, type DockerSandboxProfileRow } from "./profiles.ts";
import { type DockerSandboxDataset, normalizeDatasets } from "./datasets/configuration.ts";

/** Highest UID/GID admitted: the tar ownership range this backend writes (1 … 262,143). */
export const MAX_GUEST_ID = 262_143;

/** Input of {@linkcode createDockerSandboxBackend}. */
export interface DockerSandboxBackendConfig {
  /** Execution profile (see `DOCKER_SANDBOX_PROFILES`). @default "linux-x64" */
  readonly profile?: DockerSandboxProfile;
  /** Docker Engine endpoint, `unix:///absolute/path.sock`; never read from the environment. */
  readonly endpoint: string;
  /**
   * Namespace of every resource name and label: 1–32 characters of `a-z`, `0-9` and `-`,
   * starting with a letter or digit.
   */
  readonly namespace: string;
  /**
   * Absolute, canonical (no symlinks, `.`, `..`, empty segments or trailing `/`) directory
   * the caller owns; large transfers spill sorted path runs here. Verified at start to
   * exist, be a directory and be owned by this process's user.
   */
  readonly spillDirectory: string;
  /** Exact local image ID: `sha256:` and 64 lowercase hex digits. Never pulled or built. */
  readonly imageDigest: string;
  /**
   * Non-root guest identity of every sandbox (the agent's processes and files); `uid` and
   * `gid` each 1 … 262,143. Required unless `userRange` is given (then it must be omitted).
   */
  readonly user?: { readonly uid: number; readonly gid: number };
  /**
   * Give each sandbox its own agent identity instead of `user`: `reserve()` draws a uid from
   * `first` … `first + count - 1` that no live sandbox of this backend holds (gid = uid) and
   * fixes it in the reservation, the recovery record (`identity.user`) and the labels
   * `dev.agentcell.uid` / `dev.agentcell.gid` of every resource. Per-uid kernel limits
   * (inotify instances, `RLIMIT_MSGQUEUE` bytes, `RLIMIT_NPROC`) are then not shared between
   * sandboxes. Other controllers are excluded by the labels: after its keeper is created,
   * `start()` lists the daemon's keepers labelled with its uid and fails with
   * `SandboxConflictError` if another reservation holds it (reserve again to draw another).
   * `first` 1 … 262,143, `count` ≥ 1, the whole range within 262,143 and not containing
   * `keeperUser`'s uid or gid.
   *
   * @default undefined (every sandbox runs as `user`)
   */
  readonly userRange?: { readonly first: number; readonly count: number };
  /**
   * Read-only dataset images mounted at `/datasets/<name>` in every sandbox (at most 32; see
   * {@linkcode DockerSandboxDataset}). A non-empty list needs Engine API 1.48 or newer
   * (image mounts); an empty one adds no requirement.
   *
   * @default [] (none)
   */
  readonly datasets?: readonly DockerSandboxDataset[];
  /**
   * Identity of the keeper (PID 1) and of the guard execs (controller lease, guest deadline):
   * non-root and a **different uid** from `user`, so the agent (which runs as `user` with no
   * capabilities) can neither signal, ptrace nor read the memory or file descriptors of its
   * keeper and guards. Each 1 … 262,143.
   *
   * @default {{ uid: 65533, gid: 65533 }} ({ uid: 65532, gid: 65532 } when `user.uid` is 65533;
   *   with `userRange`, 65533 must lie outside the range or `keeperUser` be given)
   */
  readonly keeperUser?: { readonly uid: number; readonly gid: number };
  /**
   * Exact local image ID (`sha256:` and 64 lowercase hex digits) of the egress proxy of
   * policies with `network: { kind: "allowlist", … }`: an image with Node.js ≥ 23.6 as `node`
   * on its `PATH` (the proxy program is ours and passed on the command line). Never pulled.
   * Reserving an allowlist policy without it fails with `SandboxConfigurationError`.
   *
   * @default undefined (allowlist policies are refused)
   */
  readonly proxyImageDigest?: string;
  /**
   * Byte quota of every export that sets none: `exportTree` without `options.quota.bytes`
   * (and so `exportToDirectory` of its entries) fails with `SandboxQuotaError` (`quota`)
   * before an entry would take the declared content bytes past `bytes`; `readFile` without
   * `options.maxBytes` reads at most `bytes` when that is below its own 16 MiB default. An
   * integer from 0 to 2^53 - 1. Declared sizes count, so a sparse guest file (a few blocks
   * on the guest's disk) counts, and is written on the host, at its full length.
   *
   * @default {undefined} no default byte quota (exports run as large as their source)
   */
  readonly defaultExportQuota?: { readonly bytes: number };
}

/** The validated, frozen configuration. */
export interface DockerSandboxBackendSettings {
  /** The selected profile row. */
  readonly profile: DockerSandboxProfileRow;
  /** The endpoint as given. */
  readonly endpoint: string;
  /** Namespace of resource names and labels. */
  readonly namespace: string;
  /** Canonical spill directory. */
  readonly spillDirectory: string;
  /** Exact image ID. */
  readonly imageDigest: string;
  /** Guest identity of every sandbox; `undefined` when `userRange` draws one per sandbox. */
  readonly user: { readonly uid: number; readonly gid: number } | undefined;
  /** The per-sandbox identity range, or `undefined` (every sandbox runs as `user`). */
  readonly userRange: { readonly first: number; readonly count: number } | undefined;
  /** The datasets, sorted by name, frozen (empty when none). */
  readonly datasets: readonly DockerSandboxDataset[];
  /** Identity of the keeper and the guard execs (a uid other than `user.uid`). */
  readonly keeperUser: { readonly uid: number; readonly gid: number };
  /** The egress proxy's exact image ID, when configured. */
  readonly proxyImageDigest: string | undefined;
  /** Byte quota of every export that sets none, or `undefined`. */
  readonly defaultExportQuota: { readonly bytes: number } | undefined;
}

const imageId = (field: string) =>
  z.string().regex(/^sha256:[0-9a-f]{64}$/u, {
    error:
      `must be sha256: followed by 64 lowercase hexadecimal digits, the exact ID of a local image${field} (names and tags are not accepted; list IDs with docker image ls --no-trunc)`,
  });

const guestId = z.number().int({ error: `must be an integer from 1 to ${MAX_GUEST_ID}` })
  .min(1, { error: `must be a non-root ID from 1 to ${MAX_GUEST_ID} (0 is root): use an unprivileged ID such as 65534` })
  .max(MAX_GUEST_ID, { error: `must be at most ${MAX_GUEST_ID} (the ownership range the backend writes into archives)` });

const configSchema = z.strictObject({
  profile: z.enum(Object.keys(DOCKER_SANDBOX_PROFILES) as [DockerSandboxProfile, ...DockerSandboxProfile[]], {
    error: `must be one of ${Object.keys(DOCKER_SANDBOX_PROFILES).map((name) => JSON.stringify(name)).join(", ")} (see the README's Profiles)`,
  }).optional(),
  endpoint: z.string().max(4096),
  namespace: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/u, {
    error: "must be 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit",
  }),
  spillDirectory: z.string().max(4096),
  imageDigest: imageId(""),
  proxyImageDigest: imageId(" with node on its PATH").optional(),
  user: z.strictObject({ uid: guestId, gid: guestId }).optional(),
  userRange: z.strictObject({
    first: guestId,
    count: z.number().int({ error: "must be an integer of at least 1" }).min(1, { error: "must be at least 1 (the number of uids to draw from)" }),
  }).optional(),
  keeperUser: z.strictObject({ uid: guestId, gid: guestId }).optional(),
  defaultExportQuota: z.strictObject({
    bytes: z.number().int({ error: "must be an integer from 0 to 9007199254740991 bytes" })
      .min(0, { error: "must be an integer from 0 to 9007199254740991 bytes" }),
  }).optional(),
  // Checked entry by entry by normalizeDatasets, so messages name the index as given.
  datasets: z.unknown().optional(),
});

/**
 * Check that a host path is absolute and lexically canonical.
 *
 * @returns a reason when it is not, else `undefined`
 */
export function canonicalPathDefect(path: string): string | undefined {
  if (!path.startsWith("/")) return "must be an absolute path";
  if (path === "/") return "must not be the file system root";
  if (path.endsWith("/")) return "must not end with '/'";
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/u.test(path)) return "must not contain control characters";
  const segments = path.slice(1).split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return "must be canonical (no empty, '.' or '..' segments)";
  }
  return undefined;
}

function userRangeDefect(
  range: { first: number; count: number },
  keeper: { uid: number; gid: number },
  keeperGiven: boolean,
  action: string,
): void {
  const last = range.first + range.count - 1;
  if (last > MAX_GUEST_ID) {
    throw new SandboxConfigurationError(
      `Cannot ${action}: config.userRange ends at uid ${last}, above ${MAX_GUEST_ID} (the ownership range the backend writes into archives): lower first or count`,
    );
  }
  for (const [what, id] of [["uid", keeper.uid], ["gid", keeper.gid]] as const) {
    if (id >= range.first && id <= last) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: config.userRange ${range.first} … ${last} contains config.keeperUser.${what} ${id}${keeperGiven ? "" : " (the default)"}: the agent must not share an identity with its keeper; move the range or set config.keeperUser outside it`,
      );
    }
  }
}

/**
 * Validate and normalise a backend configuration. Inert: no I/O.
 *
 * @throws {SandboxConfigurationError} naming the first invalid field (for a dataset,
 *   `config.datasets[<index>].<field>` with the index as given)
 */
export function normalizeBackendConfig(config: DockerSandboxBackendConfig): DockerSandboxBackendSettings {
  const action = "create Docker sandbox backend";
  const parsed = parseConfiguration(configSchema, config, action, "config");
  const endpointProblem = endpointDefect(parsed.endpoint);
  if (endpointProblem) throw new SandboxConfigurationError(`Cannot ${action}: config.endpoint ${endpointProblem}`);
  const defect = canonicalPathDefect(parsed.spillDirectory);
  if (defect) throw new SandboxConfigurationError(`Cannot ${action}: config.spillDirectory ${defect}`);
  const datasets = normalizeDatasets(parsed.datasets, action);
  const { user, userRange } = parsed;
  if (user !== undefined && userRange !== undefined) {
    throw new SandboxConfigurationError(`Cannot ${action}: config.user and config.userRange are both set: give one (user for a fixed identity, userRange for one per sandbox)`);
  }
  if (user === undefined && userRange === undefined) {
    throw new SandboxConfigurationError(`Cannot ${action}: config.user is required: give the guest identity ({ uid, gid }), or config.userRange to draw one per sandbox`);
  }
  const keeperUser = parsed.keeperUser ?? (user?.uid === 65533 ? { uid: 65532, gid: 65532 } : { uid: 65533, gid: 65533 });
  if (user !== undefined && keeperUser.uid === user.uid) {
    throw new SandboxConfigurationError(
      `Cannot ${action}: config.keeperUser.uid must differ from config.user.uid (${user.uid}): the agent must not share a uid with its keeper; choose another unprivileged uid`,
    );
  }
  if (userRange !== undefined) userRangeDefect(userRange, keeperUser, parsed.keeperUser !== undefined, action);
  return Object.freeze({
    profile: DOCKER_SANDBOX_PROFILES[parsed.profile ?? "linux-x64"],
    endpoint: parsed.endpoint,
    namespace: parsed.namespace,
    spillDirectory: parsed.spillDirectory,
    imageDigest: parsed.imageDigest,
    user: user === undefined ? undefined : Object.freeze({ uid: user.uid, gid: user.gid }),
    userRange: userRange === undefined ? undefined : Object.freeze({ first: userRange.first, count: userRange.count }),
    datasets,
    keeperUser: Object.freeze({ uid: keeperUser.uid, gid: keeperUser.gid }),
    proxyImageDigest: parsed.proxyImageDigest,
    defaultExportQuota: parsed.defaultExportQuota && Object.freeze({ bytes: parsed.defaultExportQuota.bytes }),
  });
}
