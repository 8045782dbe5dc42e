// prepareImage refuses a reference that is not an image reference before it asks the Engine
// anything (the endpoint here has no Engine: an Engine call would fail differently).
import assert from "node:assert/strict";
import { test } from "node:test";
import { prepareImage } from "../../../lib/docker/prepare_image.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

test("prepareImage refuses a bad reference at once, naming it and the form", async () => {
  for (const reference of ["NOT_A_VALID:TAG:x", "Upper/case:1", "a:" + "t".repeat(129), "trailing-:1", ""]) {
    await assert.rejects(prepareImage("unix:///nonexistent/agentcell.sock", "busybox:latest", reference), (error) =>
      error instanceof SandboxConfigurationError &&
      error.message === `Cannot prepare an image from busybox:latest: reference ${JSON.stringify(reference).slice(0, 200)} is not an image reference; give repo[:tag] with a lowercase repo, e.g. agentcell/guest:1`);
  }
});
