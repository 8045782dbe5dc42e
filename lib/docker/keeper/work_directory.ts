/**
 * Create `/workspace/work` owned by the sandbox user. The volume root is `root:root 0755`
 * and the keeper runs without capabilities, so the guest cannot make it itself; the Engine
 * extracts a one-directory archive (ownership preserved) through
 * `PUT /containers/{id}/archive` before the keeper starts.
 *
 * @module
 */
import type { DockerEngine } from "../../engine/client.ts";
import { putContainerArchive } from "../../engine/container_archive.ts";
import { writeTar } from "../../tar/write_tar.ts";
import { WORKSPACE_PATH } from "../guest_paths.ts";

/** Mode of `/workspace/work`. */
export const WORK_DIRECTORY_MODE = 0o755;

/**
 * @throws {DockerEngineError} when the Engine refuses the archive
 * @throws {DockerEngineTransportError} on transport faults
 */
export async function createWorkDirectory(
  engine: DockerEngine,
  containerId: string,
  user: { uid: number; gid: number },
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const archive = writeTar([{
    path: "work",
    type: "directory",
    mode: WORK_DIRECTORY_MODE,
    mtime: Math.floor(Date.now() / 1000),
    uid: user.uid,
    gid: user.gid,
    size: 0,
  }]);
  const body = new Uint8Array(await new Response(archive).arrayBuffer());
  await putContainerArchive(engine, containerId, WORKSPACE_PATH, body, options);
}
