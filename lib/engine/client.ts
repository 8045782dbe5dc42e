/**
 * The Docker Engine client: an explicit `unix:///` endpoint, API version negotiation,
 * bounded JSON requests validated with zod, streaming requests with byte counts, a
 * fetch-shaped door to any endpoint (`fetch` → a standard `Response`), and connection
 * upgrades (exec attach).
 *
 * @module
 */
import { negotiateApiVersion } from "./api_version.ts";
import { parseEngineEndpoint } from "./endpoint.ts";
import { codeForStatus, DockerEngineError } from "./errors.ts";
import { type DockerEngineFetchInit, fetchPlan, fetchResponse } from "./fetch.ts";
import { exchange, requestBuffered, upgrade } from "./http/mod.ts";
import { concatBytes } from "../streams/concat_bytes.ts";
import type { EngineExchangeOptions, EngineResponse, EngineUpgrade } from "./http/mod.ts";
import { type EngineInfo, engineInfoSchema, type EngineVersion, engineVersionSchema } from "./system.ts";

/** HTTP methods the client sends. */
export type DockerEngineMethod = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";

/** Query parameters; `undefined` values are left out. */
export type DockerEngineQuery = Readonly<Record<string, string | number | boolean | undefined>>;

/** Default deadline of a buffered JSON request, in milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Default byte limit of a buffered JSON reply. */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Bytes of an unexpected reply kept to build an error message. */
const ERROR_BODY_BYTES = 16 * 1024;

/**
 * A validator of JSON replies: anything with zod's `safeParse` shape (every zod schema is
 * one). Kept structural so the public API does not depend on zod's types.
 */
export interface ReplySchema<Value> {
  /** Validate `value`; on success `data` is the typed value. */
  safeParse(value: unknown):
    | { readonly success: true; readonly data: Value }
    | { readonly success: false; readonly error: { readonly issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[] } };
}

/** Options of {@linkcode DockerEngine.request}. */
export interface DockerEngineRequestOptions<Value = unknown> {
  /** What the caller is doing, for error messages ("inspect container"). @default "<METHOD> <path>" */
  readonly action?: string;
  /** Query parameters. */
  readonly query?: DockerEngineQuery;
  /** JSON request body (serialised with `JSON.stringify`). */
  readonly json?: unknown;
  /** Schema of a JSON reply (a zod schema, say); without it the reply body is ignored. */
  readonly schema?: ReplySchema<Value>;
  /** Statuses that count as success. @default [200, 201, 204] */
  readonly expect?: readonly number[];
  /** Whole deadline, milliseconds (1 … 2^31−1). @default 30000 */
  readonly timeoutMs?: number;
  /** Reply byte limit (non-negative safe integer). @default 4194304 (4 MiB) */
  readonly maxResponseBytes?: number;
  /** Aborts the request. */
  readonly signal?: AbortSignal;
}

/** Result of {@linkcode DockerEngine.request}. */
export interface DockerEngineReply<Value> {
  /** HTTP status (one of `expect`). */
  readonly status: number;
  /** Reply headers. */
  readonly headers: Headers;
  /** The validated JSON reply, or `undefined` without a schema or for an empty body. */
  readonly value: Value;
}

/**
 * Options of {@linkcode DockerEngine.stream} and {@linkcode DockerEngine.upgrade}: the
 * transport's exchange options (headers, body, content type, connect/header/whole
 * deadlines, body limit, chunk size, signal; see `EngineExchangeOptions`) plus a query.
 * `upgrade` ignores `timeoutMs` and `maxBodyBytes`.
 */
export interface DockerEngineStreamOptions extends Omit<EngineExchangeOptions, "socketPath" | "method" | "target"> {
  /** Query parameters. */
  readonly query?: DockerEngineQuery;
}

