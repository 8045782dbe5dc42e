// The three rows of the sandbox benchmark. Each returns its variants' samples; our library
// is always the first variant.
import { z } from "zod";
import type { DockerEngine } from "../lib/engine/client.ts";
import { createExec, startExec } from "../lib/engine/exec.ts";
import type { DockerSandboxBackend } from "../lib/docker/backend.ts";
import type { DockerSandbox } from "../lib/docker/sandbox.ts";
import type { SandboxPolicyInput } from "../lib/sandbox/policy.ts";
import { type DockerodeClient, dockerodeExec } from "./_dockerode.ts";
import { execBody, OOM_WRAPPER, ourExec, pollStats } from "./_exec_steps.ts";
import { BENCH_LABEL, type BenchConfig, dockerCli, drain, roundRobin, type Samples, timed, type TimedVariant, USER } from "./_setup.ts";
import type { RowResult, VariantResult } from "./_stats.ts";
import { mark } from "./_trace.ts";
import { bunFloor, denoFloor, netFloor } from "./_floor.ts";

/** Name of the `node:net` floor variant of the stdout row. */
export const FLOOR_NET = "floor: bare node:net socket, no HTTP client, no demux";
/** Name of the native-socket floor variant of the stdout row (Deno and Bun only). */
export const FLOOR_NATIVE = "floor: bare native socket (Deno.connect / Bun.connect), no HTTP, no demux";
/** Name of the Deno floor that copies each read into a fresh buffer (the least a stream handing out chunks does). */
export const FLOOR_DENO_OWNED = "floor: bare Deno.connect, each read copied into a fresh buffer (owned chunks)";
/** Name of the Deno reference that reads the socket through Deno's own `conn.readable`. */
export const DENO_READABLE = "Deno's own conn.readable, default reader, no HTTP, no demux (reference)";

/**
 * The native floor of the running runtime: `Deno.connect` on Deno, `Bun.connect` on Bun, none
 * on Node; on Deno also the floor with owned chunks and Deno's own `conn.readable`.
 */
function nativeFloor(config: BenchConfig, engine: DockerEngine, keeperId: string, cmd: string[], check: (read: number) => void): TimedVariant[] {
  const global = globalThis as { Deno?: unknown; Bun?: unknown };
  const floor = global.Deno ? denoFloor : global.Bun ? bunFloor : undefined;
  if (floor === undefined) return [];
  const variants: TimedVariant[] = [{ name: FLOOR_NATIVE, run: async () => check(await floor(engine, config.socketPath, keeperId, cmd, USER)) }];
  if (global.Deno) {
    // Bun's data handler already gets a fresh buffer per receive, so its floor owns its chunks.
    variants.push(
      { name: FLOOR_DENO_OWNED, run: async () => check(await denoFloor(engine, config.socketPath, keeperId, cmd, USER, "owned")) },
      { name: DENO_READABLE, run: async () => check(await denoFloor(engine, config.socketPath, keeperId, cmd, USER, "readable")) },
    );
  }
  return variants;
}

export { USER };
/** Policy of every benchmark sandbox. */
export const POLICY: SandboxPolicyInput = { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 } };
/** A recovery port that keeps nothing (the benchmark cleans up by exact identity itself). */
export const NO_RECORD = { record: (): Promise<void> => Promise.resolve() };

/**
 * A variant that runs `cmd` with `docker exec` as {@linkcode USER} in `/workspace/work` of the
 * keeper `keeperId` (the CLI's work is in its child process, so it counts no CPU here).
 */
export function cliExecVariant(
  name: string,
  config: BenchConfig,
  keeperId: string,
  cmd: readonly string[] = ["true"],
  options: { discardStdout?: boolean } = {},
): TimedVariant {
  return {
    name,
    child: true,
    run: async () => {
      await dockerCli(config, ["exec", "-u", `${USER.uid}:${USER.gid}`, "-w", "/workspace/work", keeperId, ...cmd], options);
    },
  };
}

function collect(
  row: string,
  variants: readonly TimedVariant[],
  results: Map<string, Samples>,
  extra: Partial<Record<string, Partial<VariantResult>>> = {},
): RowResult {
  return {
    row,
    variants: variants.map((variant) => {
      const result = results.get(variant.name)!;
      return {
        variant: variant.name,
        samplesMs: result.samples,
        cpuMs: result.cpu,
        child: variant.child,
        unavailable: result.error,
        ...extra[variant.name],
      };
    }),
  };
}

/** Runs the sandbox's one process to the end (output drained, exit awaited); marks its phases for the trace. */
export async function runOneProcess(sandbox: DockerSandbox, executable: string, args: string[] = []): Promise<{ code: number; stdoutBytes: number }> {
  const started = performance.now();
  const process = await sandbox.reserveProcess({ executable, args }).start();
  const running = performance.now();
  mark("phase", "process start()", started, running);
  const [stdoutBytes] = await Promise.all([drain(process.stdout), drain(process.stderr)]);
  const ended = performance.now();
  mark("wait", "attach stream open until the output ended", running, ended);
  const exit = await process.exit;
  mark("phase", "exit receipt after the output ended", ended);
  if (exit.kind !== "exited") throw new Error(`Cannot run ${executable}: the receipt is ${exit.kind}`);
  return { code: exit.code, stdoutBytes };
}

