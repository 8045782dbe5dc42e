/**
 * Engine container attach (Docker Engine API v1.44–v1.52, "Container" group):
 * `POST /containers/{id}/attach` upgraded, for reading a container's own stdout and stderr
 * (multiplexed frames: the container has no TTY). Attached before the container starts, it
 * misses nothing the program writes, and needs no log driver (ours use `none`).
 *
 * @module
 */
import type { DockerEngine } from "./client.ts";
import type { EngineUpgrade } from "./http/mod.ts";

/**
 * `POST /containers/{id}/attach?stream=1&stdout=1&stderr=1` with `Connection: Upgrade`. The
 * readable side carries the multiplexed frames until the container stops; the caller owns
 * the connection and must close or abort it. With `stdin: true` (a container created with
 * `OpenStdin`), the writable side is the container's stdin, raw bytes; closing it half-closes
 * the connection, and a container with `StdinOnce` then sees the end of its stdin while its
 * output keeps coming.
 *
 * @throws {DockerEngineTransportError} on transport faults or a non-101 reply (404 for a
 *   missing container)
 */
export async function attachContainerOutput(
  engine: DockerEngine,
  id: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal; stdin?: boolean } = {},
): Promise<EngineUpgrade> {
  const { stdin = false, ...rest } = options;
  return await engine.upgrade("POST", `/containers/${encodeURIComponent(id)}/attach`, {
    query: { stream: true, stdin, stdout: true, stderr: true, logs: false },
    ...rest,
  });
}
