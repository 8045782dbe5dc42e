/**
 * Turn an existing *local* image into one the sandbox admits, with `prepareImage()` (the same
 * as `agentcell prepare-image SOURCE TAG`): flatten it with only the fixed guest environment
 * and no declared volumes, entrypoint or command. Ordinary images carry extra Env
 * (`NODE_VERSION`, …) and volumes, which the backend rejects rather than strip.
 *
 *   node examples/prepare-image.ts unix:///run/agentcell-test-engine/docker.sock <source image> [repo:tag]
 *
 * Prints the new `sha256:` image ID to pass as `imageDigest`. Nothing is pulled: the source
 * must already be present (`docker pull` or `docker load` it first). A failure prints one
 * line saying what to do and exits with status 1.
 */
import process from "node:process";
import { prepareImage, SandboxError } from "../mod.ts";

const [endpoint, source, reference] = process.argv.slice(2);
if (!endpoint || !source) {
  console.error("usage: prepare-image.ts unix:///path/to/docker.sock <source image> [repo:tag]");
  process.exit(2);
}

try {
  console.log(await prepareImage(endpoint, source, reference));
} catch (error) {
  // An absent source is a configuration mistake whose message says what to do.
  if (error instanceof SandboxError && error.code === "configuration") console.error(error.message);
  else console.error(`${(error as Error).name}${error instanceof SandboxError ? ` [${error.code}]` : ""}: ${(error as Error).message}`);
  process.exitCode = 1;
}
