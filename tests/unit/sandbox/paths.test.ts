import { test } from "node:test";
import assert from "node:assert/strict";
import { parseSandboxRelativePath } from "../../../lib/sandbox/mod.ts";
import { assertConfigurationError } from "./_assert.ts";

test("parseSandboxRelativePath returns canonical paths unchanged", () => {
  for (
    const path of [
      "a",
      "artifacts/report.json",
      ".hidden/..dots/...",
      "a b/ü/日本語/🙂",
      [...Array(20).fill("x".repeat(203)), "x".repeat(16)].join("/"), // 4096 bytes
      [...Array(16).fill("é".repeat(127)), "é".repeat(8)].join("/"), // 4096 bytes of UTF-8
      "n".repeat(255), // the longest name
      "name with spaces and 'quotes'",
    ]
  ) {
    assert.equal(parseSandboxRelativePath(path), path);
  }
});

test("parseSandboxRelativePath rejects non-canonical paths naming the field and the defect", () => {
  const cases: [unknown, string][] = [
    ["", "must not be empty"],
    ["/etc/passwd", "must be relative"],
    ["dir/", "must not end with /"],
    ["a//b", "empty segment"],
    [".", "'.' segment"],
    ["a/./b", "'.' segment"],
    ["..", "'..' segment"],
    ["a/../b", "'..' segment"],
    ["a/..", "'..' segment"],
    ["a\0b", "NUL"],
    ["a\\b", "backslash"],
    ["a\nb", "control characters"],
    ["a\tb", "control characters"],
    ["a\u007fb", "control characters"],
    ["a\u0085b", "control characters"],
    ["a\ud800b", "well-formed Unicode"],
    ["x".repeat(4097), "at most 4096 bytes"],
    ["é".repeat(2049), "at most 4096 bytes"],
    ["🙂".repeat(1025), "at most 4096 bytes"],
    ["n".repeat(256), "segment longer than 255 bytes"],
    [`a/${"é".repeat(128)}/b`, "segment longer than 255 bytes"],
    [42, "must be a string"],
    [undefined, "must be a string"],
  ];
  for (const [text, defect] of cases) {
    const error = assertConfigurationError(
      () => parseSandboxRelativePath(text as string),
      "path",
    );
    assert.match(error.message, /^Cannot parse sandbox path: path /);
    assert.ok(error.message.includes(defect), `${JSON.stringify(text)}: ${error.message}`);
  }
});

test("parseSandboxRelativePath names the given field", () => {
  const error = assertConfigurationError(
    () => parseSandboxRelativePath("../escape", "selection.path"),
    "selection.path",
  );
  assert.equal(
    error.message,
    "Cannot parse sandbox path: selection.path must not contain a '..' segment",
  );
});
