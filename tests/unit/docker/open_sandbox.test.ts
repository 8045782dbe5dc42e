import assert from "node:assert/strict";
import { mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { OPEN_SPILL_PARENT, OPEN_SPILL_PREFIX, openSandbox, type OpenSandboxOptions } from "../../../lib/docker/open_sandbox.ts";
import { SandboxConfigurationError, SandboxEngineError } from "../../../lib/sandbox/errors.ts";

const valid: OpenSandboxOptions = {
  endpoint: "unix:///nonexistent/agentcell-open-test.sock",
  imageDigest: `sha256:${"a".repeat(64)}`,
};

/** The `agentcell-open-spill-*` directories in /tmp now. */
async function spills(): Promise<string[]> {
  return (await readdir(OPEN_SPILL_PARENT)).filter((name) => name.startsWith(OPEN_SPILL_PREFIX)).sort();
}

async function rejectsWith(
  options: unknown,
  message: string | RegExp,
  type: typeof SandboxConfigurationError | typeof SandboxEngineError = SandboxConfigurationError,
  code = "configuration",
): Promise<void> {
  const before = await spills();
  await assert.rejects(
    openSandbox(options as OpenSandboxOptions),
    (error) => {
      assert.ok(error instanceof type, String(error));
      assert.equal(error.code, code);
      if (typeof message === "string") assert.equal(error.message, message);
      else assert.match(error.message, message);
      return true;
    },
  );
  assert.deepEqual(await spills(), before, "no spill directory is left");
}

test("openSandbox refuses a missing endpoint or image, naming the field, and makes nothing", async () => {
  await rejectsWith(undefined, "Cannot open sandbox: options must be an object with endpoint and imageDigest");
  await rejectsWith({ imageDigest: valid.imageDigest }, /^Cannot create Docker sandbox backend: config\.endpoint /);
  await rejectsWith({ endpoint: valid.endpoint }, "Cannot create Docker sandbox backend: config.imageDigest is required");
  await rejectsWith({ ...valid, imageDigest: "busybox:latest" }, /^Cannot create Docker sandbox backend: config\.imageDigest must be sha256: /);
});

test("openSandbox refuses its own invalid options, naming options.<field>", async () => {
  await rejectsWith({ ...valid, recordsDirectory: 7 }, "Cannot open sandbox: options.recordsDirectory must be a string: the absolute path of a records directory");
  await rejectsWith({ ...valid, signal: "soon" }, "Cannot open sandbox: options.signal must be an AbortSignal");
  await rejectsWith({ ...valid, policy: "small" }, "Cannot open sandbox: options.policy must be an object (a sandbox policy; resources may be left out)");
  await rejectsWith(
    { ...valid, userRange: { first: 20000, count: 10 } },
    "Cannot open sandbox: options.userRange is not an option of openSandbox (one sandbox needs no range): use createDockerSandboxBackend",
  );
});

test("openSandbox checks the policy and the defaults' overrides before making anything", async () => {
  await rejectsWith({ ...valid, policy: { resources: { cpus: 1, memoryBytes: 1024, pids: 64 } } }, /^Cannot reserve sandbox: policy\.resources\.memoryBytes /);
  await rejectsWith({ ...valid, policy: { network: "everywhere" } }, /^Cannot reserve sandbox: policy\.network /);
  await rejectsWith({ ...valid, namespace: "Not Valid" }, /^Cannot create Docker sandbox backend: config\.namespace must be 1-32 characters/);
  await rejectsWith({ ...valid, user: { uid: 0, gid: 0 } }, /^Cannot create Docker sandbox backend: config\.user\.uid must be a non-root ID/);
  await rejectsWith({ ...valid, spillDirectory: "relative/spill" }, /^Cannot create Docker sandbox backend: config\.spillDirectory /);
});

test("openSandbox with an invalid policy creates no records directory", async () => {
  const parent = await realpath(await mkdtemp(join(tmpdir(), "agentcell-open-records-")));
  try {
    const recordsDirectory = join(parent, "records");
    await rejectsWith({ ...valid, recordsDirectory, policy: { resources: { cpus: 0, memoryBytes: 1 << 28, pids: 64 } } }, /^Cannot reserve sandbox: policy\.resources\.cpus /);
    assert.deepEqual(await readdir(parent), []);
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
});

test("openSandbox removes the spill directory it made when the start fails", async () => {
  // A valid configuration whose socket does not exist: the start fails after the spill
  // directory was made, naming config.endpoint.
  await rejectsWith(valid, /^Cannot start sandbox: connect to \/nonexistent\/agentcell-open-test\.sock: .*check config\.endpoint/, SandboxEngineError, "engine");
});