/**
 * A client of one Docker Engine on a Unix socket. Construction is inert (no I/O); the API
 * version is negotiated on first use from `GET /version`: requests go under
 * `/v{min(daemon ApiVersion, 1.52)}/` and a daemon below API 1.44 is rejected.
 *
 * Errors: {@linkcode DockerEngineError} for an invalid endpoint, an unsupported API version,
 * an unexpected status (code from the status: `not_found`, `conflict`, …) or a reply that
 * fails its schema (`invalid_body`); {@linkcode DockerEngineTransportError} for transport
 * faults (`deadline`, `aborted`, `response_limit`, `invalid_response`, `connection`).
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine
 * import { DockerEngine } from "./client.ts";
 * const engine = new DockerEngine("unix:///run/agentcell-test-engine/docker.sock");
 * const info = await engine.info();
 * console.log(info.ServerVersion, await engine.apiVersion());
 * ```
 */
export class DockerEngine {
  /** Absolute path of the Engine's Unix socket. */
  readonly socketPath: string;
  #negotiated: Promise<string> | undefined;
  /**
   * The negotiated version once known, so a request need not wait a microtask turn for it:
   * at the end of an exec the exit inspect then reaches the socket before the queued
   * teardown of the attach connection runs.
   */
  #version: string | undefined;

  /**
   * Create a client; inert (no I/O).
   *
   * @param endpoint `unix:///absolute/path.sock`
   * @throws {DockerEngineError} code `invalid_endpoint` for anything else
   */
  constructor(endpoint: string) {
    this.socketPath = parseEngineEndpoint(endpoint);
  }

  /**
   * `GET /_ping` (unversioned).
   *
   * @returns `true` when the Engine answered `200 OK`
   * @throws {DockerEngineTransportError} on transport faults
   */
  async ping(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const reply = await requestBuffered({
      socketPath: this.socketPath,
      method: "GET",
      target: "/_ping",
      timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      maxResponseBytes: 1024,
      signal: options.signal,
    });
    return reply.status === 200;
  }

