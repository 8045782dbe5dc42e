/**
 * Engine exec endpoints (Docker Engine API v1.44–v1.52, "Exec" group): create, start with
 * an upgraded attach, resize a terminal, inspect.
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
  /**
   * Allocate a pseudo-terminal: stdout and stderr become the terminal's one raw stream (no
   * frames), stdin goes through the Engine's detach-key filter (see `DetachKeys`).
   *
   * @default {false}
   */
  readonly Tty?: boolean;
  /** The terminal's initial size `[rows, columns]` (API 1.42 and later), with `Tty` only. */
  readonly ConsoleSize?: readonly [number, number];
  /**
   * The detach sequence the Engine watches stdin for when `Tty` is set: comma-separated
   * `ctrl-<key>` names or single ASCII characters. The Engine cannot turn it off (an empty
   * value means its default `ctrl-p,ctrl-q`); a byte of it that arrives as a partial match is
   * held back until the next byte shows the sequence is not complete, and the whole sequence
   * ends the attach.
   *
   * @default {undefined} the Engine's `ctrl-p,ctrl-q`
   */
  readonly DetachKeys?: string;
}

/** The reply of `POST /containers/{id}/exec` (built once: a zod schema is costly to build). */
const execCreatedSchema = z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u) });

/** The body of `POST /exec/{id}/start` (attached) without and with a TTY, encoded once. */
const EXEC_START_BODY = new TextEncoder().encode(JSON.stringify({ Detach: false, Tty: false }));
const EXEC_START_TTY_BODY = new TextEncoder().encode(JSON.stringify({ Detach: false, Tty: true }));

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
 * `body.AttachStdin` is `false`) stdin, without a TTY unless `body.Tty`.
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
    json: { AttachStdin: true, Tty: false, ...body, AttachStdout: true, AttachStderr: true, Privileged: false },
    expect: [201],
    schema: execCreatedSchema,
    ...options,
  });
  return reply.value.Id;
}

/**
 * `POST /exec/{id}/start` with `Connection: Upgrade`; the returned connection carries stdin
 * one way and the multiplexed stdout/stderr frames the other (with `options.tty`, for an
 * exec created with `Tty`: the terminal's raw bytes). The caller owns it.
 *
 * @throws {DockerEngineTransportError} on transport faults or a non-101 reply
 */
export async function startExec(
  engine: DockerEngine,
  execId: string,
  options: { connectTimeoutMs?: number; headerTimeoutMs?: number; signal?: AbortSignal; tty?: boolean } = {},
): Promise<EngineUpgrade> {
  const { tty, ...rest } = options;
  return await engine.upgrade("POST", `/exec/${encodeURIComponent(execId)}/start`, {
    body: tty ? EXEC_START_TTY_BODY : EXEC_START_BODY,
    contentType: "application/json",
    ...rest,
  });
}

/**
 * `POST /exec/{id}/resize?h=&w=`: resize the terminal of an exec created with `Tty`.
 *
 * @param size height and width in character cells (1 to 65535)
 * @throws {DockerEngineError} `not_found` for an unknown exec, another code when the Engine
 *   refuses (an exec without a terminal, one not started)
 */
export async function resizeExec(
  engine: DockerEngine,
  execId: string,
  size: { readonly rows: number; readonly columns: number },
  options: EngineCallOptions = {},
): Promise<void> {
  await engine.request("POST", `/exec/${encodeURIComponent(execId)}/resize?h=${size.rows}&w=${size.columns}`, {
    action: "resize exec",
    expect: [200, 201],
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
