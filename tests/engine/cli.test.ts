// The `agentcell` command, run as a user would with this lane's runtime: doctor names the
// profile that admits the test engine, run passes the exit code through, SIGINT destroys,
// reclaim after a SIGKILLed run leaves nothing, and shell is a terminal (rendered by
// @xterm/headless).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { reclaim } from "../../lib/cli/_reclaim.ts";
import { busyboxImage, endpoint, engineTest, eventually, nodeImage, runtimeCommand } from "./_engine.ts";
import { assertNamespaceEmpty, resourcesOf } from "./_namespace.ts";
import { Screen } from "./_screen.ts";

const MAIN = fileURLToPath(new URL("../../lib/cli/main.ts", import.meta.url));

interface Finished {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function agentcell(args: readonly string[]): Promise<Finished> {
  const [command, base] = runtimeCommand(MAIN);
  return new Promise((resolve) => {
    execFile(command, [...base, ...args], { encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ code: error ? (typeof code === "number" ? code : -1) : 0, stdout, stderr });
    });
  });
}

/**
 * A records directory and a namespace of the test's own, and a spill directory beside the
 * records (a killed run cannot remove a private one); reclaimed and removed after.
 */
async function withRecords(fn: (records: string, namespace: string) => Promise<void>): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "agentcell-cli-")));
  const records = join(root, "records");
  try {
    await mkdir(join(root, "spill"));
    await fn(records, `cli-${crypto.randomUUID().slice(0, 8)}`);
  } finally {
    await reclaim([records], () => {}).catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
}

const sandboxArgs = (records: string, namespace: string) => [
  "--spill",
  join(dirname(records), "spill"),
  "--endpoint",
  endpoint!,
  "--image",
  busyboxImage,
  "--records",
  records,
  "--namespace",
  namespace,
];

engineTest("agentcell doctor names linux-x64-cgroupfs as admitting the test engine", async () => {
  const result = await agentcell(["doctor", "--endpoint", endpoint!]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^ {2}linux-x64-cgroupfs +admits this daemon$/mu);
  assert.match(result.stdout, /^engine +\S+, API 1\.\d+ \(negotiated 1\.\d+\)/mu);
  assert.match(result.stdout, /^cgroup +v[12], driver cgroupfs$/mu);
  assert.match(result.stdout, /^ipv4 forwarding +(on|off)/mu);
  assert.match(result.stdout, /^use --profile linux-x64-cgroupfs/mu);
});

