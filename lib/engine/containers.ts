/**
 * Engine container endpoints (Docker Engine API v1.44–v1.52, "Container" group):
 * create, inspect, list (by label), start, pause, unpause, update (the PID limit), wait, remove. Paths use exact IDs; callers never pass names except to
 * `create`.
 *
 * @module
 */
import { z } from "zod";
import type { DockerEngine } from "./client.ts";
import { DockerEngineError } from "./errors.ts";

/** Options shared by the calls of this file. */
export interface EngineCallOptions {
  /** Whole deadline per request, milliseconds. @default 30000 */
  readonly timeoutMs?: number;
  /** Aborts the request. */
  readonly signal?: AbortSignal;
}

const stringMap = z.record(z.string(), z.string());

/** Schema of `GET /containers/{id}/json` (fields this project reads back). */
export const containerInspectSchema = z.looseObject({
  Id: z.string().regex(/^[0-9a-f]{64}$/u),
  Name: z.string(),
  Image: z.string(),
  /** The container's execs the Engine still holds (created, starting or running). */
  ExecIDs: z.array(z.string()).nullable().optional(),
  State: z.looseObject({
    Status: z.string(),
    Running: z.boolean(),
    Paused: z.boolean().optional(),
    Pid: z.number(),
    ExitCode: z.number(),
    OOMKilled: z.boolean().optional(),
  }),
  Config: z.looseObject({
    User: z.string(),
    Env: z.array(z.string()).nullable(),
    Entrypoint: z.array(z.string()).nullable(),
    Cmd: z.array(z.string()).nullable(),
    WorkingDir: z.string(),
    Image: z.string(),
    Labels: stringMap.nullable(),
    Tty: z.boolean(),
    OpenStdin: z.boolean(),
    ExposedPorts: z.record(z.string(), z.unknown()).nullable().optional(),
    Volumes: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
  HostConfig: z.looseObject({
    ReadonlyRootfs: z.boolean(),
    CapAdd: z.array(z.string()).nullable(),
    CapDrop: z.array(z.string()).nullable(),
    SecurityOpt: z.array(z.string()).nullable(),
    PidMode: z.string(),
    IpcMode: z.string(),
    CgroupnsMode: z.string().optional(),
    UsernsMode: z.string(),
    Memory: z.number(),
    MemorySwap: z.number(),
    NanoCpus: z.number(),
    PidsLimit: z.number().nullable(),
    NetworkMode: z.string(),
    Tmpfs: stringMap.nullable().optional(),
    ShmSize: z.number().optional(),
    Ulimits: z.array(z.looseObject({ Name: z.string(), Soft: z.number(), Hard: z.number() })).nullable().optional(),
    Mounts: z.array(z.looseObject({
      Type: z.string(),
      Source: z.string(),
      Target: z.string(),
      ReadOnly: z.boolean().optional(),
    })).nullable().optional(),
    Binds: z.array(z.string()).nullable(),
    Privileged: z.boolean(),
    Devices: z.array(z.unknown()).nullable(),
    DeviceRequests: z.array(z.unknown()).nullable().optional(),
    PortBindings: z.record(z.string(), z.unknown()).nullable(),
    PublishAllPorts: z.boolean(),
    VolumesFrom: z.array(z.string()).nullable().optional(),
    Init: z.boolean().nullable().optional(),
    OomKillDisable: z.boolean().nullable().optional(),
    Runtime: z.string().optional(),
    Sysctls: stringMap.nullable().optional(),
  }),
  Mounts: z.array(z.looseObject({
    Type: z.string(),
    Name: z.string().optional(),
    Source: z.string(),
    Destination: z.string(),
    RW: z.boolean(),
  })),
  AppArmorProfile: z.string().optional(),
});

/** The validated `GET /containers/{id}/json` reply. */
export type ContainerInspect = z.infer<typeof containerInspectSchema>;

/**
 * `POST /containers/create?name=…` with the given body; expects `201`.
 *
 * @returns the new container ID and the Engine's warnings
 * @throws {DockerEngineError} `conflict` when the name is taken, others by status
 */
export async function createContainer(
  engine: DockerEngine,
  name: string,
  body: unknown,
  options: EngineCallOptions & { platform?: string } = {},
): Promise<{ id: string; warnings: string[] }> {
  const reply = await engine.request("POST", "/containers/create", {
    action: "create container",
    query: { name, platform: options.platform },
    json: body,
    expect: [201],
    schema: z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u), Warnings: z.array(z.string()).nullable() }),
    ...options,
  });
  return { id: reply.value.Id, warnings: reply.value.Warnings ?? [] };
}

