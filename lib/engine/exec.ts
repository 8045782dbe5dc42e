/**
 * Engine exec endpoints (Docker Engine API v1.44–v1.52, "Exec" group): create, start with
 * an upgraded attach, inspect.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import type { EngineCallOptions } from "./containers.ts";
import type { EngineUpgrade } from "./http/mod.ts";

/** Body of `POST /containers/{id}/exec` this project sends. */
export interface ExecCreateBody {
  /** Argument vector; `Cmd[0]` is the executable. */
  readonly Cmd: readonly string[];
  /** `NAME=value` entries. */
  readonly Env: readonly string[];
  /** `uid:gid`. */
  readonly User: string;
  /** Working directory in the guest. */
  readonly WorkingDir: string;
  /**
   * Attach stdin: the process reads what the upgraded connection sends until its
   * half-close. Without it the guest process's stdin is `/dev/null`.
   *
   * @default {true}
   */
  readonly AttachStdin?: boolean;
}

/** The reply of `POST /containers/{id}/exec` (built once: a zod schema is costly to build). */
const execCreatedSchema = z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u) });

/** The body of every `POST /exec/{id}/start` (attached, no TTY), encoded once. */
const EXEC_START_BODY = new TextEncoder().encode(JSON.stringify({ Detach: false, Tty: false }));

/** Schema of `GET /exec/{id}/json` (fields this project reads). */
export const execInspectSchema = z.looseObject({
  ID: z.string(),
  Running: z.boolean(),
  ExitCode: z.number().int().nullable(),
  Pid: z.number().optional(),
  ContainerID: z.string(),
});

/** The validated `GET /exec/{id}/json` reply. */
export type ExecInspect = z.infer<typeof execInspectSchema>;

/**
 * `POST /containers/{id}/exec`: an exec attached to stdout, stderr and (unless
 * `body.AttachStdin` is `false`) stdin, no TTY.
 *
 * @returns the exec ID
 * @throws {DockerEngineError} `not_found` for a missing container, `conflict` when it is not running
 */
export async function createExec(
  engine: DockerEngine,
  containerId: string,
  body: ExecCreateBody,
  options: EngineCallOptions = {},
): Promise<string> {
  const reply = await engine.request("POST", `/containers/${encodeURIComponent(containerId)}/exec`, {
    action: "create exec",
    json: { AttachStdin: true, ...body, AttachStdout: true, AttachStderr: true, Tty: false, Privileged: false },
    expect: [201],
    schema: execCreatedSchema,
    ...options,
  });
  return reply.value.Id;
}

/**
 * `POST /exec/{id}/start` with `Connection: Upgrade`; the returned connection carries stdin
 * one way and the multiplexed stdout/stderr frames the other. The caller owns it.
 *
 * @throws {DockerEngineTransportError} on transport faults or a non-101 reply
 */
export async function startExec(
  engine: DockerEngine,
  execId: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<EngineUpgrade> {
  return await engine.upgrade("POST", `/exec/${encodeURIComponent(execId)}/start`, {
    body: EXEC_START_BODY,
    contentType: "application/json",
    ...options,
  });
}

/**
 * `GET /exec/{id}/json`.
 *
 * @throws {DockerEngineError} `not_found` once the exec's container was removed
 */
export async function inspectExec(engine: DockerEngine, execId: string, options: EngineCallOptions = {}): Promise<ExecInspect> {
  const reply = await engine.request("GET", `/exec/${encodeURIComponent(execId)}/json`, {
    action: "inspect exec",
    schema: execInspectSchema,
    ...options,
  });
  return reply.value;
}
