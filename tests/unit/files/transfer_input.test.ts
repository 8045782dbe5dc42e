// Validation of transfer input (options, selections, import entries) and the partial-import
// record.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  SandboxConfigurationError,
  SandboxQuotaError,
  SandboxUnsupportedError,
} from "../../../lib/sandbox/errors.ts";
import { markPartialImport, MAX_TRANSFER_FILE_BYTES, partialImportOf } from "../../../lib/sandbox/transfer.ts";
import { normalizeTransferOptions, parseExportSelection, parseImportEntry } from "../../../lib/sandbox/transfer_input.ts";

function configuration(fragment: RegExp) {
  return (error: unknown) =>
    error instanceof SandboxConfigurationError && error.code === "configuration" && fragment.test(error.message) &&
    /^Cannot /.test(error.message);
}

test("normalizeTransferOptions accepts every option and fills absent ones", () => {
  const signal = new AbortController().signal;
  const onProgress = () => {};
  assert.deepEqual(normalizeTransferOptions(undefined, "import files", false), {
    deadlineAt: undefined,
    quota: { bytes: undefined, files: undefined },
    signal: undefined,
    onProgress: undefined,
    maxInMemoryPaths: undefined,
  });
  const options = normalizeTransferOptions(
    { deadlineAt: 1, quota: { bytes: 0, files: 3 }, signal, onProgress, maxInMemoryPaths: 10 },
    "export files",
    true,
  );
  assert.equal(options.deadlineAt, 1);
  assert.deepEqual(options.quota, { bytes: 0, files: 3 });
  assert.equal(options.signal, signal);
  assert.equal(options.onProgress, onProgress);
  assert.equal(options.maxInMemoryPaths, 10);
});

test("normalizeTransferOptions names the bad field", () => {
  const cases: [unknown, boolean, RegExp][] = [
    [{ deadlineAt: -1 }, false, /options\.deadlineAt/],
    [{ deadlineAt: 1.5 }, false, /options\.deadlineAt/],
    [{ quota: { bytes: -1 } }, false, /options\.quota\.bytes/],
    [{ quota: { files: 1.5 } }, false, /options\.quota\.files/],
    [{ quota: { size: 1 } }, false, /options\.quota\.size is not a known field/],
    [{ signal: {} }, false, /options\.signal must be an AbortSignal/],
    [{ onProgress: 1 }, false, /options\.onProgress must be a function/],
    [{ maxInMemoryPaths: 10 }, false, /options\.maxInMemoryPaths is not a known field/],
    [{ maxInMemoryPaths: 0 }, true, /options\.maxInMemoryPaths/],
    ["fast", false, /options must be an object/],
  ];
  for (const [options, exporting, fragment] of cases) {
    assert.throws(() => normalizeTransferOptions(options, "import files", exporting), configuration(fragment), String(fragment));
  }
});

test("parseExportSelection accepts the three kinds and rejects non-canonical paths", () => {
  assert.deepEqual(parseExportSelection({ kind: "workspace" }, "export files"), { kind: "workspace" });
  assert.deepEqual(parseExportSelection({ kind: "file", path: "work/a.txt" }, "export files"), { kind: "file", path: "work/a.txt" });
  assert.deepEqual(parseExportSelection({ kind: "subtree", path: "work" }, "export files"), { kind: "subtree", path: "work" });
  for (const path of ["", "/work", "work/", "work//a", "work/../etc", "./work", "wo\\rk", "a\u0000b"]) {
    assert.throws(
      () => parseExportSelection({ kind: "subtree", path }, "export files"),
      configuration(/^Cannot export files: selection\.path /),
      JSON.stringify(path),
    );
  }
  assert.throws(() => parseExportSelection({ kind: "everything" }, "export files"), configuration(/selection\.kind/));
  assert.throws(() => parseExportSelection({ kind: "file" }, "export files"), configuration(/selection\.path is required/));
  assert.throws(() => parseExportSelection({ kind: "workspace", path: "x" }, "export files"), configuration(/selection\.path is not a known field/));
});

