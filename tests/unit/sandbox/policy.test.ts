import { test } from "node:test";
import assert from "node:assert/strict";
import { assertSupportedDiskQuota } from "../../../lib/docker/admission/disk_quota.ts";
import {
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
    deadlines: { startupMs: 60_000, cleanupMs: 30_000, guestFileMs: 60_000 },
    resources,
    network: "isolated",
    workspaceDiskQuota: { kind: "not_requested" },
    tmpfs: { homeBytes: 64 * MIB, tmpBytes: 64 * MIB, shmBytes: 8 * MIB, inodes: 8192 },
    ulimits: { nofile: 4096, nproc: 65_536, msgqueue: 819_200, memlock: 65_536, sigpending: 1024 },
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
    deadlines: { startupMs: 2 ** 31 - 1, cleanupMs: 1, guestFileMs: 1 },
    resources: { cpus: 0.5, memoryBytes: 6 * MIB, pids: 4_194_304 },
    network: "outbound",
    workspaceDiskQuota: { kind: "required", bytes: 10 * MIB, accounting: "allocated_blocks" },
    tmpfs: { homeBytes: 4096, tmpBytes: 2 * MIB, shmBytes: MIB - 4096, inodes: 16 },
    ulimits: { nofile: 16, nproc: 8, msgqueue: 0, memlock: 6 * MIB, sigpending: 0 },
  });
  assert.deepEqual(policy.execution, { kind: "deadline", timeoutMs: 2_592_000_000 });
  assert.deepEqual(policy.deadlines, { startupMs: 2 ** 31 - 1, cleanupMs: 1, guestFileMs: 1 });
  assert.equal(policy.network, "outbound");
  assert.deepEqual(policy.workspaceDiskQuota, {
    kind: "required",
    bytes: 10 * MIB,
    accounting: "allocated_blocks",
  });
  assert.deepEqual(policy.tmpfs, { homeBytes: 4096, tmpBytes: 2 * MIB, shmBytes: MIB - 4096, inodes: 16 });
  assert.deepEqual(policy.ulimits, { nofile: 16, nproc: 8, msgqueue: 0, memlock: 6 * MIB, sigpending: 0 });
  assert.deepEqual(normalizePolicy(policy), policy, "normalisation is idempotent");
});

test("normalizePolicy accepts an execution deadline of any positive safe integer", () => {
  const policy = normalizePolicy({
    execution: { kind: "deadline", timeoutMs: Number.MAX_SAFE_INTEGER },
    resources,
  });
  assert.deepEqual(policy.execution, { kind: "deadline", timeoutMs: Number.MAX_SAFE_INTEGER });
});

test("normalizePolicy scales default tmpfs sizes down with memory: an eighth each for home and tmp, a sixteenth for shm", () => {
  const policy = normalizePolicy({ resources: { ...resources, memoryBytes: 8 * MIB } });
  assert.deepEqual(policy.tmpfs, { homeBytes: MIB, tmpBytes: MIB, shmBytes: MIB / 2, inodes: 8192 });
  const odd = normalizePolicy({ resources: { ...resources, memoryBytes: 6 * MIB + 12_345 } });
  assert.deepEqual(odd.tmpfs, { homeBytes: 786_432, tmpBytes: 786_432, shmBytes: 393_216, inodes: 8192 }, "rounded down to whole pages");
});

test("normalizePolicy rejects tmpfs sizes that leave less than half of memory to the processes, giving the numbers and the fix", () => {
  const error = assertConfigurationError(
    () => normalizePolicy({ resources: { ...resources, memoryBytes: 96 * MIB }, tmpfs: { homeBytes: 32 * MIB, tmpBytes: 16 * MIB } }),
    "policy.tmpfs.homeBytes",
  );
  assert.equal(
    error.message,
    "Cannot reserve sandbox: policy.tmpfs.homeBytes (33554432) + tmpBytes (16777216) + shmBytes (6291456) = 56623104 bytes " +
      "leave too little of policy.resources.memoryBytes (100663296 bytes) to the processes: tmpfs pages count against the " +
      "memory limit, so the three must total at most half of it (50331648 bytes); lower the tmpfs sizes or raise memoryBytes",
  );
  const exact = normalizePolicy({ resources: { ...resources, memoryBytes: 96 * MIB }, tmpfs: { homeBytes: 32 * MIB, tmpBytes: 10 * MIB, shmBytes: 6 * MIB } });
  assert.equal(exact.tmpfs.homeBytes + exact.tmpfs.tmpBytes + exact.tmpfs.shmBytes, 48 * MIB, "exactly half is accepted");
});

test("normalizePolicy bounds every ulimit, naming the field, its range and unit", () => {
  const cases: [unknown, string, string][] = [
    [{ nofile: 1_048_577 }, "policy.ulimits.nofile", "must be an integer from 16 to 1048576 files"],
    [{ nofile: 15 }, "policy.ulimits.nofile", "must be an integer from 16 to 1048576 files"],
    [{ nproc: 4_194_305 }, "policy.ulimits.nproc", "must be an integer from 8 to 4194304 processes"],
    [{ nproc: 7.5 }, "policy.ulimits.nproc", "must be an integer from 8 to 4194304 processes"],
    [{ sigpending: 1_048_577 }, "policy.ulimits.sigpending", "must be an integer from 0 to 1048576 signals"],
    [{ msgqueue: -1 }, "policy.ulimits.msgqueue", "must be an integer from 0 bytes to policy.resources.memoryBytes"],
    [{ memlock: "64k" }, "policy.ulimits.memlock", "must be an integer from 0 bytes to policy.resources.memoryBytes"],
    [{ core: 0 }, "policy.ulimits.core", "is not a known field"],
  ];
  for (const [ulimits, field, sentence] of cases) {
    const error = assertConfigurationError(() => normalizeUntyped({ resources, ulimits }), field);
    assert.equal(error.message, `Cannot reserve sandbox: ${field} ${sentence}`);
  }
  for (const field of ["msgqueue", "memlock"]) {
    const error = assertConfigurationError(() => normalizeUntyped({ resources, ulimits: { [field]: 512 * MIB + 1 } }), `policy.ulimits.${field}`);
    assert.equal(
      error.message,
      `Cannot reserve sandbox: policy.ulimits.${field} (536870913 bytes) must be at most policy.resources.memoryBytes (536870912 bytes); lower it or raise memoryBytes`,
    );
  }
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
    [{ resources, deadlines: { guestFileMs: 0 } }, "policy.deadlines.guestFileMs"],
    [{ resources, deadlines: { guestFileMs: 2 ** 31 } }, "policy.deadlines.guestFileMs"],
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
    [{ resources, tmpfs: { shmBytes: 512 * MIB + 1 } }, "policy.tmpfs.shmBytes"],
    [{ resources, tmpfs: { shmBytes: 4095 } }, "policy.tmpfs.shmBytes"],
    [{ resources, tmpfs: { inodes: 15 } }, "policy.tmpfs.inodes"],
    [{ resources, tmpfs: { inodes: 1_048_577 } }, "policy.tmpfs.inodes"],
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
