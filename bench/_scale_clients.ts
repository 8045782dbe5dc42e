// The clients of the scale benchmark, each able to start a sandbox-like container, run
// commands in it and remove it: our library (with and without the guards, with the
// allowlist), dockerode and the docker CLI. The comparison containers get what a sandbox's
// keeper has that costs the Engine work: the same resource limits, no network, a volume at
// /workspace (anonymous, removed with the container) and a writable /workspace/work for the
// sandbox user; they lack the hardening checks (read-back of the applied spec, guards) that
// are what our library is for.
import type Dockerode from "dockerode";
import type { DockerSandboxBackend } from "../lib/docker/backend.ts";
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

/** The create body of a comparison container: the sandbox's limits, no network, /workspace a volume. */
function comparisonBody(config: BenchConfig, resources: { cpus: number; memoryBytes: number; pids: number }): Dockerode.ContainerCreateOptions {
  return {
    Image: config.busyboxImage,
    Cmd: KEEPER_CMD,
    Labels: { "dev.agentcell.bench": SCALE_LABEL_VALUE },
    HostConfig: {
      NetworkMode: "none",
      NanoCpus: resources.cpus * 1e9,
      Memory: resources.memoryBytes,
      PidsLimit: resources.pids,
      Mounts: [{ Type: "volume", Source: "", Target: "/workspace" }], // "": an anonymous volume
      Tmpfs: { "/workspace/work": "mode=1777" },
    },
  };
}

/** dockerode: `createContainer` + `start`, the exec of `bench/_dockerode.ts`, `remove({ force, v })`. */
export function dockerodeClient(docker: Dockerode, config: BenchConfig, resources: { cpus: number; memoryBytes: number; pids: number }): ScaleClient {
  const user = `${USER.uid}:${USER.gid}`;
  return {
    name: "dockerode",
    containers: 1,
    start: async () => {
      const container = await docker.createContainer(comparisonBody(config, resources));
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
