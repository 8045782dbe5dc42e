/**
 * Engine container attach (Docker Engine API v1.44–v1.52, "Container" group):
 * `POST /containers/{id}/attach` upgraded, for reading a container's own stdout and stderr
 * (multiplexed frames: the container has no TTY) and, for a container created with
 * `OpenStdin`, writing its stdin. Attached before the container starts, it misses nothing
 * the program writes, and needs no log driver (ours use `none`).
 *
 * @module
 */
import type { DockerEngine } from "./client.ts";
import type { EngineUpgrade } from "./http/mod.ts";

/**
 * `POST /containers/{id}/attach?stream=1&stdout=1&stderr=1` with `Connection: Upgrade`. The
 * readable side carries the multiplexed frames until the container stops; the caller owns
 * the connection and must close or abort it.
 *
 * @throws {DockerEngineTransportError} on transport faults or a non-101 reply (404 for a
 *   missing container)
 */
export async function attachContainerOutput(
  engine: DockerEngine,
  id: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<EngineUpgrade> {
  return await engine.upgrade("POST", `/containers/${encodeURIComponent(id)}/attach`, {
    query: { stream: true, stdin: false, stdout: true, stderr: true, logs: false },
    ...options,
  });
}

/**
 * `POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1` with `Connection:
 * Upgrade`, for a container created with `OpenStdin: true` (and `StdinOnce: true`, so the
 * program's stdin ends when this connection half-closes or ends). The writable side is the
 * program's stdin; the readable side carries its multiplexed stdout and stderr frames. The
 * caller owns the connection and must close or abort it.
 *
 * @throws {DockerEngineTransportError} on transport faults or a non-101 reply (404 for a
 *   missing container)
 */
export async function attachContainerStdio(
  engine: DockerEngine,
  id: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<EngineUpgrade> {
  return await engine.upgrade("POST", `/containers/${encodeURIComponent(id)}/attach`, {
    query: { stream: true, stdin: true, stdout: true, stderr: true, logs: false },
    ...options,
  });
}
