import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxQuotaError, SandboxStateError } from "../../../lib/sandbox/errors.ts";
import { ProcessRegistry } from "../../../lib/docker/process/registry.ts";

test("ProcessRegistry counts processes and file execs against maxConcurrentProcesses; a release frees one slot once", () => {
  const registry = new ProcessRegistry("many", 2);
  const first = registry.admit("process", "start process");
  registry.admit("file", "read file");
  assert.throws(() => registry.admit("process", "start process"), (error) =>
    error instanceof SandboxQuotaError && error.code === "quota" &&
    error.message === "Cannot start process: 2 processes already run in this sandbox (policy.maxConcurrentProcesses 2); wait for one to exit, or raise policy.maxConcurrentProcesses (up to 1024)");
  first();
  first();
  assert.equal(registry.running, 1);
  registry.admit("process", "start process");
  assert.throws(() => registry.admit("file", "write file"), SandboxQuotaError);
});

test("ProcessRegistry many: reservations are unlimited; imports run between processes and exclude process starts", () => {
  const registry = new ProcessRegistry("many", 16);
  for (let i = 0; i < 100; i++) registry.reserve();
  const release = registry.admit("process", "start process");
  assert.throws(() => registry.beginImport(), (error) =>
    error instanceof SandboxStateError &&
    error.message === "Cannot import files: 1 process runs; imports run between processes (wait for their exit receipts), or use writeFile while they run");
  release();
  const end = registry.beginImport();
  assert.throws(() => registry.beginImport(), (error) => error instanceof SandboxStateError && error.message === "Cannot import files: another import is running");
  assert.throws(() => registry.admit("process", "run process"), (error) =>
    error instanceof SandboxStateError && error.message === "Cannot run process: an import is running; start processes once importTree settled");
  registry.admit("file", "write file")();
  end();
  registry.admit("process", "start process");
});

test("ProcessRegistry one: one reservation, and imports only before it", () => {
  const registry = new ProcessRegistry("one", 16);
  registry.beginImport()();
  registry.reserve();
  assert.throws(() => registry.reserve(), (error) => error instanceof SandboxStateError && /already reserved its one process \(policy\.processes "one"\)/.test(error.message));
  assert.throws(() => registry.beginImport(), (error) =>
    error instanceof SandboxStateError && error.message === 'Cannot import files: the process was already reserved; imports come before it (policy.processes "one")');
});
