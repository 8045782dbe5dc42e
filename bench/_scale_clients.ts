// The clients of the scale benchmark, each able to start a sandbox-like container, run
// commands in it and remove it: our library (with and without the guards, with the
// allowlist), dockerode and the docker CLI. The comparison containers get what a sandbox's
// keeper has that costs the Engine work: the same resource limits, no network, a volume at
// /workspace (anonymous, removed with the container) and a writable /workspace/work for the
// sandbox user; they lack the hardening checks (read-back of the applied spec, guards) that
// are what our library is for.
import type Dockerode from "dockerode";
import type { DockerSandboxBackend } from "../lib/docker/backend.ts";
import { lockedDownHostConfig } from "../lib/docker/keeper/spec.ts";
import { socketBufferSysctls } from "../lib/docker/keeper/socket_buffers.ts";
import type { SandboxPolicyInput } from "../lib/sandbox/policy.ts";
import { dockerodeExec } from "./_dockerode.ts";
import { NO_RECORD, USER } from "./_rows.ts";
import { type BenchConfig, dockerCli } from "./_setup.ts";

/** Label value of the comparison containers (`dev.agentcell.bench=scale`). */
export const SCALE_LABEL_VALUE = "scale";

/** One started sandbox (or comparison container). */
export interface ScaleHandle {
  /** Runs `cmd` as the sandbox user in /workspace/work to its end; resolves with its exit code and stdout bytes. */
  run(cmd: readonly string[]): Promise<{ code: number; stdoutBytes: number }>;
  /** Removes it and everything it made. */
  destroy(): Promise<void>;
}

/** A client of the benchmark. */
export interface ScaleClient {
  /** Its name in the table. */
  readonly name: string;
  /** Its work runs in child processes (the docker CLI): their CPU time counts as children's. */
  readonly child?: boolean;
  /** Containers per sandbox (2 with the allowlist's proxy). */
  readonly containers: number;
  /** Starts one sandbox. */
  start(): Promise<ScaleHandle>;
}

/** Our library: `reserve().start()`, `run()`, `destroy()` under `policy`. */
export function ourClient(name: string, backend: DockerSandboxBackend, policy: SandboxPolicyInput, containers = 1): ScaleClient {
  return {
    name,
    containers,
    start: async () => {
      const sandbox = await backend.reserve({ policy }, NO_RECORD).start();
      return {
        run: async ([executable, ...args]) => {
          const result = await sandbox.run(executable, args);
          return { code: result.exit.code, stdoutBytes: result.stdout.byteLength };
        },
        destroy: () => sandbox.destroy(),
      };
    },
  };
}

const KEEPER_CMD = ["sleep", "2147483647"];

const TMPFS = "rw,nosuid,nodev,size=67108864,nr_inodes=8192";

/**
 * The create body of a comparison container: the sandbox's limits, no network, /workspace a
 * volume. `hardened`: also the keeper's `HostConfig` (lib/docker/keeper/spec.ts: read-only
 * root, no capabilities, private IPC and cgroup namespaces, its three tmpfs mounts with the
 * default policy's sizes, ulimits, socket-buffer sysctls), to tell the Engine's cost of that
 * spec from our client's.
 */
function comparisonBody(config: BenchConfig, resources: { cpus: number; memoryBytes: number; pids: number }, hardened: boolean): Dockerode.ContainerCreateOptions {
  const mounts = { Mounts: [{ Type: "volume" as const, Source: "", Target: "/workspace" }] }; // "": an anonymous volume
  const work = { "/workspace/work": "mode=1777" };
  return {
    Image: config.busyboxImage,
    Cmd: KEEPER_CMD,
    Labels: { "dev.agentcell.bench": SCALE_LABEL_VALUE },
    HostConfig: hardened
      ? {
        ...lockedDownHostConfig(resources, "none"),
        ...mounts,
        Tmpfs: { ...work, "/home/sandbox": `${TMPFS},mode=0700`, "/tmp": `${TMPFS},mode=1777`, "/dev/shm": `${TMPFS},noexec,mode=1777` },
        ShmSize: 67108864,
        Ulimits: [["core", 0], ["nofile", 4096], ["nproc", 65536], ["msgqueue", 819200], ["memlock", 65536], ["sigpending", 1024]]
          .map(([Name, value]) => ({ Name: String(Name), Soft: Number(value), Hard: Number(value) })),
        Sysctls: socketBufferSysctls("runc"),
      }
      : { NetworkMode: "none", NanoCpus: resources.cpus * 1e9, Memory: resources.memoryBytes, PidsLimit: resources.pids, ...mounts, Tmpfs: work },
  };
}

/** dockerode: `createContainer` + `start`, the exec of `bench/_dockerode.ts`, `remove({ force, v })`; `hardened`: with the keeper's `HostConfig`. */
export function dockerodeClient(
  docker: Dockerode,
  config: BenchConfig,
  resources: { cpus: number; memoryBytes: number; pids: number },
  hardened = false,
): ScaleClient {
  const user = `${USER.uid}:${USER.gid}`;
  return {
    name: hardened ? "dockerode, keeper's HostConfig" : "dockerode",
    containers: 1,
    start: async () => {
      const container = await docker.createContainer(comparisonBody(config, resources, hardened));
      try {
        await container.start();
      } catch (error) {
        await container.remove({ force: true, v: true }).catch(() => {});
        throw error;
      }
      return {
        run: (cmd) => dockerodeExec(docker, container.id, [...cmd], user),
        destroy: async () => void await container.remove({ force: true, v: true }),
      };
    },
  };
}

/** The docker CLI: `docker run -d`, `docker exec -u -w`, `docker rm -f -v`, one child process each. */
export function cliClient(config: BenchConfig, resources: { cpus: number; memoryBytes: number; pids: number }): ScaleClient {
  return {
    name: "docker CLI",
    child: true,
    containers: 1,
    start: async () => {
      const id = (await dockerCli(config, [
        "run",
        "-d",
        "--network",
        "none",
        "--cpus",
        String(resources.cpus),
        "--memory",
        String(resources.memoryBytes),
        "--pids-limit",
        String(resources.pids),
        "--mount",
        "type=volume,dst=/workspace",
        "--tmpfs",
        "/workspace/work:mode=1777",
        "--label",
        `dev.agentcell.bench=${SCALE_LABEL_VALUE}`,
        config.busyboxImage,
        ...KEEPER_CMD,
      ])).trim();
      return {
        run: async (cmd) => {
          // The CLI's stdout is collected as text: the producer writes zero bytes, one
          // UTF-16 unit each, so its length is the byte count.
          const out = await dockerCli(config, ["exec", "-u", `${USER.uid}:${USER.gid}`, "-w", "/workspace/work", id, ...cmd]);
          return { code: 0, stdoutBytes: out.length };
        },
        destroy: async () => void await dockerCli(config, ["rm", "-f", "-v", id]),
      };
    },
  };
}
