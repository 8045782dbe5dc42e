/**
 * The keeper container: its create body (the hardening) and the readback that checks the
 * Engine applied every part of it.
 *
 * Facts measured on the build machines (Engine 28.5, runc 1.1, cgroup v1): an omitted
 * `CgroupnsMode` means `host` on cgroup v1, so it is always sent; an omitted `MemorySwap`
 * reads back as twice `Memory`, so it is always sent equal to `Memory` (no swap); tmpfs
 * `mode=` is ignored when the directory exists in the image but `uid=`/`gid=` are honoured.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { FIXED_GUEST_ENV } from "../../sandbox/process.ts";
import type { SandboxPolicy } from "../../sandbox/policy.ts";
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { ContainerInspect } from "../../engine/containers.ts";
import { mountMismatches, type WorkloadMount } from "./mounts.ts";
import { HOME_PATH, SHM_PATH, TMP_PATH, WORKSPACE_PATH } from "../guest_paths.ts";
import { socketBufferSysctls } from "./socket_buffers.ts";


/**
 * The fixed keeper: PID 1 of the container, a `/bin/sh` loop that sleeps in the background
 * and waits, so it also reaps orphaned descendants (no zombies pile up), and exits on TERM.
 */
export const KEEPER_COMMAND: readonly string[] = Object.freeze([
  "-c",
  "trap 'exit 0' TERM INT; while :; do sleep 2147483647 & wait $!; done",
]);

/** Everything the keeper's create body depends on. */
export interface WorkloadSpec {
  /** Exact image ID. */
  readonly imageDigest: string;
  /** The agent's identity (owner of the tmpfs home and tmp). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The keeper's identity (the container's `User`; a uid other than `user`'s). */
  readonly keeperUser: { readonly uid: number; readonly gid: number };
  /** Normalised policy. */
  readonly policy: SandboxPolicy;
  /**
   * The container's mounts (`./mounts.ts`): for the keeper the volume writable and every
   * dataset read-only; for the export accessor only the volume, read-only.
   */
  readonly mounts: readonly WorkloadMount[];
  /** Network name (`outbound`, `allowlist`), or `undefined` for `none`. */
  readonly networkName: string | undefined;
  /** Exact labels of the container. */
  readonly labels: Readonly<Record<string, string>>;
  /** AppArmor profile the daemon applies (`docker-default` or empty). */
  readonly appArmorProfile: string;
  /** `NAME=value` entries after the fixed ones (an allowlist's proxy variables, `egress/guest_env.ts`). */
  readonly extraEnv?: readonly string[];
  /** OCI runtime (`HostConfig.Runtime`): the profile's `runc` or `runsc` (gVisor). */
  readonly runtime: "runc" | "runsc";
}

function envEntries(spec: WorkloadSpec): string[] {
  return [...Object.entries(FIXED_GUEST_ENV).map(([name, value]) => `${name}=${value}`), ...(spec.extraEnv ?? [])];
}

function tmpfsOptions(bytes: number, inodes: number, user: { uid: number; gid: number }, mode: string): string {
  return `rw,nosuid,nodev,size=${bytes},nr_inodes=${inodes},uid=${user.uid},gid=${user.gid},mode=${mode}`;
}

/**
 * The `HostConfig.Tmpfs` map: home, tmp and `/dev/shm`. A `Tmpfs` entry at `/dev/shm`
 * replaces the Engine's shm mount (measured on Engine 28.5 with `IpcMode: "private"`), which
 * is how the shm mount gets an `nr_inodes` bound; `ShmSize` is sent with the same size too.
 */
function tmpfsMounts(policy: SandboxPolicy, user: { uid: number; gid: number }): Record<string, string> {
  const { homeBytes, tmpBytes, shmBytes, inodes } = policy.tmpfs;
  return {
    [HOME_PATH]: tmpfsOptions(homeBytes, inodes, user, "0700"),
    [TMP_PATH]: tmpfsOptions(tmpBytes, inodes, user, "1777"),
    [SHM_PATH]: `rw,nosuid,nodev,noexec,size=${shmBytes},nr_inodes=${inodes},mode=1777`,
  };
}

