import assert from "node:assert/strict";
import { test } from "node:test";
import { confineWorkingDirectory, WORK_PATH, WORKING_DIRECTORY_ROOTS } from "../../../lib/docker/guest_paths.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

test("confineWorkingDirectory defaults to the work directory and keeps a path at or below a root", () => {
  assert.equal(confineWorkingDirectory(undefined, "run process", "options.cwd"), WORK_PATH);
  assert.deepEqual(WORKING_DIRECTORY_ROOTS, ["/workspace", "/home/sandbox", "/tmp"]);
  for (const cwd of ["/workspace", "/workspace/work/a b", "/home/sandbox", "/home/sandbox/.cache", "/tmp", "/tmp/x/y"]) {
    assert.equal(confineWorkingDirectory(cwd, "run process", "options.cwd"), cwd);
  }
});

test("confineWorkingDirectory refuses a directory outside every root, naming the field and the fix", () => {
  for (const cwd of ["/etc", "/workspaces", "/tmpfoo", "/home", "/home/sandboxed", "/proc/1/cwd"]) {
    assert.throws(() => confineWorkingDirectory(cwd, "run process", "options.cwd"), (error) => {
      assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration");
      assert.equal(
        error.message,
        `Cannot run process: options.cwd ${JSON.stringify(cwd)} must be /workspace, /home/sandbox, /tmp or a directory below one of them; ` +
          'start the process in the workspace (e.g. "/workspace/work") and let it change directory itself if it must',
      );
      return true;
    });
  }
});
