import { test } from "node:test";
import assert from "node:assert/strict";
import {
  assertSupportedDiskQuota,
  normalizePolicy,
  type SandboxPolicyInput,
  SandboxUnsupportedError,
} from "../../../lib/sandbox/mod.ts";
import { sandboxPolicyInputSchema } from "../../../lib/sandbox/policy.ts";
import { assertConfigurationError, assertDeepFrozen, assertThrowsSandbox } from "./_assert.ts";

const MIB = 1024 * 1024;
const resources = { cpus: 1, memoryBytes: 512 * MIB, pids: 256 };

/** Normalises an input the type system would refuse. */
function normalizeUntyped(input: unknown): unknown {
  return normalizePolicy(input as SandboxPolicyInput);
}

test("normalizePolicy fills every default", () => {
  const policy = normalizePolicy({ resources });
  assert.deepEqual(policy, {
    execution: { kind: "until_stopped" },
    deadlines: { startupMs: 60_000, cleanupMs: 30_000 },
    resources,
    network: "isolated",
    workspaceDiskQuota: { kind: "not_requested" },
    tmpfs: { homeBytes: 64 * MIB, tmpBytes: 64 * MIB },
    controllerLoss: "continue",
    processes: "many",
    maxConcurrentProcesses: 16,
  });
});

test("normalizePolicy takes processes \"one\" and maxConcurrentProcesses 1 … 1024, naming the field otherwise", () => {
  assert.equal(normalizePolicy({ resources, processes: "one" }).processes, "one");
  assert.equal(normalizePolicy({ resources, maxConcurrentProcesses: 1 }).maxConcurrentProcesses, 1);
  assert.equal(normalizePolicy({ resources, maxConcurrentProcesses: 1024 }).maxConcurrentProcesses, 1024);
  const mode = assertConfigurationError(() => normalizePolicy({ resources, processes: "some" as never }), "policy.processes");
  assert.equal(mode.message, 'Cannot reserve sandbox: policy.processes must be "many" or "one"');
  for (const bad of [0, 1025, 1.5, "16"]) {
    const error = assertConfigurationError(() => normalizeUntyped({ resources, maxConcurrentProcesses: bad }), "policy.maxConcurrentProcesses");
    assert.equal(error.message, "Cannot reserve sandbox: policy.maxConcurrentProcesses must be an integer from 1 to 1024 processes");
  }
});

test("normalizePolicy takes controllerLoss \"stop\" and names the field for anything else", () => {
  assert.equal(normalizePolicy({ resources, controllerLoss: "stop" }).controllerLoss, "stop");
  const error = assertConfigurationError(() => normalizePolicy({ resources, controllerLoss: "halt" as never }), "policy.controllerLoss");
  assert.equal(error.message, 'Cannot reserve sandbox: policy.controllerLoss must be "continue" or "stop"');
});

test("normalizePolicy returns a deeply frozen copy", () => {
  const input = { resources: { ...resources }, tmpfs: { homeBytes: 8 * MIB } };
  const policy = normalizePolicy(input);
  assertDeepFrozen(policy);
  input.resources.pids = 1;
  input.tmpfs.homeBytes = 4096;
  assert.equal(policy.resources.pids, 256);
  assert.equal(policy.tmpfs.homeBytes, 8 * MIB);
});

test("normalizePolicy keeps explicit values", () => {
  const policy = normalizePolicy({
    execution: { kind: "deadline", timeoutMs: 30 * 24 * 3_600_000 },
    deadlines: { startupMs: 2 ** 31 - 1, cleanupMs: 1 },
    resources: { cpus: 0.5, memoryBytes: 6 * MIB, pids: 4_194_304 },
    network: "outbound",
    workspaceDiskQuota: { kind: "required", bytes: 10 * MIB, accounting: "allocated_blocks" },
    tmpfs: { homeBytes: 4096, tmpBytes: 6 * MIB },
  });
  assert.deepEqual(policy.execution, { kind: "deadline", timeoutMs: 2_592_000_000 });
  assert.deepEqual(policy.deadlines, { startupMs: 2 ** 31 - 1, cleanupMs: 1 });
  assert.equal(policy.network, "outbound");
  assert.deepEqual(policy.workspaceDiskQuota, {
    kind: "required",
    bytes: 10 * MIB,
    accounting: "allocated_blocks",
  });
  assert.deepEqual(policy.tmpfs, { homeBytes: 4096, tmpBytes: 6 * MIB });
  assert.deepEqual(normalizePolicy(policy), policy, "normalisation is idempotent");
});

test("normalizePolicy accepts an execution deadline of any positive safe integer", () => {
  const policy = normalizePolicy({
    execution: { kind: "deadline", timeoutMs: Number.MAX_SAFE_INTEGER },
    resources,
  });
  assert.deepEqual(policy.execution, { kind: "deadline", timeoutMs: Number.MAX_SAFE_INTEGER });
});

test("normalizePolicy caps default tmpfs sizes at the memory limit", () => {
  const policy = normalizePolicy({ resources: { ...resources, memoryBytes: 8 * MIB } });
  assert.deepEqual(policy.tmpfs, { homeBytes: 8 * MIB, tmpBytes: 8 * MIB });
});

test("normalizePolicy accepts the smallest and largest CPU limits", () => {
  for (const cpus of [0.01, 0.5, 1024]) {
    assert.equal(normalizePolicy({ resources: { ...resources, cpus } }).resources.cpus, cpus);
  }
});