/** Row 1 variant "ours": reserve, start, run /bin/true, destroy. */
export async function ourStartTrue(backend: DockerSandboxBackend): Promise<void> {
  const started = performance.now();
  const sandbox = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
  mark("phase", "reserve() + start()", started);
  try {
    const { code } = await runOneProcess(sandbox, "/bin/true");
    if (code !== 0) throw new Error(`/bin/true exited with ${code}`);
  } finally {
    const destroying = performance.now();
    await sandbox.destroy();
    mark("phase", "destroy()", destroying);
  }
}

const createdSchema = z.object({ Id: z.string() });
const waitSchema = z.object({ StatusCode: z.number() });

/** Row 1 variant "raw Engine API": create, start, wait, remove through `DockerEngine.request`. */
export async function rawApiStartTrue(engine: DockerEngine, image: string): Promise<void> {
  const created = await engine.request("POST", "/containers/create", {
    json: { Image: image, Cmd: ["true"], Labels: { [BENCH_LABEL]: "raw-api" }, HostConfig: { NetworkMode: "none" } },
    expect: [201],
    schema: createdSchema,
  });
  const id = created.value.Id;
  try {
    await engine.request("POST", `/containers/${id}/start`, { expect: [204] });
    const waited = await engine.request("POST", `/containers/${id}/wait`, { schema: waitSchema });
    if (waited.value.StatusCode !== 0) throw new Error(`true exited with ${waited.value.StatusCode}`);
    await engine.request("DELETE", `/containers/${id}`, { expect: [204] });
  } catch (error) {
    await engine.request("DELETE", `/containers/${id}`, { query: { force: true }, expect: [204, 404] }).catch(() => {});
    throw error;
  }
}

/** Row 1: sandbox start → /bin/true exit. */
export async function startRow(config: BenchConfig, backend: DockerSandboxBackend, engine: DockerEngine): Promise<RowResult> {
  const variants: TimedVariant[] = [
    { name: "ours: reserve+start+process /bin/true+destroy", run: () => ourStartTrue(backend) },
    {
      name: "docker run --rm --network none (CLI)",
      child: true,
      run: async () => {
        await dockerCli(config, ["run", "--rm", "--network", "none", "--label", `${BENCH_LABEL}=cli`, config.busyboxImage, "true"]);
      },
    },
    { name: "raw Engine API create/start/wait/remove (DockerEngine.request)", run: () => rawApiStartTrue(engine, config.busyboxImage) },
  ];
  const results = await roundRobin(variants, config.starts, Math.min(config.warmups, 1));
  return collect("1. start → /bin/true exit", variants, results);
}

/** Row 2: exec round trip of `true` in one running keeper (`keeper`), plus `process.start()` in fresh sandboxes. */
export async function execRow(
  config: BenchConfig,
  backend: DockerSandboxBackend,
  engine: DockerEngine,
  keeper: DockerSandbox,
  dockerode: DockerodeClient,
): Promise<RowResult> {
  const keeperId = keeper.resources.keeperId;
  const userText = `${USER.uid}:${USER.gid}`;
  const ourPolls = { polls: 0, retries: 0 };
  const dockerodePolls = { polls: 0, retries: 0 };
  const counted = async (into: { polls: number; retries: number }, fn: () => Promise<{ code: number }>) => {
    const before = { ...pollStats };
    const { code } = await fn();
    into.polls += pollStats.polls - before.polls;
    into.retries += pollStats.retries - before.retries;
    if (code !== 0) throw new Error(`true exited with ${code}`);
  };
  const variants: TimedVariant[] = [
    {
      name: "ours: createExec+startExec+demultiplex+inspectExec",
      run: () => counted(ourPolls, () => ourExec(engine, keeperId, ["true"], USER)),
    },
    {
      name: "ours, process.start() Cmd (sh OOM wrapper + true)",
      run: () => counted({ polls: 0, retries: 0 }, () => ourExec(engine, keeperId, ["/bin/sh", "-c", OOM_WRAPPER, "/bin/true"], USER)),
    },
    cliExecVariant("docker exec (CLI)", config, keeperId),
    {
      name: "dockerode exec+start(hijack)+inspect",
      run: dockerode.docker
        ? () => counted(dockerodePolls, () => dockerodeExec(dockerode.docker!, keeperId, ["true"], userText))
        : () => Promise.reject(new Error(dockerode.error)),
    },
  ];
  const results = await roundRobin(variants, config.execs, config.warmups);

  // The real thing: sandbox.reserveProcess(/bin/true).start() → exit, one fresh sandbox per
  // iteration (a sandbox runs one process); only process start → exit is timed.
  const full: TimedVariant = {
    name: "ours, real sandbox.reserveProcess().start() → exit (fresh sandbox each)",
    run: async () => {
      const sandbox = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
      try {
        const { value, timing } = await timed(() => runOneProcess(sandbox, "/bin/true"));
        if (value.code !== 0) throw new Error(`/bin/true exited with ${value.code}`);
        return timing;
      } finally {
        await sandbox.destroy();
      }
    },
  };
  const fullResults = await roundRobin([full], config.processStarts, 1);
  for (const [name, result] of fullResults) results.set(name, result);
  const note = (polls: { polls: number; retries: number }) =>
    `${polls.retries} of ${polls.polls} exit polls found the exec still running after its stream ended (each retry sleeps ≥ 10 ms)`;
  return collect("2. exec round trip (true)", [...variants, full], results, {
    [variants[0].name]: { note: note(ourPolls) },
    [variants[3].name]: dockerode.docker ? { note: note(dockerodePolls) } : {},
  });
}

