// Dataset images of the real-engine lane: the two that `npm test` prepares
// (scripts/guest-images.sh dataset, dataset-foreign; see its header for their files), and a
// disposable one a test imports and removes itself.
import assert from "node:assert/strict";
import process from "node:process";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { writeTar } from "../../lib/tar/write_tar.ts";

/**
 * The prepared dataset images' `sha256:` IDs. Throws (never skips) when the lane did not
 * prepare them.
 */
export function datasetImages(): { readonly reference: string; readonly foreign: string } {
  const reference = process.env.AGENTCELL_TEST_DATASET_IMAGE ?? "";
  const foreign = process.env.AGENTCELL_TEST_FOREIGN_DATASET_IMAGE ?? "";
  if (!reference || !foreign) {
    throw new Error(
      "Cannot run the dataset tests: set AGENTCELL_TEST_DATASET_IMAGE and AGENTCELL_TEST_FOREIGN_DATASET_IMAGE (scripts/guest-images.sh dataset and dataset-foreign; npm test does)",
    );
  }
  return { reference, foreign };
}

/** Whether the image with this exact ID exists on `engine`. */
export async function imageExists(engine: DockerEngine, id: string): Promise<boolean> {
  const response = await engine.fetch(`/images/${id}/json`);
  await response.body?.cancel();
  assert.ok(response.status === 200 || response.status === 404, `GET /images/${id}/json answered ${response.status}`);
  return response.status === 200;
}

/**
 * Import a disposable, untagged dataset image holding `files` (path → text; directories
 * made as needed) with `POST /images/create?fromSrc=-`, as `docker import` does.
 *
 * @returns its `sha256:` ID; remove it with {@linkcode removeImage}
 */
export async function importDatasetImage(engine: DockerEngine, files: Readonly<Record<string, string>>): Promise<string> {
  const encoder = new TextEncoder();
  const directories = new Set<string>();
  for (const path of Object.keys(files)) {
    const parts = path.split("/").slice(0, -1);
    parts.forEach((_, index) => directories.add(parts.slice(0, index + 1).join("/")));
  }
  const entries = [
    ...[...directories].sort().map((path) => ({ path, type: "directory" as const, mode: 0o755, mtime: 0, size: 0 })),
    ...Object.entries(files).map(([path, text]) => {
      const bytes = encoder.encode(text);
      return { path, type: "file" as const, mode: 0o644, mtime: 0, size: bytes.byteLength, body: new Blob([bytes]).stream() };
    }),
  ];
  const archive = new Uint8Array(await new Response(writeTar(entries)).arrayBuffer());
  const response = await engine.fetch("/images/create?fromSrc=-", { method: "POST", headers: { "Content-Type": "application/x-tar" }, body: archive });
  const progress = await response.text();
  assert.equal(response.status, 200, progress);
  // The import's progress stream ends with {"status":"sha256:…"}.
  const id = /"status":"(sha256:[0-9a-f]{64})"/u.exec(progress)?.[1];
  assert.ok(id, `no image ID in the import's reply: ${progress}`);
  return id;
}

/** `DELETE /images/{id}` of an image this test made; asserts it is gone afterwards. */
export async function removeImage(engine: DockerEngine, id: string): Promise<void> {
  const response = await engine.fetch(`/images/${id}`, { method: "DELETE" });
  const said = await response.text();
  assert.ok(response.status === 200 || response.status === 404, `DELETE /images/${id} answered ${response.status}: ${said}`);
  assert.equal(await imageExists(engine, id), false);
}
