/**
 * The port relay container of a sandbox: its create body (hardened like the egress proxy,
 * joined to the keeper's network namespace) and the readback that checks the Engine applied
 * every part of it.
 *
 * It runs the backend's helper image (`config.proxyImageDigest`, Node.js ≥ 23.6) as the
 * keeper's user with `node --input-type=module-typescript -e <relay_program.ts> agentcell-relay`
 * — the program's text on the command line, read back byte for byte, as the proxy's
 * (`egress/proxy_container.ts`) — with `NetworkMode: container:<keeper ID>`: its only network
 * is the sandbox's own namespace, where `127.0.0.1` is the guest's loopback. It has no
 * network of its own, no published or exposed port, no mount, a read-only root, no
 * capabilities; stdin is open (`OpenStdin`, `StdinOnce`: it ends when the controller's
 * attach ends). Its `HostConfig.Sysctls` is empty: the namespace is the keeper's, whose
 * socket buffer caps already apply (the Engine refuses `net.*` sysctls in a joined namespace).
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { ContainerInspect } from "../../engine/containers.ts";
import { HARDENING_FIELDS, hostConfigMismatches, lockedDownHostConfig } from "../keeper/spec.ts";
import { containerNetworks } from "../egress/proxy_container.ts";
import { RELAY_ARGUMENT } from "./relay_program.ts";

/**
 * The relay container's fixed limits: 1 CPU (it carries every byte of the sandbox's
 * connections), 192 MiB of memory (Node's ~50 MiB plus one 1 MiB window per connection
 * towards the guest, at most 64), 64 PIDs and 4,096 open files (`RLIMIT_NOFILE`, soft = hard,
 * with `core` 0).
 */
export const RELAY_LIMITS: { readonly cpus: number; readonly memoryBytes: number; readonly pids: number; readonly nofile: number } = Object.freeze({
  cpus: 1,
  memoryBytes: 192 * 1024 * 1024,
  pids: 64,
  nofile: 4096,
});

/** `PATH` of the relay container (the image's `node` is found through it). */
const RELAY_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Everything the relay's create body depends on. */
export interface RelaySpec {
  /** Exact image ID (with `node` on its `PATH`). */
  readonly imageDigest: string;
  /** The container's user (the backend's `keeperUser`). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** The program's text. */
  readonly program: string;
  /** The keeper's full container ID (the namespace joined). */
  readonly keeperId: string;
  /** Exact labels. */
  readonly labels: Readonly<Record<string, string>>;
}

function command(spec: RelaySpec): string[] {
  return ["--input-type=module-typescript", "-e", spec.program, RELAY_ARGUMENT];
}

function environment(): string[] {
  // NODE_OPTIONS is emptied so an image's own cannot load code into the relay.
  return [`PATH=${RELAY_PATH}`, "NODE_OPTIONS="];
}

/** The `POST /containers/create` body of the relay (Engine API v1.44+). */
export function relayCreateBody(spec: RelaySpec): Record<string, unknown> {
  return {
    Image: spec.imageDigest,
    User: `${spec.user.uid}:${spec.user.gid}`,
    Entrypoint: ["node"],
    Cmd: command(spec),
    WorkingDir: "/",
    Env: environment(),
    Labels: { ...spec.labels },
    Tty: false,
    OpenStdin: true,
    StdinOnce: true,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    ExposedPorts: {},
    HostConfig: {
      ...lockedDownHostConfig(RELAY_LIMITS, `container:${spec.keeperId}`),
      Tmpfs: {},
      Mounts: [],
      Ulimits: [{ Name: "core", Soft: 0, Hard: 0 }, { Name: "nofile", Soft: RELAY_LIMITS.nofile, Hard: RELAY_LIMITS.nofile }],
      // runc, named: the relay joins the keeper's kernel network namespace (see docs/ports.md
      // for gVisor, where the guest's sockets are not in that namespace).
      Runtime: "runc",
      Sysctls: {},
    },
  };
}

/**
 * Compare the relay's `GET /containers/{id}/json` with its spec: every hardening field of
 * `HostConfig` against the create body itself, then the image, user, command, environment,
 * stdin and that it is on no network of its own.
 *
 * @param running whether it must be running (after start) or merely created
 * @returns one sentence per mismatch (empty when everything matches)
 */
export function relayMismatches(inspect: ContainerInspect, spec: RelaySpec, running: boolean): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  const { Config: config, HostConfig: host } = inspect;
  const sent = relayCreateBody(spec).HostConfig as Record<string, unknown>;
  problems.push(...hostConfigMismatches(host as unknown as Record<string, unknown>, sent, [...HARDENING_FIELDS, "Tmpfs", "Mounts", "Ulimits"]));
  check((host.DeviceRequests ?? []).length === 0 && (host.VolumesFrom ?? []).length === 0 && inspect.Mounts.length === 0, "devices, mounts or shared volumes are present");
  check(inspect.Image === spec.imageDigest, `image is ${inspect.Image}`);
  check(config.User === `${spec.user.uid}:${spec.user.gid}`, `user is '${config.User}'`);
  check(isDeepStrictEqual(config.Entrypoint, ["node"]) && isDeepStrictEqual(config.Cmd, command(spec)), "entrypoint/command is not the relay program");
  const env = config.Env ?? [];
  check(environment().every((entry) => env.includes(entry)), "environment lacks the relay's PATH and empty NODE_OPTIONS");
  check(!config.Tty && config.OpenStdin === true && Object.keys(config.ExposedPorts ?? {}).length === 0, "a TTY is attached, stdin is closed, or ports are exposed");
  const networks = Object.keys(containerNetworks(inspect));
  check(networks.length === 0, `networks are ${JSON.stringify(networks)}`);
  if (running) check(inspect.State.Running, `state is ${inspect.State.Status}`);
  return problems;
}

/**
 * Throw when the readback differs from the spec.
 *
 * @throws {SandboxUnsupportedError} listing every mismatch
 */
export function verifyRelay(inspect: ContainerInspect, spec: RelaySpec, running: boolean): void {
  const problems = relayMismatches(inspect, spec, running);
  if (problems.length > 0) {
    throw new SandboxUnsupportedError(`Cannot connect: the port relay container reads back differently: ${problems.join("; ")}`);
  }
}