/**
 * `GET /containers/{id}/json`.
 *
 * @throws {DockerEngineError} `not_found` when the container is gone
 */
export async function inspectContainer(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<ContainerInspect> {
  const reply = await engine.request("GET", `/containers/${encodeURIComponent(id)}/json`, {
    action: "inspect container",
    schema: containerInspectSchema,
    ...options,
  });
  return reply.value;
}

/**
 * `GET /containers/{id}/top?ps_args=…`: the Engine runs `ps` with `psArgs` on its host over
 * the container's processes and answers `{ Titles, Processes }` (rows of strings).
 *
 * @param options `maxResponseBytes` bounds the reply (default 4 MiB), `timeoutMs` the call.
 * @returns The reply as JSON, for the caller to validate against the columns it asked for.
 * @throws {DockerEngineError} `not_found` when the container is gone, `conflict` when it
 *   is not running
 */
export async function topContainer(
  engine: DockerEngine,
  id: string,
  psArgs: string,
  options: EngineCallOptions & { readonly maxResponseBytes?: number } = {},
): Promise<unknown> {
  const reply = await engine.request("GET", `/containers/${encodeURIComponent(id)}/top`, {
    action: "list container processes",
    query: { ps_args: psArgs },
    schema: z.unknown(),
    ...options,
  });
  return reply.value;
}

/** One entry of `GET /containers/json` (the fields this project reads). */
export interface ContainerSummary {
  /** Container ID. */
  readonly Id: string;
  /** The container's labels. */
  readonly Labels: Readonly<Record<string, string>> | null;
}

/** Most entries one `GET /containers/json` reply may carry (the body is bounded too). */
const MAX_LISTED_CONTAINERS = 4096;

/**
 * `GET /containers/json?all=true&filters={"label":[…]}`: every container (any state) that
 * carries all the given `key=value` labels. Used only to check that an identity is free,
 * never to choose what to remove.
 *
 * @param filters `label`: exact `key=value` pairs, all required
 * @throws {DockerEngineError} by status, or `invalid_body` past 4,096 entries
 */
export async function listContainers(
  engine: DockerEngine,
  filters: { readonly label: readonly string[] },
  options: EngineCallOptions = {},
): Promise<ContainerSummary[]> {
  const reply = await engine.request("GET", "/containers/json", {
    action: "list containers",
    query: { all: true, filters: JSON.stringify({ label: filters.label }) },
    schema: z.array(z.looseObject({ Id: z.string().regex(/^[0-9a-f]{64}$/u), Labels: stringMap.nullable() })).max(MAX_LISTED_CONTAINERS),
    ...options,
  });
  return reply.value;
}

/**
 * `POST /containers/{id}/start`; `204` (started) and `304` (already running) succeed.
 *
 * @throws {DockerEngineError} by status
 */
export async function startContainer(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<void> {
  await engine.request("POST", `/containers/${encodeURIComponent(id)}/start`, {
    action: "start container",
    expect: [204, 304],
    ...options,
  });
}

/**
 * `POST /containers/{id}/pause`: freeze every process of the container (the cgroup freezer;
 * Docker Engine API v1.44+). `204` succeeds; the Engine answers `409` for a container that is
 * already paused or not running.
 *
 * @throws {DockerEngineError} by status (`conflict` when already paused or not running)
 */
export async function pauseContainer(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<void> {
  await engine.request("POST", `/containers/${encodeURIComponent(id)}/pause`, {
    action: "pause container",
    expect: [204],
    ...options,
  });
}

/**
 * `POST /containers/{id}/update` with `{ PidsLimit }` alone: set the PID limit of a
 * container (Docker Engine API v1.44+ `ContainerUpdate`, a `Resources` field). On a running
 * container the cgroup's `pids.max` changes at once; processes already above a lowered limit
 * keep running, but none of them can fork until the count is below it (the kernel's pids
 * controller). `200` succeeds.
 *
 * @param pidsLimit the new limit, processes and threads (a positive integer)
 * @throws {DockerEngineError} by status (`not_found` for an unknown container)
 */
export async function updatePidsLimit(engine: DockerEngine, id: string, pidsLimit: number, options: EngineCallOptions = {}): Promise<void> {
  await engine.request("POST", `/containers/${encodeURIComponent(id)}/update`, {
    action: "update container",
    json: { PidsLimit: pidsLimit },
    expect: [200],
    ...options,
  });
}

/**
 * `POST /containers/{id}/unpause`: thaw a paused container (Docker Engine API v1.44+). `204`
 * succeeds; the Engine answers `409` for a container that is not paused.
 *
 * @throws {DockerEngineError} by status (`conflict` when not paused)
 */
export async function unpauseContainer(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<void> {
  await engine.request("POST", `/containers/${encodeURIComponent(id)}/unpause`, {
    action: "unpause container",
    expect: [204],
    ...options,
  });
}

/**
 * `DELETE /containers/{id}?force=true` (anonymous volumes are kept: `v=false`). A `404`
 * counts as done.
 *
 * @returns `true` when this call removed it, `false` when it was already gone
 * @throws {DockerEngineError} by status (a removal already in progress answers `409`)
 */
export async function removeContainer(engine: DockerEngine, id: string, options: EngineCallOptions = {}): Promise<boolean> {
  const reply = await engine.request("DELETE", `/containers/${encodeURIComponent(id)}`, {
    action: "remove container",
    query: { force: true, v: false },
    expect: [204, 404],
    ...options,
  });
  return reply.status === 204;
}

/**
 * `GET /containers/{id}/export`: the container's whole file system as a tar stream (Docker
 * Engine API "Container" group, `ContainerExport`). The caller must read the stream to its
 * end or cancel it.
 *
 * @returns the tar stream
 * @throws {DockerEngineError} by status (`not_found` when the container is gone)
 */
export async function exportContainer(engine: DockerEngine, id: string, options: { readonly signal?: AbortSignal } = {}): Promise<ReadableStream<Uint8Array>> {
  const response = await engine.stream("GET", `/containers/${encodeURIComponent(id)}/export`, options.signal === undefined ? {} : { signal: options.signal });
  if (response.status !== 200) throw await engine.failure(response, "export container");
  return response.body;
}

/** Schema of the `POST /containers/{id}/wait` answer. */
const waitSchema = z.looseObject({
  StatusCode: z.number().int(),
  Error: z.looseObject({ Message: z.string().optional() }).nullable().optional(),
});

/** Largest `POST /containers/{id}/wait` answer read, in bytes: 64 KiB. */
const MAX_WAIT_BODY_BYTES = 64 * 1024;

/**
 * `POST /containers/{id}/wait?condition=…`: a long poll that answers once the container
 * reaches the condition (`not-running` answers at once for a container that is not running).
 * No whole deadline: it lasts until the condition holds or `signal` aborts (abort it when
 * the answer no longer matters; that closes the connection).
 *
 * @returns the container's exit status code, as the Engine reports it
 * @throws {DockerEngineError} by status (`not_found` for a removed container) or
 *   `invalid_body` for an answer that is not the documented shape
 * @throws {DockerEngineTransportError} `aborted` once `signal` aborted, or a transport fault
 */
export async function waitContainer(
  engine: DockerEngine,
  id: string,
  options: { readonly condition: "not-running" | "next-exit" | "removed"; readonly signal?: AbortSignal },
): Promise<number> {
  const response = await engine.stream("POST", `/containers/${encodeURIComponent(id)}/wait`, {
    query: { condition: options.condition },
    maxBodyBytes: MAX_WAIT_BODY_BYTES,
    signal: options.signal,
  });
  if (response.status !== 200) throw await engine.failure(response, "wait for container");
  const text = await new Response(response.body).text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new DockerEngineError("invalid_body", `Cannot wait for container: the Engine answered ${JSON.stringify(text.slice(0, 200))}, which is not JSON`, { cause });
  }
  const result = waitSchema.safeParse(parsed);
  if (!result.success) {
    throw new DockerEngineError("invalid_body", "Cannot wait for container: the Engine's answer lacks an integer StatusCode", { cause: result.error });
  }
  return result.data.StatusCode;
}