test("normalizePolicy rejects invalid fields naming the field path", () => {
  const cases: [unknown, string][] = [
    [undefined, "policy"],
    [null, "policy"],
    [[], "policy"],
    [{}, "policy.resources"],
    [{ resources, extra: true }, "policy.extra"],
    [{ resources: { ...resources, cpus: 0 } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: -1 } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: 1e-10 } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: 1025 } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: Number.POSITIVE_INFINITY } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: Number.NaN } }, "policy.resources.cpus"],
    [{ resources: { ...resources, cpus: "1" } }, "policy.resources.cpus"],
    [{ resources: { cpus: 1, pids: 1 } }, "policy.resources.memoryBytes"],
    [{ resources: { ...resources, memoryBytes: 6 * MIB - 1 } }, "policy.resources.memoryBytes"],
    [{ resources: { ...resources, memoryBytes: 2 ** 53 } }, "policy.resources.memoryBytes"],
    [{ resources: { ...resources, memoryBytes: 8 * MIB + 0.5 } }, "policy.resources.memoryBytes"],
    [{ resources: { ...resources, pids: 0 } }, "policy.resources.pids"],
    [{ resources: { ...resources, pids: 7 } }, "policy.resources.pids"],
    [{ resources: { ...resources, cpus: 0.009 } }, "policy.resources.cpus"],
    [{ resources: { ...resources, pids: 4_194_305 } }, "policy.resources.pids"],
    [{ resources: { ...resources, pids: 2.5 } }, "policy.resources.pids"],
    [{ resources: { ...resources, swap: 1 } }, "policy.resources.swap"],
    [{ resources, execution: "forever" }, "policy.execution"],
    [{ resources, execution: { kind: "idle" } }, "policy.execution.kind"],
    [{ resources, execution: { kind: "deadline" } }, "policy.execution.timeoutMs"],
    [{ resources, execution: { kind: "deadline", timeoutMs: 0 } }, "policy.execution.timeoutMs"],
    [
      { resources, execution: { kind: "deadline", timeoutMs: 2 ** 53 } },
      "policy.execution.timeoutMs",
    ],
    [
      { resources, execution: { kind: "until_stopped", timeoutMs: 5 } },
      "policy.execution.timeoutMs",
    ],
    [{ resources, deadlines: { startupMs: 0 } }, "policy.deadlines.startupMs"],
    [{ resources, deadlines: { startupMs: 2 ** 31 } }, "policy.deadlines.startupMs"],
    [{ resources, deadlines: { cleanupMs: 1.5 } }, "policy.deadlines.cleanupMs"],
    [{ resources, deadlines: { executionMs: 1000 } }, "policy.deadlines.executionMs"],
    [{ resources, network: "host" }, "policy.network"],
    [{ resources, workspaceDiskQuota: { kind: "soft" } }, "policy.workspaceDiskQuota.kind"],
    [
      { resources, workspaceDiskQuota: { kind: "required", bytes: 1 } },
      "policy.workspaceDiskQuota.accounting",
    ],
    [
      {
        resources,
        workspaceDiskQuota: { kind: "required", bytes: 0, accounting: "allocated_blocks" },
      },
      "policy.workspaceDiskQuota.bytes",
    ],
    [{ resources, tmpfs: { homeBytes: 4095 } }, "policy.tmpfs.homeBytes"],
    [{ resources, tmpfs: { tmpBytes: "64m" } }, "policy.tmpfs.tmpBytes"],
    [{ resources, tmpfs: { homeBytes: 512 * MIB + 1 } }, "policy.tmpfs.homeBytes"],
    [{ resources, tmpfs: { tmpBytes: 512 * MIB + 1 } }, "policy.tmpfs.tmpBytes"],
  ];
  for (const [input, field] of cases) {
    const error = assertConfigurationError(() => normalizeUntyped(input), field);
    assert.match(error.message, /^Cannot reserve sandbox: /);
  }
});

test("normalizePolicy words a range failure as what the field must be", () => {
  const error = assertConfigurationError(
    () => normalizePolicy({ resources: { ...resources, memoryBytes: 1024 } }),
    "policy.resources.memoryBytes",
  );
  assert.equal(
    error.message,
    "Cannot reserve sandbox: policy.resources.memoryBytes must be an integer from 6291456 to " +
      "9007199254740991 bytes",
  );
  assert.ok(error.cause instanceof Error, "the validator's error is the cause");
});

test("normalizePolicy reports a missing required field as required", () => {
  const error = assertConfigurationError(
    () => normalizeUntyped({ resources: { cpus: 1, memoryBytes: 8 * MIB } }),
    "policy.resources.pids",
  );
  assert.equal(error.message, "Cannot reserve sandbox: policy.resources.pids is required");
});

test("sandboxPolicyInputSchema rejects unknown fields", () => {
  assert.equal(sandboxPolicyInputSchema.safeParse({ resources, retries: 3 }).success, false);
  assert.equal(sandboxPolicyInputSchema.safeParse({ resources }).success, true);
});

test("assertSupportedDiskQuota refuses a required workspace disk quota", () => {
  const policy = normalizePolicy({
    resources,
    workspaceDiskQuota: { kind: "required", bytes: 1024 * MIB, accounting: "allocated_blocks" },
  });
  const error = assertThrowsSandbox(
    () => assertSupportedDiskQuota(policy),
    SandboxUnsupportedError,
    "unsupported",
    "policy.workspaceDiskQuota",
  );
  assert.match(error.message, /cannot enforce/);
  assert.match(error.message, /transfer quotas/);
});

test("assertSupportedDiskQuota accepts a policy without a quota request", () => {
  assert.equal(assertSupportedDiskQuota(normalizePolicy({ resources })), undefined);
  assert.equal(assertSupportedDiskQuota({}), undefined);
  const notRequested = { workspaceDiskQuota: { kind: "not_requested" } } as const;
  assert.equal(assertSupportedDiskQuota(notRequested), undefined);
});