/**
 * `HostConfig.Ulimits` of a policy (Engine API v1.44+): soft = hard for each limit, `core`
 * 0/0. Execs inherit the container's limits (measured on Engine 28.5 with runc: an exec's
 * `/proc/self/limits` shows these values), so this one list bounds every process.
 */
function ulimitsOf(policy: SandboxPolicy): { Name: string; Soft: number; Hard: number }[] {
  const { nofile, nproc, msgqueue, memlock, sigpending } = policy.ulimits;
  const limits: [string, number][] = [["core", 0], ["nofile", nofile], ["nproc", nproc], ["msgqueue", msgqueue], ["memlock", memlock], ["sigpending", sigpending]];
  return limits.map(([Name, value]) => ({ Name, Soft: value, Hard: value }));
}

/** `NanoCpus` for a CPU count. */
export function nanoCpus(cpus: number): number {
  return Math.round(cpus * 1e9);
}

/**
 * The `HostConfig` fields every container of a sandbox shares (the keeper, the export
 * accessor and the egress proxy): read-only root, no capabilities, `no-new-privileges`,
 * private IPC and cgroup namespaces, the daemon's own user namespace, exact memory with no
 * swap (`MemorySwap` = `Memory`, bytes), `NanoCpus` (CPU count × 10⁹), `PidsLimit`, no binds,
 * devices, published ports, init, restart or logs. Callers add their mounts, `Tmpfs`,
 * `Runtime` and `Sysctls` (`./socket_buffers.ts`). Field names: Engine API v1.44 `ContainerCreate` `HostConfig`.
 */
export function lockedDownHostConfig(
  limits: { memoryBytes: number; cpus: number; pids: number },
  networkMode: string,
): Record<string, unknown> {
  return {
    ReadonlyRootfs: true,
    CapDrop: ["ALL"],
    CapAdd: [],
    SecurityOpt: ["no-new-privileges"],
    PidMode: "",
    IpcMode: "private",
    CgroupnsMode: "private",
    UsernsMode: "",
    Privileged: false,
    Memory: limits.memoryBytes,
    MemorySwap: limits.memoryBytes,
    NanoCpus: nanoCpus(limits.cpus),
    PidsLimit: limits.pids,
    NetworkMode: networkMode,
    Binds: [],
    Devices: [],
    PortBindings: {},
    PublishAllPorts: false,
    Init: false,
    RestartPolicy: { Name: "no" },
    AutoRemove: false,
    LogConfig: { Type: "none", Config: {} },
  };
}

/** The hardening fields of `HostConfig` every readback compares with what was sent. */
export const HARDENING_FIELDS = [
  "ReadonlyRootfs", "CapDrop", "CapAdd", "SecurityOpt", "PidMode", "IpcMode", "CgroupnsMode", "UsernsMode", "Privileged",
  "Memory", "MemorySwap", "NanoCpus", "PidsLimit", "NetworkMode", "Binds", "Devices", "PortBindings", "PublishAllPorts",
  "Sysctls", "Runtime",
] as const;

/** An absent list or map reads back as `null`; compare it as the empty one that was sent. */
function readBack(actual: unknown, sent: unknown): unknown {
  if (actual !== null && actual !== undefined) return actual;
  return Array.isArray(sent) ? [] : typeof sent === "object" && sent !== null ? {} : actual;
}

/**
 * The `HostConfig` fields of a readback that differ from the create body's own (one source
 * for what is sent and what is checked): `"HostConfig.<Field> is <read back>"` each.
 *
 * @param host the inspect's `HostConfig`
 * @param sent the create body's `HostConfig`
 * @param fields which fields to compare
 * @returns one sentence per differing field
 */
export function hostConfigMismatches(host: Readonly<Record<string, unknown>>, sent: Readonly<Record<string, unknown>>, fields: readonly string[]): string[] {
  return fields.flatMap((field) => {
    const actual = readBack(host[field], sent[field]);
    return isDeepStrictEqual(actual, sent[field]) ? [] : [`HostConfig.${field} is ${JSON.stringify(actual)}`];
  });
}

/**
 * The `POST /containers/create` body of the keeper (Engine API v1.44+; v1.48+ when the
 * mounts include datasets) or, with the accessor's spec, of the export accessor.
 */
