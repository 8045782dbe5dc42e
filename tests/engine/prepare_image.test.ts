// prepareImage (and `agentcell prepare-image`) against the real engine: a source without
// what every sandbox runs (/bin/sh, sleep on the guest PATH) is refused before any image is
// made, naming what is missing and the fix, and leaves nothing behind; a busybox source
// becomes an image with only the fixed guest environment.
import assert from "node:assert/strict";
import { prepareImage } from "../../lib/docker/prepare_image.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { importImage, inspectImage } from "../../lib/engine/images.ts";
import { writeTar } from "../../lib/tar/write_tar.ts";
import { SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { FIXED_GUEST_ENV } from "../../lib/sandbox/process.ts";
import { busyboxImage, endpoint, engineTest } from "./_engine.ts";
import { removeImage } from "./_datasets.ts";

const GUEST_PATH = FIXED_GUEST_ENV.PATH;
const FIX = "the sandbox needs both: prepare an image that has a POSIX shell at /bin/sh and sleep on PATH " +
  "(busybox, alpine and debian:*-slim have both; or build FROM one of them with your files), and nothing was made";
const NO_SHELL = "no executable /bin/sh (the keeper, PID 1 of every sandbox, and the wrapper every process starts through are /bin/sh scripts)";
const NO_SLEEP = `no executable sleep in the guest PATH ${GUEST_PATH} (the keeper's loop and the guest-side deadline guards run it)`;

/**
 * Import an image from scratch holding only `files` (path → [mode, text]), with
 * `POST /images/create?fromSrc=-` as scripts/guest-images.sh does; remove it after `fn`.
 */
async function withScratchImage(engine: DockerEngine, files: Record<string, [number, string]>, fn: (id: string) => Promise<void>): Promise<void> {
  const encoder = new TextEncoder();
  const directories = [...new Set(Object.keys(files).flatMap((path) => path.split("/").slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join("/"))))].sort();
  const archive = writeTar([
    ...directories.map((path) => ({ path, type: "directory" as const, mode: 0o755, mtime: 0, size: 0 })),
    ...Object.entries(files).map(([path, [mode, text]]) => {
      const bytes = encoder.encode(text);
      return { path, type: "file" as const, mode, mtime: 0, size: bytes.byteLength, body: new Blob([bytes]).stream() };
    }),
  ]);
  const id = await importImage(engine, archive);
  try {
    await fn(id);
  } finally {
    await removeImage(engine, id);
  }
}

/** Every image ID and every container named agentcell-prepare-* on the engine. */
async function engineState(engine: DockerEngine): Promise<{ images: string[]; containers: string[] }> {
  const images = await (await engine.fetch("/images/json?all=true")).json() as { Id: string }[];
  const filters = encodeURIComponent(JSON.stringify({ name: ["agentcell-prepare-"] }));
  const containers = await (await engine.fetch(`/containers/json?all=true&filters=${filters}`)).json() as { Id: string }[];
  return { images: images.map((image) => image.Id).sort(), containers: containers.map((container) => container.Id).sort() };
}

/** prepareImage of `source` is refused with exactly `message`, and the engine is as it was. */
async function refused(engine: DockerEngine, source: string, message: string): Promise<void> {
  const before = await engineState(engine);
  const outcome = await prepareImage(endpoint!, source, "agentcell-test/refused:1").then((id) => ({ id }), (error: unknown) => ({ error }));
  if ("id" in outcome) {
    await removeImage(engine, outcome.id); // a failing test still removes what it made
    assert.fail(`prepareImage made ${outcome.id} from ${source}`);
  }
  const { error } = outcome;
  assert.ok(error instanceof SandboxUnsupportedError, String(error));
  assert.equal(error.code, "unsupported");
  assert.equal(error.message, message);
  // Other tests share the engine: only what this call could have made is compared.
  const after = await engineState(engine);
  assert.deepEqual(after.containers.filter((id) => !before.containers.includes(id)), [], "the flattening container was removed");
  assert.deepEqual(after.images.filter((id) => !before.images.includes(id)), [], "no image was made");
  assert.equal(await inspectImage(engine, "agentcell-test/refused:1"), undefined, "nothing was tagged");
}

engineTest("prepareImage refuses a source without /bin/sh and sleep (one static file), naming both and the fix, and makes nothing", async (engine) => {
  await withScratchImage(engine, { "hello.txt": [0o644, "hello\n"] }, async (id) => {
    await refused(engine, id, `Cannot prepare an image from ${id}: it has ${NO_SHELL}, and ${NO_SLEEP}; ${FIX}`);
  });
});

engineTest("prepareImage refuses a source whose /bin/sh is not executable, or that has no sleep on the guest PATH", async (engine) => {
  await withScratchImage(engine, { "bin/sh": [0o644, "not a shell\n"], "bin/sleep": [0o755, "#!/bin/sh\n"] }, async (id) => {
    await refused(engine, id, `Cannot prepare an image from ${id}: it has ${NO_SHELL}; ${FIX}`);
  });
  // A sleep outside the guest PATH does not count.
  await withScratchImage(engine, { "bin/sh": [0o755, "#!/bin/sh\n"], "opt/bin/sleep": [0o755, "#!/bin/sh\n"] }, async (id) => {
    await refused(engine, id, `Cannot prepare an image from ${id}: it has ${NO_SLEEP}; ${FIX}`);
  });
});

engineTest("prepareImage flattens a busybox source (/bin/sh a symlink to busybox) into an image with only the fixed guest environment", async (engine) => {
  const id = await prepareImage(endpoint!, busyboxImage);
  try {
    assert.match(id, /^sha256:[0-9a-f]{64}$/u);
    assert.notEqual(id, busyboxImage);
    const image = await inspectImage(engine, id);
    assert.deepEqual([...image!.Config!.Env!].sort(), Object.entries(FIXED_GUEST_ENV).map(([name, value]) => `${name}=${value}`).sort());
  } finally {
    await removeImage(engine, id);
  }
}, { timeout: 180_000 });
