// verifySpillDirectory: the on-disk checks of config.spillDirectory, each with its exact
// message (the field, the reason and the fix).
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { verifySpillDirectory } from "../../../lib/docker/admission/spill_directory.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

async function withBase(fn: (base: string) => Promise<void>): Promise<void> {
  const base = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-check-")));
  try {
    await fn(base);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

async function refuses(path: string, reason: string): Promise<void> {
  await assert.rejects(verifySpillDirectory(path), (error) => {
    assert.ok(error instanceof SandboxConfigurationError, String(error));
    assert.equal(error.code, "configuration");
    assert.equal(error.message, `Cannot use spill directory ${path} (config.spillDirectory): ${reason}`);
    return true;
  });
}

test("verifySpillDirectory names the canonical path of a spill directory given through a symbolic link", async () => {
  await withBase(async (base) => {
    const real = join(base, "spill");
    await mkdir(real);
    await symlink(real, join(base, "link"));
    await refuses(join(base, "link"), `it is not canonical on disk (resolves to ${real}): set config.spillDirectory to ${real}`);
    // A link on the way (a parent) is the same defect.
    await symlink(base, join(base, "parent-link"));
    await refuses(join(base, "parent-link", "spill"), `it is not canonical on disk (resolves to ${real}): set config.spillDirectory to ${real}`);
    await verifySpillDirectory(real);
  });
});

test("verifySpillDirectory refuses a missing path, a file and a link to a file", async () => {
  await withBase(async (base) => {
    await writeFile(join(base, "file"), "x");
    await symlink(join(base, "file"), join(base, "file-link"));
    await symlink(join(base, "nowhere"), join(base, "dangling"));
    await refuses(join(base, "missing"), "it does not exist (create it, owned by this process's user)");
    await refuses(join(base, "dangling"), "it does not exist (create it, owned by this process's user)");
    await refuses(join(base, "file"), "it is not a directory: set config.spillDirectory to a directory");
    await refuses(join(base, "file-link"), "it is not a directory: set config.spillDirectory to a directory");
  });
});
