/**
 * `agentcell run` and `agentcell shell`: one sandbox, one command (its output streamed, its
 * exit code passed through) or an interactive shell on a terminal; Ctrl-C (SIGINT) or
 * SIGTERM destroys the sandbox before the command exits. The sandbox is recorded in the
 * records directory first, so a `run` killed outright is reclaimed by `agentcell reclaim`.
 *
 * @module
 */
import process from "node:process";
import { verifySpillDirectory } from "../docker/admission/spill_directory.ts";
import { checkOpenSandboxOptions, openSandbox, type OpenSandboxOptions } from "../docker/open_sandbox.ts";
import type { DockerSandbox } from "../docker/sandbox.ts";
import type { SandboxExitReceipt } from "../sandbox/process.ts";
import {
  admittingProfileOf,
  COMMON_HELP,
  COMMON_OPTIONS,
  defaultRecordsDirectory,
  directoryOption,
  endpointOf,
  imageOf,
  namedProfileOf,
  parse,
  UsageError,
  withEndpoint,
} from "./_options.ts";

const SANDBOX_OPTIONS = {
  ...COMMON_OPTIONS,
  image: { type: "string" },
  records: { type: "string" },
  spill: { type: "string" },
  cpus: { type: "string" },
  memory: { type: "string" },
  pids: { type: "string" },
  network: { type: "string" },
} as const;

const SANDBOX_HELP = `${COMMON_HELP}
  --image ID         exact local image ID, sha256:… (default $AGENTCELL_IMAGE; agentcell prepare-image makes one)
  --records DIR      record the sandbox there first, for agentcell reclaim (default $XDG_STATE_HOME/agentcell/records)
  --spill DIR        spill directory of large exports (default a private /tmp/agentcell-open-spill-*, removed at the end)
  --cpus N           CPUs (default 1)
  --memory BYTES     memory in bytes (default 268435456)
  --pids N           processes and threads (default 128)
  --network KIND     isolated (default) or outbound`;

/** Help of `run`. */
export const RUN_HELP = `agentcell run [options] -- CMD [ARG…]

Open one sandbox, run CMD in it (in /workspace/work, as uid 65534), stream its stdout and
stderr, and exit with its exit code; the sandbox is destroyed when it ends. A CMD without a
leading / is looked up on the guest's PATH (through /bin/sh). stdin is not forwarded.
Ctrl-C (SIGINT) or SIGTERM destroys the sandbox and exits 130 or 143.

${SANDBOX_HELP}`;

/** Help of `shell`. */
export const SHELL_HELP = `agentcell shell [options]

Open one sandbox and an interactive /bin/sh on a terminal (a PTY sized like yours, resized
with it); the sandbox is destroyed when the shell exits (Ctrl-D or exit). Needs a terminal
on stdin.

${SANDBOX_HELP}`;

function numberOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number)) throw new UsageError(`Cannot read --${name}: ${JSON.stringify(value)} is not a number`);
  return number;
}

type SandboxValues = ReturnType<typeof parse<typeof SANDBOX_OPTIONS>>["values"];

/**
 * Open the sandbox the options describe. Every option is checked first, without I/O (the
 * numbers, the network, the image, and all that `openSandbox` checks before it makes
 * anything); only then is the Engine asked which profile admits it (unless one is named),
 * and the sandbox opened. A socket that cannot be connected to names --endpoint.
 */
async function open(values: SandboxValues, signal: AbortSignal): Promise<DockerSandbox> {
  const resources = {
    cpus: numberOption(values.cpus, "cpus") ?? 1,
    memoryBytes: numberOption(values.memory, "memory") ?? 256 * 1024 * 1024,
    pids: numberOption(values.pids, "pids") ?? 128,
  };
  const network = values.network ?? "isolated";
  if (network !== "isolated" && network !== "outbound") throw new UsageError(`Cannot read --network: ${JSON.stringify(network)} is neither isolated nor outbound`);
  const named = namedProfileOf(values);
  const options = {
    endpoint: endpointOf(values),
    imageDigest: imageOf(values),
    ...(named === undefined ? {} : { profile: named }),
    ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
    recordsDirectory: values.records === undefined ? defaultRecordsDirectory() : directoryOption(values.records),
    ...(values.spill === undefined ? {} : { spillDirectory: directoryOption(values.spill) }),
    policy: { resources, network },
  } satisfies OpenSandboxOptions;
  // Without a named profile, the default one stands in for this check; openSandbox checks
  // again with the profile the Engine admits.
  checkOpenSandboxOptions(options);
  // A named spill directory is checked here too (local, no Engine): a bad one is reported as
  // itself even when the Engine is down.
  if (options.spillDirectory !== undefined) await verifySpillDirectory(options.spillDirectory);
  return await withEndpoint(values, async (endpoint) =>
    await openSandbox({ ...options, profile: named ?? await admittingProfileOf(endpoint), signal })
  );
}