export function keeperCreateBody(spec: WorkloadSpec): Record<string, unknown> {
  const { policy, user, keeperUser } = spec;
  return {
    Image: spec.imageDigest,
    User: `${keeperUser.uid}:${keeperUser.gid}`,
    Entrypoint: ["/bin/sh"],
    Cmd: [...KEEPER_COMMAND],
    WorkingDir: WORKSPACE_PATH,
    Env: envEntries(spec),
    Labels: { ...spec.labels },
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    ExposedPorts: {},
    HostConfig: {
      ...lockedDownHostConfig(policy.resources, spec.networkName ?? "none"),
      Tmpfs: tmpfsMounts(policy, user),
      ShmSize: policy.tmpfs.shmBytes,
      Ulimits: ulimitsOf(policy),
      Mounts: spec.mounts.map((mount) => ({ ...mount })),
      Runtime: spec.runtime,
      Sysctls: socketBufferSysctls(spec.runtime),
    },
  };
}

function sameList(actual: readonly string[] | null | undefined, expected: readonly string[]): boolean {
  const list = actual ?? [];
  return list.length === expected.length && list.every((value, index) => value === expected[index]);
}

/**
 * Compare the keeper's `GET /containers/{id}/json` with its spec.
 *
 * @param inspect the readback
 * @param spec what was requested
 * @param running whether the container must be running (after start) or merely created
 * @returns one sentence per mismatch (empty when everything matches)
 */
export function workloadMismatches(inspect: ContainerInspect, spec: WorkloadSpec, running: boolean): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  const { Config: config, HostConfig: host, policy } = { ...inspect, policy: spec.policy };
  check(inspect.Image === spec.imageDigest, `image is ${inspect.Image}`);
  check(config.User === `${spec.keeperUser.uid}:${spec.keeperUser.gid}`, `user is '${config.User}'`);
  check(sameList(config.Entrypoint, ["/bin/sh"]) && sameList(config.Cmd, KEEPER_COMMAND), "entrypoint/command is not the fixed keeper");
  check(sameList(config.Env, envEntries(spec)), `environment is ${JSON.stringify(config.Env)}`);
  check(!config.Tty && !config.OpenStdin, "a TTY or stdin is attached");
  check(Object.keys(config.ExposedPorts ?? {}).length === 0, "ports are exposed");
  const sent = keeperCreateBody(spec).HostConfig as Record<string, unknown>;
  problems.push(...hostConfigMismatches(host as unknown as Record<string, unknown>, sent, [...HARDENING_FIELDS, "ShmSize"]));
  const tmpfs = host.Tmpfs ?? {};
  const expectedTmpfs = tmpfsMounts(policy, spec.user);
  check(
    Object.keys(tmpfs).length === Object.keys(expectedTmpfs).length &&
      Object.entries(expectedTmpfs).every(([path, options]) => tmpfs[path] === options),
    `tmpfs mounts are ${JSON.stringify(tmpfs)}`,
  );
  const ulimits = host.Ulimits ?? [];
  const expectedUlimits = ulimitsOf(policy);
  check(
    ulimits.length === expectedUlimits.length &&
      expectedUlimits.every((want) => ulimits.some((got) => got.Name === want.Name && got.Soft === want.Soft && got.Hard === want.Hard)),
    `ulimits are ${JSON.stringify(host.Ulimits)}`,
  );
  problems.push(...mountMismatches(inspect, spec.mounts));
  check((host.DeviceRequests ?? []).length === 0, "devices are present");
  check((host.VolumesFrom ?? []).length === 0, "volumes are shared from another container");
  if (running) {
    check(inspect.State.Running, `state is ${inspect.State.Status}`);
    check((inspect.AppArmorProfile ?? "") === spec.appArmorProfile, `AppArmor profile is '${inspect.AppArmorProfile ?? ""}'`);
  }
  return problems;
}

/**
 * Throw when the readback differs from the spec.
 *
 * @throws {SandboxUnsupportedError} listing every mismatch
 */
export function verifyWorkload(inspect: ContainerInspect, spec: WorkloadSpec, running: boolean): void {
  const problems = workloadMismatches(inspect, spec, running);
  if (problems.length > 0) {
    throw new SandboxUnsupportedError(`Cannot start sandbox: the keeper container reads back differently: ${problems.join("; ")}`);
  }
}
