/**
 * Turn an existing *local* image into one the sandbox admits: flatten it (create a
 * container, export its file system, import that as a new image) with only the fixed
 * guest environment and no declared volumes, entrypoint or command. Ordinary images carry
 * extra Env (`NODE_VERSION`, …) and volumes, which the backend rejects rather than strip.
 *
 *   node examples/prepare-image.ts unix:///run/agentcell-test-engine/docker.sock <source image> [repo:tag]
 *
 * Prints the new `sha256:` image ID to pass as `imageDigest`. Nothing is pulled: the source
 * must already be present (`docker pull` or `docker load` it first). The export streams
 * straight into the import (no temporary file). A failure prints one line saying what to do
 * and exits with status 1.
 */
import process from "node:process";
import { z } from "zod";
import { FIXED_GUEST_ENV } from "../mod.ts";
import { DockerEngine, DockerEngineError } from "../lib/engine/mod.ts";

const [endpoint, source, reference] = process.argv.slice(2);
if (!endpoint || !source) {
  console.error("usage: prepare-image.ts unix:///path/to/docker.sock <source image> [repo:tag]");
  process.exit(2);
}

async function prepare(engine: DockerEngine, source: string, reference: string | undefined): Promise<string> {
  const created = await engine.request("POST", "/containers/create", {
    action: "create the flattening container",
    json: { Image: source, Entrypoint: ["/bin/true"], Cmd: [], NetworkDisabled: true },
    schema: z.looseObject({ Id: z.string() }),
    expect: [201],
  });
  try {
    const exported = await engine.stream("GET", `/containers/${created.value.Id}/export`);
    if (exported.status !== 200) throw await engine.failure(exported, "export the file system");
    const query = new URLSearchParams({ fromSrc: "-" });
    if (reference) {
      const at = reference.lastIndexOf(":");
      query.set("repo", at > 0 ? reference.slice(0, at) : reference);
      if (at > 0) query.set("tag", reference.slice(at + 1));
    }
    for (const [name, value] of Object.entries(FIXED_GUEST_ENV)) query.append("changes", `ENV ${name}=${value}`);
    const imported = await engine.stream("POST", `/images/create?${query}`, {
      body: exported.body,
      contentType: "application/x-tar",
    });
    if (imported.status !== 200) throw await engine.failure(imported, "import the flattened image");
    const progress = await new Response(imported.body).text();
    const id = /"status":"(sha256:[0-9a-f]{64})"/u.exec(progress)?.[1];
    if (!id) throw new Error(`Cannot import the flattened image: no image ID in ${progress.slice(0, 500)}`);
    return id;
  } finally {
    await engine.request("DELETE", `/containers/${created.value.Id}`, { query: { force: true }, expect: [204, 404] });
  }
}

try {
  console.log(await prepare(new DockerEngine(endpoint), source, reference));
} catch (error) {
  if (error instanceof DockerEngineError && error.code === "not_found") {
    console.error(
      `Cannot prepare an image from ${source}: it is not a local image of this engine (${error.engineMessage ?? "not found"}); ` +
        `pull or load it first (docker -H ${endpoint} pull ${source}), or list local images with docker -H ${endpoint} image ls`,
    );
  } else {
    const code = (error as { code?: unknown }).code;
    console.error(`${(error as Error).name}${code ? ` [${code}]` : ""}: ${(error as Error).message}`);
  }
  process.exitCode = 1;
}