engineTest("agentcell run -- sh -c 'exit 3' streams the output and exits 3, leaving nothing", async (engine) => {
  await withRecords(async (records, namespace) => {
    const result = await agentcell(["run", ...sandboxArgs(records, namespace), "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert.equal(result.code, 3, result.stderr);
    assert.equal(result.stdout, "out\n");
    assert.equal(result.stderr, "err\n");
    await assertNamespaceEmpty(engine, namespace);
    assert.deepEqual(await readdir(records), []);
  });
}, { timeout: 180_000 });

engineTest("agentcell with a usage mistake prints it and the command's help, and exits 2", async () => {
  const result = await agentcell(["run", "--endpoint", endpoint!]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /^agentcell run: Cannot run: name the command after --, e.g\. agentcell run -- echo hi\n\nagentcell run \[options\] -- CMD/u);
  const bad = await agentcell(["run", "--endpoint", endpoint!, "--image", "busybox:latest", "--profile", "linux-x64-cgroupfs", "--", "true"]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^SandboxConfigurationError \[configuration\]: Cannot create Docker sandbox backend: --image \(config\.imageDigest\) must be sha256: /u);
  // A records directory that is not there is a mistake, not "nothing to reclaim" (and is not made).
  const missing = join(tmpdir(), `agentcell-no-records-${crypto.randomUUID()}`);
  const reclaimed = await agentcell(["reclaim", missing]);
  assert.equal(reclaimed.code, 2, reclaimed.stdout + reclaimed.stderr);
  assert.match(reclaimed.stderr, new RegExp(`^agentcell reclaim: Cannot reclaim: ${missing} is not a directory; name the records directory`, "u"));
  assert.equal(await stat(missing).then(() => true, () => false), false, "the missing directory was not made");
});

/** Start `agentcell run … -- sh -c 'echo ready; exec sleep 1000000'` and wait for "ready". */
async function startLongRun(records: string, namespace: string) {
  const [command, base] = runtimeCommand(MAIN);
  const child = spawn(command, [...base, "run", ...sandboxArgs(records, namespace), "--", "sh", "-c", "echo ready; exec sleep 1000000"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await eventually("the command to print ready", () => stdout.includes("ready\n") ? true : undefined, { deadlineMs: 120_000 }).catch((error) => {
    child.kill("SIGKILL");
    throw new Error(`${(error as Error).message}\n${stdout}\n${stderr}`);
  });
  return { child, exited, output: () => `${stdout}\n${stderr}` };
}

engineTest("agentcell run interrupted by SIGINT while its sandbox starts exits 130 and leaves nothing, no record either", async (engine) => {
  await withRecords(async (records, namespace) => {
    const [command, base] = runtimeCommand(MAIN);
    const child = spawn(command, [...base, "run", ...sandboxArgs(records, namespace), "--", "true"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // The record is written before anything is created: the start is under way.
    await eventually("the run's record", async () => (await readdir(records).catch(() => [])).some((name) => name.endsWith(".json")) ? true : undefined);
    process.kill(child.pid!, "SIGINT");
    assert.equal(await exited, 130, stderr);
    await assertNamespaceEmpty(engine, namespace);
    assert.deepEqual(await readdir(records), []);
  });
}, { timeout: 180_000 });

engineTest("agentcell run destroys its sandbox on SIGINT and exits 130", async (engine) => {
  await withRecords(async (records, namespace) => {
    const { child, exited, output } = await startLongRun(records, namespace);
    assert.notDeepEqual(await resourcesOf(engine, namespace), []);
    // Sent as Ctrl-C would be, from outside.
    process.kill(child.pid!, "SIGINT");
    assert.equal(await exited, 130, output());
    assert.deepEqual(await resourcesOf(engine, namespace), [], "destroyed before it exited");
    assert.deepEqual(await readdir(records), []);
  });
}, { timeout: 180_000 });

engineTest("agentcell reclaim after a SIGKILLed run leaves 0 resources", async (engine) => {
  await withRecords(async (records, namespace) => {
    const { child, exited } = await startLongRun(records, namespace);
    process.kill(child.pid!, "SIGKILL");
    await exited;
    assert.notDeepEqual(await resourcesOf(engine, namespace), [], "the killed run left its sandbox");
    assert.equal((await readdir(records)).filter((name) => name.endsWith(".json")).length, 1);
    const result = await agentcell(["reclaim", records]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^reclaimed [0-9a-f]{32}: removed (\w+, )*keeper(, \w+)*\n1 reclaimed, 0 pending, 0 refused\n$/u);
    assert.deepEqual(await resourcesOf(engine, namespace), []);
    assert.deepEqual(await readdir(records), []);
  });
}, { timeout: 180_000 });

engineTest("agentcell reclaim takes the record of a SIGKILLed program whose backend set config.proxyImageDigest (the port relay's image)", async (engine) => {
  await withRecords(async (records, namespace) => {
    // A program of its own (tests/engine/_proxy_image_child.ts): a backend with the helper
    // image, one sandbox, then SIGKILL.
    const [command, base] = runtimeCommand(fileURLToPath(new URL("./_proxy_image_child.ts", import.meta.url)));
    const args = [records, namespace, join(dirname(records), "spill"), endpoint!, busyboxImage, nodeImage];
    await new Promise<void>((resolve) => execFile(command, [...base, ...args], () => resolve()));
    assert.notDeepEqual(await resourcesOf(engine, namespace), [], "the killed program left its sandbox");
    const result = await agentcell(["reclaim", records]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /^reclaimed [0-9a-f]{32}: removed (\w+, )*keeper(, \w+)*\n1 reclaimed, 0 pending, 0 refused\n$/u);
    assert.deepEqual(await resourcesOf(engine, namespace), []);
  });
}, { timeout: 180_000 });

engineTest("agentcell shell gives an interactive shell on a terminal and passes its exit code through", async (engine) => {
  await withRecords(async (records, namespace) => {
    const [command, base] = runtimeCommand(MAIN);
    const line = [command, ...base, "shell", ...sandboxArgs(records, namespace)].map((part) => `'${part}'`).join(" ");
    // script(1) (util-linux) gives the command a terminal on stdin and stdout, as a person's would be.
    const child = spawn("script", ["-qfec", line, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, COLUMNS: "80", LINES: "24" } });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const screen = new Screen(80, 24).feed(Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
    try {
      await screen.waitFor("the shell's prompt", (lines) => lines.some((text) => text.endsWith("$")), 120_000);
      child.stdin.write("echo $((6*7))\r");
      await screen.waitFor("the answer 42", (lines) => lines.includes("42"));
      child.stdin.write("exit 5\r");
      assert.equal(await exited, 5, (await screen.lines()).join("\n"));
    } finally {
      child.kill("SIGKILL");
    }
    await assertNamespaceEmpty(engine, namespace);
    assert.deepEqual(await readdir(records), []);
  });
}, { timeout: 180_000 });
