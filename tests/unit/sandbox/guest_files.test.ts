import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_READ_FILE_MAX_BYTES, normalizeReadFile, normalizeWriteFile } from "../../../lib/sandbox/guest_files.ts";
import { assertConfigurationError } from "./_assert.ts";

test("normalizeWriteFile takes bytes (copied), text or a Blob and fills the mode", async () => {
  const bytes = new Uint8Array([1, 2, 3]);
  const request = normalizeWriteFile("work/a.bin", bytes, undefined);
  bytes[0] = 9;
  assert.deepEqual(new Uint8Array(await request.data.arrayBuffer()), new Uint8Array([1, 2, 3]));
  assert.equal(request.mode, 0o644);
  assert.equal(await normalizeWriteFile("work/t", "grüße", { mode: 0o7777 }).data.text(), "grüße");
  assert.equal(normalizeWriteFile("work/t", new Blob(["x"]), { mode: 0 }).mode, 0);
});

test("normalizeWriteFile and normalizeReadFile name what they refuse", () => {
  const cases: [() => unknown, string, string][] = [
    [() => normalizeWriteFile("/abs", "x", undefined), "path", "write file"],
    [() => normalizeWriteFile("a/../b", "x", undefined), "path", "write file"],
    [() => normalizeWriteFile("a", 5, undefined), "data", "write file"],
    [() => normalizeWriteFile("a", "x", { mode: 0o10000 }), "options.mode", "write file"],
    [() => normalizeWriteFile("a", "x", { mode: -1 }), "options.mode", "write file"],
    [() => normalizeWriteFile("a", "x", { deadlineAt: -1 }), "options.deadlineAt", "write file"],
    [() => normalizeWriteFile("a", "x", { owner: 0 } as never), "options.owner", "write file"],
    [() => normalizeReadFile("", undefined), "path", "read file"],
    [() => normalizeReadFile("a", { maxBytes: -1 }), "options.maxBytes", "read file"],
    [() => normalizeReadFile("a", { maxBytes: 2 ** 30 + 1 }), "options.maxBytes", "read file"],
    [() => normalizeReadFile("a", { quota: { bytes: 1 } } as never), "options.quota", "read file"],
  ];
  for (const [run, field, action] of cases) {
    const error = assertConfigurationError(run, field);
    assert.match(error.message, new RegExp(`^Cannot ${action}: `));
  }
});

test("normalizeReadFile fills maxBytes (16 MiB) and keeps 0 … 1 GiB", () => {
  assert.equal(normalizeReadFile("work/a", undefined).maxBytes, DEFAULT_READ_FILE_MAX_BYTES);
  assert.equal(normalizeReadFile("work/a", { maxBytes: 0 }).maxBytes, 0);
  assert.equal(normalizeReadFile("work/a", { maxBytes: 2 ** 30 }).maxBytes, 2 ** 30);
});
