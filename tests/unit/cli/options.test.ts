// The `agentcell` command checks its options before it talks to the Engine, and words a
// socket it cannot connect to with the flag and the variable that name it. Run as a user
// would, with this lane's runtime, against a socket that does not exist (no engine needed).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../../lib/cli/main.ts", import.meta.url));
const ABSENT = `unix:///tmp/agentcell-absent-${crypto.randomUUID()}.sock`;
const IMAGE = `sha256:${"a".repeat(64)}`;
const REACH_FIX = "ENOENT: no socket exists at that path; start the Docker daemon, or pass --endpoint unix:///path/of/docker.sock (or set AGENTCELL_ENGINE) to the socket of one that runs";

/** This runtime's executable and arguments for running the TypeScript file `script`. */
function runtimeCommand(script: string): [string, string[]] {
  const globals = globalThis as { Deno?: unknown; Bun?: unknown };
  return [process.execPath, globals.Deno !== undefined ? ["run", "-A", script] : [script]];
}

/**
 * Run `agentcell args…` with none of the command's AGENTCELL_* variables but `env`, and
 * XDG_STATE_HOME in a fresh directory (where `run` records by default); that directory's
 * entries afterwards tell whether anything was made.
 */
async function agentcell(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string; made: string[] }> {
  const state = await realpath(await mkdtemp(join(tmpdir(), "agentcell-cli-state-")));
  try {
    const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTCELL_")));
    const [command, prefix] = runtimeCommand(MAIN);
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(command, [...prefix, ...args], { encoding: "utf8", timeout: 60_000, cwd, env: { ...base, XDG_STATE_HOME: state, ...env } }, (error, stdout, stderr) => {
        const exit = (error as { code?: unknown } | null)?.code;
        resolve({ code: error ? (typeof exit === "number" ? exit : -1) : 0, stdout, stderr });
      });
    });
    return { code, stdout, stderr, made: await readdir(state) };
  } finally {
    await rm(state, { recursive: true, force: true });
  }
}

