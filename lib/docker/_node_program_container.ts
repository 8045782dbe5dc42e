/**
 * The one shape of our helper containers that run a program of ours with the helper image's
 * Node.js (`config.proxyImageDigest`): the egress proxy (`egress/proxy_container.ts`) and the
 * port relay (`ports/relay_container.ts`). Their create body — the program's text on the
 * command line, `PATH` and an empty `NODE_OPTIONS`, the keeper's user, the keeper's
 * hardening with fixed limits, `runc` named — and the readback of what they share.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { ContainerInspect } from "../engine/containers.ts";
import { HARDENING_FIELDS, hostConfigMismatches, lockedDownHostConfig } from "./keeper/spec.ts";

/** `PATH` of a helper container (the image's `node` is found through it). */
const HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Fixed limits of a helper container. */
export interface HelperLimits {
  readonly cpus: number;
  readonly memoryBytes: number;
  readonly pids: number;
  readonly nofile: number;
}

/** Everything a helper container's create body depends on. */
export interface NodeProgramContainer {
  /** Exact image ID (with `node` on its `PATH`). */
  readonly imageDigest: string;
  /** The container's user (the backend's `keeperUser`). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** `node`'s arguments after the program flags: `["-e", text, …]` follows `--input-type=module-typescript`. */
  readonly args: readonly string[];
  /** Environment entries besides `PATH` and `NODE_OPTIONS`. */
  readonly env: readonly string[];
  /** Exact labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** Fixed limits. */
  readonly limits: HelperLimits;
  /** `HostConfig.NetworkMode`. */
  readonly networkMode: string;
  /** `HostConfig.Sysctls`. */
  readonly sysctls: Readonly<Record<string, string>>;
  /** Whether stdin is open (`OpenStdin`, `StdinOnce`, `AttachStdin`). */
  readonly stdin: boolean;
}

function command(spec: NodeProgramContainer): string[] {
  return ["--input-type=module-typescript", ...spec.args];
}

function environment(spec: NodeProgramContainer): string[] {
  // NODE_OPTIONS is emptied so an image's own cannot load code into the program.
  return [`PATH=${HELPER_PATH}`, "NODE_OPTIONS=", ...spec.env];
}

/** The `POST /containers/create` body of a helper container (Engine API v1.44+), without networks. */
export function nodeProgramCreateBody(spec: NodeProgramContainer): Record<string, unknown> {
  return {
    Image: spec.imageDigest,
    User: `${spec.user.uid}:${spec.user.gid}`,
    Entrypoint: ["node"],
    Cmd: command(spec),
    WorkingDir: "/",
    Env: environment(spec),
    Labels: { ...spec.labels },
    Tty: false,
    OpenStdin: spec.stdin,
    ...(spec.stdin ? { StdinOnce: true } : {}),
    AttachStdin: spec.stdin,
    AttachStdout: true,
    AttachStderr: true,
    ExposedPorts: {},
    HostConfig: {
      ...lockedDownHostConfig(spec.limits, spec.networkMode),
      Tmpfs: {},
      Mounts: [],
      Ulimits: [{ Name: "core", Soft: 0, Hard: 0 }, { Name: "nofile", Soft: spec.limits.nofile, Hard: spec.limits.nofile }],
      // runc under every profile, named (not the daemon's default, which may be runsc); the
      // readback checks it.
      Runtime: "runc",
      Sysctls: { ...spec.sysctls },
    },
  };
}

/**
 * Where a helper container's readback differs from its spec in what every helper shares:
 * each hardening field of `HostConfig` against the create body itself, no devices or
 * mounts, the image, user, command, environment, TTY, stdin and exposed ports, and (when
 * `running`) its state. The caller checks its networks.
 *
 * @param what the program, for messages ("proxy", "relay")
 * @returns one sentence per mismatch
 */
export function nodeProgramMismatches(inspect: ContainerInspect, spec: NodeProgramContainer, running: boolean, what: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  const { Config: config, HostConfig: host } = inspect;
  const sent = nodeProgramCreateBody(spec).HostConfig as Record<string, unknown>;
  problems.push(...hostConfigMismatches(host as unknown as Record<string, unknown>, sent, [...HARDENING_FIELDS, "Tmpfs", "Mounts", "Ulimits"]));
  check((host.DeviceRequests ?? []).length === 0 && (host.VolumesFrom ?? []).length === 0 && inspect.Mounts.length === 0, "devices, mounts or shared volumes are present");
  check(inspect.Image === spec.imageDigest, `image is ${inspect.Image}`);
  check(config.User === `${spec.user.uid}:${spec.user.gid}`, `user is '${config.User}'`);
  check(isDeepStrictEqual(config.Entrypoint, ["node"]) && isDeepStrictEqual(config.Cmd, command(spec)), `entrypoint/command is not the ${what} program`);
  // The image's own variables are merged in by the Engine; ours must be there exactly.
  const env = config.Env ?? [];
  check(environment(spec).every((entry) => env.includes(entry)), `environment lacks the ${what}'s configuration`);
  check(!config.Tty && config.OpenStdin === spec.stdin && Object.keys(config.ExposedPorts ?? {}).length === 0, "a TTY is attached, stdin is not as created, or ports are exposed");
  if (running) check(inspect.State.Running, `state is ${inspect.State.Status}`);
  return problems;
}