/** The exit code a receipt becomes: the command's, or 1 when the sandbox stopped first. */
function exitCodeOf(exit: SandboxExitReceipt): number {
  return exit.kind === "unavailable" ? 1 : exit.code;
}

/** Copy a Web stream to a Node writable (process.stdout/stderr), honouring its backpressure. */
async function pipeTo(stream: ReadableStream<Uint8Array>, sink: NodeJS.WriteStream): Promise<void> {
  for await (const chunk of stream) {
    if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once("drain", () => resolve()));
  }
}

/**
 * Run `work` with a sandbox; SIGINT/SIGTERM destroy it and make the exit code 130/143.
 * The sandbox is destroyed however `work` ends.
 */
async function withSignals(values: SandboxValues, work: (sandbox: DockerSandbox) => Promise<number>): Promise<number> {
  const abort = new AbortController();
  let signalled: number | undefined;
  let sandbox: DockerSandbox | undefined;
  const handlers = {
    SIGINT: () => void ((signalled = 130), abort.abort(new Error("SIGINT")), sandbox?.destroy().catch(() => {})),
    SIGTERM: () => void ((signalled = 143), abort.abort(new Error("SIGTERM")), sandbox?.destroy().catch(() => {})),
  };
  for (const [signal, handler] of Object.entries(handlers)) process.on(signal, handler);
  try {
    // A signal during the start aborts it (what it made is removed) and is the exit code.
    sandbox = await open(values, abort.signal).catch((error) => {
      if (signalled !== undefined) return undefined;
      throw error;
    });
    if (sandbox === undefined || signalled !== undefined) return signalled!;
    const code = await work(sandbox).catch((error) => {
      if (signalled !== undefined) return signalled;
      throw error;
    });
    return signalled ?? code;
  } finally {
    await sandbox?.destroy();
    for (const [signal, handler] of Object.entries(handlers)) process.off(signal, handler);
  }
}

/** Run `run`; resolves with the exit code. */
export async function run(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, SANDBOX_OPTIONS);
  if (positionals.length === 0) throw new UsageError("Cannot run: name the command after --, e.g. agentcell run -- echo hi");
  const [command, ...rest] = positionals;
  // A bare name is found on the guest's PATH, as a shell would.
  const [executable, argv] = command.startsWith("/") ? [command, rest] : ["/bin/sh", ["-c", 'exec "$@"', "sh", command, ...rest]];
  return await withSignals(values, async (sandbox) => {
    const process_ = await sandbox.reserveProcess({ executable, args: argv }).start();
    await process_.stdin.close();
    const [, , exit] = await Promise.all([pipeTo(process_.stdout, process.stdout), pipeTo(process_.stderr, process.stderr), process_.exit]);
    return exitCodeOf(exit);
  });
}

/** Run `shell`; resolves with the exit code. */
export async function shell(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, SANDBOX_OPTIONS);
  if (positionals.length > 0) throw new UsageError(`Cannot open a shell: unexpected argument ${JSON.stringify(positionals[0])} (use agentcell run -- CMD for a command)`);
  const stdin = process.stdin;
  if (!stdin.isTTY) throw new UsageError("Cannot open a shell: stdin is not a terminal (use agentcell run -- CMD instead)");
  const size = () => ({ columns: process.stdout.columns || 80, rows: process.stdout.rows || 24 });
  return await withSignals(values, async (sandbox) => {
    const shell = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-i"], tty: size() }).start();
    const keys = shell.stdin.getWriter();
    const onData = (chunk: Uint8Array) => void keys.write(chunk).catch(() => {});
    const onResize = () => void shell.resize(size()).catch(() => {});
    stdin.setRawMode(true);
    stdin.on("data", onData);
    process.stdout.on("resize", onResize);
    try {
      const [, exit] = await Promise.all([pipeTo(shell.stdout, process.stdout), shell.exit]);
      return exitCodeOf(exit);
    } finally {
      process.stdout.off("resize", onResize);
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
    }
  });
}