test("agentcell run with a bad option and an absent socket names the option, not the socket, and makes nothing", { timeout: 180_000 }, async () => {
  const run = (...options: string[]) => agentcell(["run", "--endpoint", ABSENT, "--image", IMAGE, ...options, "--", "true"]);
  const cases: [string[], number, string][] = [
    [["--image", "busybox:latest"], 1, "SandboxConfigurationError [configuration]: Cannot create Docker sandbox backend: --image (config.imageDigest) must be sha256: followed by 64 lowercase hexadecimal digits"],
    [["--cpus", "0"], 1, "SandboxConfigurationError [configuration]: Cannot reserve sandbox: --cpus (policy.resources.cpus) must be a number of CPUs from 0.01 to 1024"],
    [["--memory", "12"], 1, "SandboxConfigurationError [configuration]: Cannot reserve sandbox: --memory (policy.resources.memoryBytes) must be an integer from 6291456 to 9007199254740991 bytes"],
    [["--pids", "many"], 2, 'agentcell run: Cannot read --pids: "many" is not a number'],
    [["--network", "everywhere"], 2, 'agentcell run: Cannot read --network: "everywhere" is neither isolated nor outbound'],
    [["--namespace", "Not Valid"], 1, "SandboxConfigurationError [configuration]: Cannot create Docker sandbox backend: --namespace (config.namespace) must be 1-32 characters"],
    [["--spill", "/nonexistent/spill"], 1, "SandboxConfigurationError [configuration]: Cannot use spill directory /nonexistent/spill (--spill (config.spillDirectory)): it does not exist (create it, owned by this process's user)"],
    [["--profile", "linux-arm"], 1, 'SandboxConfigurationError [configuration]: Cannot create Docker sandbox backend: --profile (config.profile) must be one of "linux-x64", '],
  ];
  for (const [options, code, start] of cases) {
    const result = await run(...options);
    assert.equal(result.code, code, `${options.join(" ")}: ${result.stderr}`);
    assert.ok(result.stderr.startsWith(start), `${options.join(" ")}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /connect|ENOENT|Cannot reach/u, "the Engine was not asked");
    assert.deepEqual(result.made, [], "no records directory was made");
  }
  // The image's own variable, the same check.
  const fromEnv = await agentcell(["run", "--endpoint", ABSENT, "--", "true"], { AGENTCELL_IMAGE: "busybox" });
  assert.equal(fromEnv.code, 1);
  assert.match(fromEnv.stderr, /^SandboxConfigurationError \[configuration\]: Cannot create Docker sandbox backend: --image \(config\.imageDigest\) must be sha256: /u);
});

test("agentcell with good options and an absent socket names --endpoint, AGENTCELL_ENGINE and the fix, and exits 1", { timeout: 120_000 }, async () => {
  const line = (endpoint: string, source: string) => `SandboxEngineError [engine]: Cannot reach the Docker Engine at ${endpoint} (${source}): ${REACH_FIX}\n`;
  const run = await agentcell(["run", "--endpoint", ABSENT, "--image", IMAGE, "--", "true"]);
  assert.deepEqual({ code: run.code, stderr: run.stderr, made: run.made }, { code: 1, stderr: line(ABSENT, "given by --endpoint"), made: [] });
  // A named profile skips the profile question: the sandbox's start meets the socket instead.
  const named = await agentcell(["run", "--endpoint", ABSENT, "--image", IMAGE, "--profile", "linux-x64-cgroupfs", "--", "true"]);
  assert.deepEqual({ code: named.code, stderr: named.stderr }, { code: 1, stderr: line(ABSENT, "given by --endpoint") });
  const fromEnv = await agentcell(["run", "--image", IMAGE, "--", "true"], { AGENTCELL_ENGINE: ABSENT });
  assert.deepEqual({ code: fromEnv.code, stderr: fromEnv.stderr }, { code: 1, stderr: line(ABSENT, "from AGENTCELL_ENGINE") });
  const doctor = await agentcell(["doctor", "--endpoint", ABSENT]);
  assert.deepEqual({ code: doctor.code, stderr: doctor.stderr }, { code: 1, stderr: line(ABSENT, "given by --endpoint") });
  const prepare = await agentcell(["prepare-image", "--endpoint", ABSENT, "busybox:latest", "hello/busybox:1"]);
  assert.deepEqual({ code: prepare.code, stderr: prepare.stderr }, { code: 1, stderr: line(ABSENT, "given by --endpoint") });
});

test("agentcell takes --records, --spill and reclaim's directory relative to the working directory, and names a missing one by its absolute path", { timeout: 120_000 }, async () => {
  const directory = await realpath(await mkdtemp(join(tmpdir(), "agentcell-cli-cwd-")));
  try {
    await mkdir(join(directory, "records"), { mode: 0o700 });
    const empty = await agentcell(["reclaim", "records"], {}, directory);
    assert.equal(empty.code, 0, empty.stderr);
    assert.equal(empty.stdout, "0 reclaimed, 0 pending, 0 refused\n");
    // Relative directories pass the option checks: the run goes on to meet the absent socket.
    const run = await agentcell(["run", "--endpoint", ABSENT, "--image", IMAGE, "--records", "records", "--spill", ".", "--", "true"], {}, directory);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^SandboxEngineError \[engine\]: Cannot reach the Docker Engine at /u);
    const missing = await agentcell(["reclaim", "no/such"], {}, directory);
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr.split("\n")[0],
      `agentcell reclaim: Cannot reclaim: ${join(directory, "no/such")} is not a directory; name the records directory the program wrote (its --records, or recordsDirectory)`,
    );
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
});

test("agentcell doctor with an endpoint that is no unix:// URL names where it came from and the fix", { timeout: 120_000 }, async () => {
  const result = await agentcell(["doctor", "--endpoint", "/tmp/none.sock"]);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    'SandboxConfigurationError [configuration]: Cannot use Engine endpoint /tmp/none.sock (given by --endpoint): it must be unix:// followed by the absolute socket path ("/tmp/none.sock" is not): use "unix:///tmp/none.sock"\n',
  );
});
