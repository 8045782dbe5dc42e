import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxPool, type DockerSandboxPoolOptions, MAX_POOL_SIZE } from "../../../lib/docker/pool.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";
import { backendOn, policy, withSpill } from "./_start_engine.ts";

const port = { record: () => Promise.resolve() };
/** A backend the pool must never reach: invalid options fail before any reservation. */
const unreachable = {
  reserve(): never {
    throw new Error("the pool reserved a sandbox despite invalid options");
  },
};

test("createDockerSandboxPool refuses invalid options before reserving anything", () => {
  const range = `must be an integer from 1 to ${MAX_POOL_SIZE}`;
  const cases: [unknown, string][] = [
    [{ request: { policy }, recovery: port }, "Cannot create sandbox pool: options.size is required"],
    [{ request: { policy }, size: 0, recovery: port }, `Cannot create sandbox pool: options.size ${range}`],
    [{ request: { policy }, size: 1.5, recovery: port }, `Cannot create sandbox pool: options.size ${range}`],
    [{ request: { policy }, size: "2", recovery: port }, `Cannot create sandbox pool: options.size ${range}`],
    [
      { request: { policy }, size: MAX_POOL_SIZE + 1, recovery: port },
      `Cannot create sandbox pool: options.size ${range}; a larger pool holds more idle keepers than any host should reserve`,
    ],
    [{ request: { policy }, size: 1 }, "Cannot create sandbox pool: options.recovery must have a record(record) function"],
    [{ request: { policy }, size: 1, recovery: {} }, "Cannot create sandbox pool: options.recovery must have a record(record) function"],
    [{ size: 1, recovery: port }, "Cannot create sandbox pool: options.request is required"],
    [{ request: { policy }, size: 1, recovery: port, secrets: "sk-x" }, "Cannot create sandbox pool: options.secrets must be an object of secret name → value, or a function returning one"],
    [undefined, "Cannot create sandbox pool: options is required"],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => createDockerSandboxPool(unreachable, options as DockerSandboxPoolOptions),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === message,
      message,
    );
  }
});

test("backend.pool refuses an invalid request before starting anything", async () => {
  await withSpill((spillDirectory) => {
    // The endpoint does not exist: a pool that started anything would fail later, not here.
    const backend = backendOn("/nonexistent/agentcell-pool-test.sock", spillDirectory);
    assert.throws(
      () => backend.pool({ request: { policy: { ...policy, resources: { ...policy.resources, cpus: -1 } } }, size: 1, recovery: port }),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /^Cannot reserve sandbox: policy\.resources\.cpus /.test(error.message),
    );
    return Promise.resolve();
  });
});

test("createDockerSandboxPool starts every member with the pool's secrets", async () => {
  const seen: unknown[] = [];
  const secrets = () => ({ model: "sk-pool" });
  const backend = {
    reserve() {
      return {
        start(options?: { secrets?: unknown; signal?: AbortSignal }) {
          seen.push(options?.secrets);
          // Never arrives: the pool is closed below, which aborts the start.
          return new Promise<never>((_, reject) => options?.signal?.addEventListener("abort", () => reject(options.signal!.reason)));
        },
      };
    },
  };
  const pool = createDockerSandboxPool(backend, { request: { policy }, size: 2, recovery: port, secrets });
  await pool.close().catch(() => {});
  assert.ok(seen.length >= 1 && seen.every((given) => given === secrets), `starts saw ${seen.length} secrets`);
});