  /**
   * `GET /version` (unversioned), validated.
   *
   * @throws {DockerEngineError} `invalid_body` when the reply does not match the schema
   */
  async version(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<EngineVersion> {
    const reply = await this.#send("GET", "/version", { ...options, schema: engineVersionSchema, action: "read Engine version" }, false);
    return reply.value as EngineVersion;
  }

  /**
   * The negotiated API version (`min(daemon ApiVersion, 1.52)`), negotiated once.
   *
   * @throws {DockerEngineError} `unsupported_api_version` for a daemon below API 1.44
   */
  apiVersion(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<string> {
    if (!this.#negotiated) {
      const attempt = this.version(options).then((version) => (this.#version = negotiateApiVersion(version.ApiVersion)));
      this.#negotiated = attempt;
      // A failed negotiation (say, a deadline) may be retried by the next call.
      attempt.catch(() => {
        if (this.#negotiated === attempt) this.#negotiated = undefined;
      });
    }
    return this.#negotiated;
  }

  /** `GET /info`, validated (the fields of {@linkcode EngineInfo}). */
  async info(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<EngineInfo> {
    const reply = await this.request("GET", "/info", { ...options, schema: engineInfoSchema, action: "read Engine info" });
    return reply.value as EngineInfo;
  }

  /**
   * A bounded, buffered request under the negotiated API version, with a JSON body and a
   * zod-validated JSON reply.
   *
   * @param method HTTP method
   * @param path Engine path without the version prefix, e.g. `/containers/{id}/json`
   *   (callers percent-encode path segments)
   * @param options see {@linkcode DockerEngineRequestOptions}
   * @returns status, headers and the validated value
   * @throws {DockerEngineError} for an unexpected status or a reply failing its schema
   * @throws {DockerEngineTransportError} on transport faults
   */
  async request<Value = undefined>(
    method: DockerEngineMethod,
    path: string,
    options: DockerEngineRequestOptions<Value> = {},
  ): Promise<DockerEngineReply<Value>> {
    return await this.#send(method, path, options as DockerEngineRequestOptions, true) as DockerEngineReply<Value>;
  }

  /**
   * A streaming exchange under the negotiated API version. The caller reads `body` to the
   * end or cancels it (cancelling closes the connection); `uploadedBytes()` and
   * `downloadedBytes()` count body bytes as `bigint`. The status is not checked here; see
   * {@linkcode DockerEngine.failure} to turn an unexpected one into an error.
   *
   * @throws {DockerEngineTransportError} on transport faults before the head arrived
   */
  async stream(method: DockerEngineMethod, path: string, options: DockerEngineStreamOptions = {}): Promise<EngineResponse> {
    return await exchange(await this.#exchangeOptions(method, path, options));
  }

  /**
   * Any Engine endpoint as `fetch` would call it, answered with a standard `Response`.
   *
   * The path goes under the negotiated API version (`/containers/json` →
   * `/v1.52/containers/json`) unless it names one (`/v1.47/…`). `input` is a path with an
   * optional query, an `http:` URL (host ignored: the request always goes to this client's
   * socket) or a `Request`. The exchange is the same bounded one as every request's: a head
   * of at most 16 KiB, body pieces of at most `chunkBytes` pulled with backpressure, the
   * connect, header and whole deadlines of `init`, `init.signal` honoured at every stage
   * (the body stream included), `Connection: close`. The body is a `ReadableStream` to read
   * to the end or cancel (cancelling closes the connection).
   *
   * As with `fetch`, an HTTP error status is an ordinary `Response` (check `ok` or
   * `status`), never a rejection. Unlike `fetch`, transport faults reject with
   * {@linkcode DockerEngineTransportError} (not `TypeError`), and so does reading a body
   * that breaks (`invalid_response`, `response_limit`, `deadline`, `aborted`, `connection`).
   * `101` upgrades are refused (`invalid_response`): use {@linkcode DockerEngine.upgrade}.
   *
   * @param input `/containers/json?all=true`, `new URL("http://docker/info")` or a `Request`
   * @param init method, headers, body (bytes or a stream), signal and bounds; see
   *   {@linkcode DockerEngineFetchInit}
   * @returns the Engine's answer; `url` is `""`
   * @throws {TypeError} for an input that is not a path or `http:` URL, an unknown method, a
   *   body not accepted, a body with `GET`/`HEAD`/`DELETE`, or a header the client sets itself
   * @throws {DockerEngineError} `unsupported_api_version` when negotiation refuses the daemon
   * @throws {DockerEngineTransportError} on transport faults before the head arrived
   *
   * @example List containers
   * ```ts ignore
   * // ignore: needs a running Docker Engine
   * import { DockerEngine } from "@agentcell/docker/engine";
   *
   * const engine = new DockerEngine("unix:///var/run/docker.sock");
   * const response = await engine.fetch("/containers/json?all=true", { signal: AbortSignal.timeout(10_000) });
   * if (!response.ok) throw new Error(`the Engine answered ${response.status}: ${await response.text()}`);
   * for (const container of await response.json()) console.log(container.Id, container.State);
   * ```
   */
  async fetch(input: string | URL | Request, init: DockerEngineFetchInit = {}): Promise<Response> {
    const plan = await fetchPlan(input, init);
    try {
      const version = plan.versioned ? undefined : await this.apiVersion({ signal: plan.signal });
      const answer = await exchange({
        ...plan.bounds,
        socketPath: this.socketPath,
        method: plan.method,
        target: version === undefined ? plan.pathAndQuery : `/v${version}${plan.pathAndQuery}`,
        headers: plan.headers,
        body: plan.body,
        contentType: plan.contentType,
        signal: plan.signal,
      });
      return await fetchResponse(answer, plan.method);
    } catch (error) {
      // A stream body that was never handed to the exchange (negotiation failed, an option
      // was refused) is released here; the exchange cancels one it took.
      if (plan.body instanceof ReadableStream && !plan.body.locked) await plan.body.cancel(error).catch(() => {});
      throw error;
    }
  }

  /**
   * Upgrade a connection (`Connection: Upgrade`, `Upgrade: tcp`), as exec and container
   * attach do. Requires `101`; bytes that arrived with the head come first in `readable`.
   * The caller owns the returned connection and must close or abort it.
   *
   * @throws {DockerEngineTransportError} on transport faults or a non-101 reply
   */
  async upgrade(method: DockerEngineMethod, path: string, options: DockerEngineStreamOptions = {}): Promise<EngineUpgrade> {
    const { timeoutMs: _whole, maxBodyBytes: _limit, ...rest } = await this.#exchangeOptions(method, path, options);
    return await upgrade(rest);
  }

  /**
   * Turn an unexpected streaming reply into a {@linkcode DockerEngineError}: reads at most
   * 16 KiB of its body for the Engine's message, then cancels the rest.
   *
   * @param response the reply from {@linkcode DockerEngine.stream}
   * @param action what the caller was doing ("export archive")
   * @returns the error to throw
   */
  async failure(response: EngineResponse, action: string): Promise<DockerEngineError> {
    const bytes = await readAtMost(response.body, ERROR_BODY_BYTES);
    return statusError(response.status, bytes, action);
  }

  async #exchangeOptions(method: DockerEngineMethod, path: string, options: DockerEngineStreamOptions): Promise<EngineExchangeOptions> {
    const { query, ...rest } = options;
    const version = this.#version ?? await this.apiVersion({ signal: options.signal });
    return { ...rest, socketPath: this.socketPath, method, target: target(version, path, query) };
  }

  async #send(
    method: DockerEngineMethod,
    path: string,
    options: DockerEngineRequestOptions<unknown>,
    versioned: boolean,
  ): Promise<DockerEngineReply<unknown>> {
    const version = versioned ? this.#version ?? await this.apiVersion({ signal: options.signal, timeoutMs: options.timeoutMs }) : undefined;
    const body = options.json === undefined ? undefined : new TextEncoder().encode(JSON.stringify(options.json));
    const reply = await requestBuffered({
      socketPath: this.socketPath,
      method,
      target: target(version, path, options.query),
      body,
      contentType: body ? "application/json" : undefined,
      timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      signal: options.signal,
    });
    const action = options.action ?? `${method} ${path}`;
    if (!(options.expect ?? [200, 201, 204]).includes(reply.status)) {
      throw statusError(reply.status, reply.body.subarray(0, ERROR_BODY_BYTES), action);
    }
    let value: unknown = undefined;
    // Only a success reply carries the documented JSON; an expected error status (say 404
    // for "absent") carries the Engine's error message and yields `undefined`.
    const success = reply.status >= 200 && reply.status <= 299;
    if (!success) return { status: reply.status, headers: reply.headers, value };
    if (options.schema && method !== "HEAD" && reply.body.byteLength > 0) {
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(reply.body));
      } catch (cause) {
        throw new DockerEngineError("invalid_body", `Cannot ${action}: the Engine reply is not JSON`, { cause, status: reply.status });
      }
      const parsed = options.schema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue ? issue.path.join(".") || "(root)" : "(root)";
        throw new DockerEngineError(
          "invalid_body",
          `Cannot ${action}: the Engine reply does not match its schema at ${where}: ${issue?.message ?? "invalid"}`,
          { cause: parsed.error, status: reply.status },
        );
      }
      value = parsed.data;
    } else if (options.schema && reply.status !== 204) {
      const parsed = options.schema.safeParse(undefined);
      if (!parsed.success) {
        throw new DockerEngineError("invalid_body", `Cannot ${action}: the Engine reply is empty`, { status: reply.status });
      }
    }
    return { status: reply.status, headers: reply.headers, value };
  }
}

function target(version: string | undefined, path: string, query: DockerEngineQuery | undefined): string {
  let text = version === undefined ? path : `/v${version}${path}`;
  if (query) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.append(key, String(value));
    const encoded = params.toString();
    if (encoded) text += `?${encoded}`;
  }
  return text;
}

function statusError(status: number, body: Uint8Array, action: string): DockerEngineError {
  const text = new TextDecoder().decode(body);
  let engineMessage: string | undefined;
  try {
    const json = JSON.parse(text);
    if (json && typeof json.message === "string") engineMessage = json.message;
  } catch {
    engineMessage = text.trim() || undefined;
  }
  engineMessage = engineMessage?.slice(0, 1024);
  return new DockerEngineError(
    codeForStatus(status),
    `Cannot ${action}: the Engine answered ${status}${engineMessage ? ` (${engineMessage})` : ""}`,
    { status, engineMessage },
  );
}

async function readAtMost(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value.subarray(0, limit - size));
      size += Math.min(value.byteLength, limit - size);
    }
  } catch {
    // the message is best effort; the status already says what happened
  } finally {
    reader.cancel().catch(() => {});
  }
  return concatBytes(parts);
}