/** Row 3 variant: our upgrade readable read to the end without demultiplexing; returns bytes read. */
async function ourRawAttach(engine: DockerEngine, keeperId: string, cmd: string[]): Promise<number> {
  const execId = await createExec(engine, keeperId, execBody(cmd, USER));
  const attach = await startExec(engine, execId);
  try {
    return await drain(attach.readable);
  } finally {
    await attach.close();
  }
}

/** The guest command writing `size` zero bytes to stdout. */
export function producerCommand(config: BenchConfig): string[] {
  const size = config.streamBytes;
  return config.streamProducer === "dd"
    ? ["/bin/dd", "if=/dev/zero", "bs=1048576", `count=${size / 1048576}`]
    : ["/bin/head", "-c", String(size), "/dev/zero"];
}

/** Row 3: `size` bytes of stdout from the producer command. */
export async function streamRow(
  config: BenchConfig,
  backend: DockerSandboxBackend,
  engine: DockerEngine,
  keeper: DockerSandbox,
  dockerode: DockerodeClient,
): Promise<RowResult> {
  const size = config.streamBytes;
  const keeperId = keeper.resources.keeperId;
  const cmd = producerCommand(config);
  const frameBytes = (read: number) => {
    if (read < size) throw new Error(`Cannot stream: read ${read} of at least ${size} bytes`);
  };
  const exact = (read: number) => {
    if (read !== size) throw new Error(`Cannot stream: stdout carried ${read} of ${size} bytes`);
  };
  const succeeded = (code: number) => {
    if (code !== 0) throw new Error(`${cmd.join(" ")} exited with ${code}`);
  };
  const variants: TimedVariant[] = [
    {
      name: "ours: startExec → demultiplex → stdout reader",
      run: async () => {
        const { stdoutBytes, code } = await ourExec(engine, keeperId, cmd, USER);
        exact(stdoutBytes);
        succeeded(code);
      },
    },
    {
      name: "ours, real process.start() stdout (fresh sandbox, start → exit timed)",
      run: async () => {
        const sandbox = await backend.reserve({ policy: POLICY }, NO_RECORD).start();
        try {
          const { value, timing } = await timed(() => runOneProcess(sandbox, cmd[0], cmd.slice(1)));
          exact(value.stdoutBytes);
          succeeded(value.code);
          return timing;
        } finally {
          await sandbox.destroy();
        }
      },
    },
    { name: "ours, upgrade readable without demux (frames counted raw)", run: async () => frameBytes(await ourRawAttach(engine, keeperId, cmd)) },
    {
      name: "dockerode start(hijack) → modem.demuxStream → counting Writable",
      run: dockerode.docker
        ? async () => {
          const { stdoutBytes, code } = await dockerodeExec(dockerode.docker!, keeperId, cmd, `${USER.uid}:${USER.gid}`);
          exact(stdoutBytes);
          succeeded(code);
        }
        : () => Promise.reject(new Error(dockerode.error)),
    },
    { name: FLOOR_NET, run: async () => frameBytes(await netFloor(engine, config.socketPath, keeperId, cmd, USER)) },
    ...nativeFloor(config, engine, keeperId, cmd, frameBytes),
    cliExecVariant("docker exec (CLI, Go client) stdout → /dev/null", config, keeperId, cmd, { discardStdout: true }),
  ];
  // One warm-up round (JIT, first connections) unless BENCH_WARMUPS=0.
  const results = await roundRobin(variants, config.streamRuns, Math.min(config.warmups, 1));
  const extra: Record<string, Partial<VariantResult>> = {};
  for (const variant of variants) extra[variant.name] = { bytes: size };
  return collect(`3. ${size / 1024 / 1024} MiB stdout (${cmd[0].slice(5)})`, variants, results, extra);
}
