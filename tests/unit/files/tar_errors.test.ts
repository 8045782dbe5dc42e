// exportTarError: how reader failures of an export are presented.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SandboxEngineError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";
import { TarError } from "../../../lib/tar/error.ts";
import { exportTarError } from "../../../lib/docker/files/_tar_errors.ts";

test("exportTarError maps a PAX record that is not UTF-8 (a guest name) to unsupported, other PAX defects to engine", () => {
  const name = exportTarError(new TarError("pax_record", "Cannot read archive: PAX record is not valid UTF-8 at offset 512"), "export files", undefined);
  assert.ok(name instanceof SandboxUnsupportedError);
  assert.equal(name.code, "unsupported");
  assert.match(name.message, /^Cannot export files: the selection holds an entry this backend does not export: PAX record is not valid UTF-8/);
  const framing = exportTarError(new TarError("pax_record", "Cannot read archive: PAX record without 'key=' at offset 512"), "export files", undefined);
  assert.ok(framing instanceof SandboxEngineError);
  assert.equal(framing.code, "engine");
});
