// exportTarError and importTarError: how tar failures of a transfer are presented.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxConfigurationError, SandboxEngineError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";
import { TarError } from "../../../lib/tar/error.ts";
import { exportTarError, importTarError } from "../../../lib/docker/files/_tar_errors.ts";

test("exportTarError maps a PAX record that is not UTF-8 (a guest name) to unsupported, other PAX defects to engine", () => {
  const name = exportTarError(new TarError("pax_record", "Cannot read archive: PAX record is not valid UTF-8 at offset 512"), "export files", undefined);
  assert.ok(name instanceof SandboxUnsupportedError);
  assert.equal(name.code, "unsupported");
  assert.match(name.message, /^Cannot export files: the selection holds an entry this backend does not export: PAX record is not valid UTF-8/);
  const framing = exportTarError(new TarError("pax_record", "Cannot read archive: PAX record without 'key=' at offset 512"), "export files", undefined);
  assert.ok(framing instanceof SandboxEngineError);
  assert.equal(framing.code, "engine");
});

test("importTarError names the entry without the offset in our own archive", () => {
  const error = importTarError(
    new TarError("body_length", "Cannot write archive: body longer than its size 3 at offset 1024 (entry 'long.txt')", { path: "long.txt", offset: 1024 }),
    "import files",
  );
  assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration");
  assert.equal(error.message, "Cannot import files: body longer than its size 3 (entry 'long.txt')");
  const large = importTarError(new TarError("size_limit", "Cannot write archive: size 8589934592 above 8589934591 bytes at offset 0 (entry 'big')"), "import files");
  assert.ok(large instanceof SandboxUnsupportedError && large.code === "unsupported");
  assert.equal(large.message, "Cannot import files: size 8589934592 above 8589934591 bytes (entry 'big')");
});

test("exportTarError quotes a hostile guest path so no control sequence reaches the message", () => {
  const error = exportTarError(
    new TarError("path_invalid", "Cannot read archive: control character in path at offset 512 (entry 'esc/a\\x1b[31mred')", { path: "esc/a\u001b[31mred" }),
    "export files",
    "work/esc/a\u001b[31m\u0085red'",
  );
  assert.ok(error instanceof SandboxUnsupportedError);
  assert.ok(!/\p{Cc}/u.test(error.message), error.message);
  assert.match(error.message, /\(at 'work\/esc\/a\\x1b\[31m\\x85red\\''\)/);
});