test("parseImportEntry validates paths, modes, sizes and bodies", () => {
  const body = new Blob(["abc"]).stream();
  assert.deepEqual(parseImportEntry({ path: "a/b", type: "file", mode: 0o4755, size: 3, body }, 0, "import files"), {
    path: "a/b",
    type: "file",
    target: undefined,
    mode: 0o4755,
    mtime: undefined,
    size: 3,
    body,
  });
  const bad: [unknown, RegExp][] = [
    [{ path: "../a", type: "file", mode: 0o644, size: 0 }, /entry\[0\]\.path must not contain a '\.\.' segment/],
    [{ path: "a/", type: "directory", mode: 0o755, size: 0 }, /entry\[0\]\.path must not end with \//],
    [{ path: "a", type: "fifo", mode: 0o777, size: 0 }, /entry\[0\]\.type/],
    [{ path: "a", type: "symlink", mode: 0o777, size: 0 }, /entry\[0\]\.target of symlink 'a' is required for a symlink/],
    [{ path: "a", type: "symlink", target: "/etc/passwd", mode: 0o777, size: 0 }, /entry\[0\]\.target of symlink 'a' must be relative, not the absolute path "\/etc\/passwd"; import only links that stay inside/],
    [{ path: "a/l", type: "symlink", target: "../../x", mode: 0o777, size: 0 }, /symlink 'a\/l' must not leave the imported tree \("\.\.\/\.\.\/x" from 'a\/l' climbs 1 level\(s\) above its root\)/],
    [{ path: "a/l", type: "symlink", target: "..", mode: 0o777, size: 0 }, /must name an entry below its leading '\.\.' segments/],
    [{ path: "l", type: "symlink", target: "x/../../y", mode: 0o777, size: 0 }, /must not contain a '\.\.' segment/],
    [{ path: "l", type: "symlink", target: "x//y", mode: 0o777, size: 0 }, /must not contain an empty segment/],
    [{ path: "l", type: "symlink", target: "x", mode: 0o777, size: 1, body }, /symlink 'l'\) must have size 0 and no body/],
    [{ path: "f", type: "file", target: "x", mode: 0o644, size: 0 }, /entry\[0\]\.target is only for a symlink, not a file/],
    [{ path: "a", type: "file", mode: 0o10000, size: 0 }, /entry\[0\]\.mode/],
    [{ path: "a", type: "file", mode: 0o644, mtime: -1, size: 0 }, /entry\[0\]\.mtime/],
    [{ path: "a", type: "file", mode: 0o644, size: 1 }, /entry\[0\]\.body is required/],
    [{ path: "a", type: "directory", mode: 0o755, size: 1 }, /directory 'a'\) must have size 0 and no body/],
    [{ path: "a", type: "file", mode: 0o644, size: 1, body: "x" }, /entry\[0\]\.body must be a ReadableStream/],
  ];
  for (const [entry, fragment] of bad) {
    assert.throws(() => parseImportEntry(entry, 0, "import files"), configuration(fragment), String(fragment));
  }
  assert.throws(
    () => parseImportEntry({ path: "big", type: "file", mode: 0o644, size: MAX_TRANSFER_FILE_BYTES + 1, body }, 3, "import files"),
    (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /8 GiB − 1/.test(error.message),
  );
  assert.equal(parseImportEntry({ path: "big", type: "file", mode: 0o644, size: MAX_TRANSFER_FILE_BYTES, body }, 0, "i").size, 8 * 1024 ** 3 - 1);
  for (const [path, target] of [["a/b/l", "../../c"], ["l", "x/y"], ["a/l", "../a/b"]]) {
    assert.equal(parseImportEntry({ path, type: "symlink", target, mode: 0o777, size: 0 }, 0, "import files").target, target);
  }
});

test("markPartialImport attaches a frozen record that partialImportOf reads back", () => {
  const error = new SandboxQuotaError("Cannot import files: over quota");
  const marked = markPartialImport(error, { entriesSent: 2, bytesSent: 7, lastPathSent: "b" });
  assert.equal(marked, error);
  assert.deepEqual(partialImportOf(error), { entriesSent: 2, bytesSent: 7, lastPathSent: "b" });
  assert.ok(Object.isFrozen(marked.partialImport));
  // the first record stays
  markPartialImport(error, { entriesSent: 9, bytesSent: 9, lastPathSent: undefined });
  assert.equal(partialImportOf(error)?.entriesSent, 2);
  assert.equal(partialImportOf(new Error("other")), undefined);
  assert.equal(partialImportOf("text"), undefined);
});
