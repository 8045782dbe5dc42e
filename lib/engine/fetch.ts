/**
 * The fetch-shaped door of {@linkcode DockerEngine.fetch}: turning `fetch(input, init)`
 * arguments into one bounded exchange with the Engine, and its answer into a standard
 * `Response`. Upgrades (exec and container attach) are not fetch-shaped — a `Response`
 * cannot hand over a `101`-switched connection — and stay on `DockerEngine.upgrade()`.
 *
 * Why not the runtime's own `fetch`: none of the three runtimes' `fetch` speaks to a Unix
 * socket the same way (Deno needs `Deno.createHttpClient`, Bun a `unix` option, Node an
 * undici dispatcher), and none bounds response heads and chunks or reports typed transport
 * errors as the Engine client must; the one bounded codec of `./http/` does.
 *
 * @module
 */
import type { EngineMethod, EngineResponse } from "./http/exchange.ts";

/**
 * Request bodies {@linkcode DockerEngine.fetch} accepts: bytes (`string` as UTF-8,
 * `ArrayBuffer`, any `ArrayBufferView`, `Blob`) are sent with `Content-Length`; a
 * `ReadableStream<Uint8Array>` is sent with chunked transfer coding as the socket drains it.
 * `FormData` and `URLSearchParams` are not accepted (the Engine API takes neither).
 */
export type DockerEngineFetchBody = string | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>;

/**
 * The `init` of {@linkcode DockerEngine.fetch}: the `RequestInit` fields that mean something
 * on an Engine socket, plus the exchange bounds every Engine request has.
 */
export interface DockerEngineFetchInit {
  /**
   * `GET`, `HEAD`, `POST`, `PUT` or `DELETE` (any letter case).
   *
   * @default "GET" (or the method of a `Request` input)
   */
  readonly method?: string;
  /**
   * Request header fields. `Content-Type` is sent as given; `Host`, `Connection`, `Upgrade`,
   * `Content-Length`, `Transfer-Encoding`, `TE`, `Trailer`, `Keep-Alive`,
   * `Proxy-Connection` and `Expect` are the client's own and a `TypeError` here.
   *
   * @default {} (or the headers of a `Request` input)
   */
  readonly headers?: HeadersInit;
  /**
   * Request body, with `POST` and `PUT` only. Without a `Content-Type` header a `string`
   * is sent as `text/plain;charset=UTF-8` and a `Blob` as its `type`, as `fetch` does; the
   * Engine wants `application/json` for JSON bodies, so set it.
   *
   * @default null (or the body of a `Request` input)
   */
  readonly body?: DockerEngineFetchBody | null;
  /**
   * Aborts the exchange at any stage, the response body included: the promise or the body
   * stream fails with `DockerEngineTransportError` code `aborted`.
   *
   * @default null (or the signal of a `Request` input)
   */
  readonly signal?: AbortSignal | null;
  /** Accepted for `fetch` compatibility (a stream body is always sent half-duplex). */
  readonly duplex?: "half";
  /**
   * Time allowed for connecting, in milliseconds (1 … 2^31 − 1).
   *
   * @default {10000}
   */
  readonly connectTimeoutMs?: number;
  /**
   * Time allowed from the request being fully sent until the response head is parsed, in
   * milliseconds (1 … 2^31 − 1).
   *
   * @default {60000}
   */
  readonly headerTimeoutMs?: number;
  /**
   * Time allowed for the whole exchange, the response body included, in milliseconds
   * (1 … 2^31 − 1).
   *
   * @default undefined (none: event and log streams may run for as long as they are read)
   */
  readonly timeoutMs?: number;
  /**
   * Most response body bytes accepted; more fail the body stream with `response_limit`.
   *
   * @default {Number.MAX_SAFE_INTEGER} (unlimited; the body is pulled with backpressure)
   */
  readonly maxBodyBytes?: number;
  /**
   * Largest piece the body stream delivers at once, in bytes (1 … 65,536).
   *
   * @default {65536}
   */
  readonly chunkBytes?: number;
}

/** One fetch call resolved into what the exchange needs. */
export interface FetchPlan {
  /** The request method. */
  readonly method: EngineMethod;
  /** Path and query, percent-encoded, e.g. `/containers/json?all=true`. */
  readonly pathAndQuery: string;
  /** Whether the path already names an API version (`/v1.51/…`), so none is added. */
  readonly versioned: boolean;
  /** Header fields other than `Content-Type`, names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** `Content-Type` of the body, when there is one. */
  readonly contentType: string | undefined;
  /** The body as bytes or a stream. */
  readonly body: Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** The signal, when one was given. */
  readonly signal: AbortSignal | undefined;
  /** The exchange bounds given in `init`. */
  readonly bounds: Pick<DockerEngineFetchInit, "connectTimeoutMs" | "headerTimeoutMs" | "timeoutMs" | "maxBodyBytes" | "chunkBytes">;
}

const METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE"]);
/** The origin `fetch`'s URL parser resolves a bare path against; its host is never used. */
const BASE = "http://docker-engine";
/** An Engine path that names its API version already. */
const VERSIONED = /^\/v\d+\.\d+(?:\/|$)/u;
/** Statuses whose `Response` must have a null body (Fetch standard). */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

function fail(reason: string): never {
  throw new TypeError(`Cannot fetch from the Engine: ${reason}`);
}

/**
 * Resolves `fetch(input, init)` arguments. A `Request` input gives method, headers, body
 * and signal unless `init` overrides them; a string or `URL` gives the path and query (a
 * bare path such as `/containers/json?all=true`, or an `http:` URL whose host is ignored:
 * the request always goes to this client's socket). The fragment is dropped, as `fetch` does.
 *
 * @param input A path, an `http:` URL or a `Request`.
 * @param init Method, headers, body, signal and bounds.
 * @returns The plan of the exchange.
 * @throws {TypeError} For another scheme, an unknown method, or a body type not accepted.
 */
export async function fetchPlan(input: string | URL | Request, init: DockerEngineFetchInit): Promise<FetchPlan> {
  const request = input instanceof Request ? input : undefined;
  let url: URL;
  try {
    url = new URL(request ? request.url : input instanceof URL ? input.href : String(input), BASE);
  } catch (cause) {
    throw new TypeError(`Cannot fetch from the Engine: input ${JSON.stringify(String(input)).slice(0, 200)} is not a path or URL`, { cause });
  }
  if (url.protocol !== "http:") {
    fail(`input must be a path such as "/containers/json" or an http: URL (its host is ignored), not a ${url.protocol} URL`);
  }
  const method = (init.method ?? request?.method ?? "GET").toUpperCase();
  if (!METHODS.has(method)) fail(`method must be GET, HEAD, POST, PUT or DELETE, not ${JSON.stringify(method).slice(0, 40)}`);
  const headers: Record<string, string> = {};
  let contentType: string | undefined;
  for (const [name, value] of new Headers(init.headers ?? request?.headers)) {
    if (name === "content-type") contentType = value;
    else headers[name] = value;
  }
  const given = init.body !== undefined ? init.body : request?.body ?? null;
  let body: Uint8Array | ReadableStream<Uint8Array> | undefined;
  if (given === null) body = undefined;
  else if (typeof given === "string") {
    body = new TextEncoder().encode(given);
    contentType ??= "text/plain;charset=UTF-8";
  } else if (given instanceof ReadableStream) body = given;
  else if (given instanceof ArrayBuffer) body = new Uint8Array(given);
  else if (ArrayBuffer.isView(given)) body = new Uint8Array(given.buffer, given.byteOffset, given.byteLength);
  else if (given instanceof Blob) {
    body = new Uint8Array(await given.arrayBuffer());
    if (given.type !== "") contentType ??= given.type;
  } else {
    fail("body must be a string, ArrayBuffer, ArrayBufferView, Blob or ReadableStream<Uint8Array>");
  }
  const { connectTimeoutMs, headerTimeoutMs, timeoutMs, maxBodyBytes, chunkBytes } = init;
  return {
    method: method as EngineMethod,
    pathAndQuery: `${url.pathname}${url.search}`,
    versioned: VERSIONED.test(url.pathname),
    headers,
    contentType,
    body,
    signal: init.signal ?? request?.signal ?? undefined,
    bounds: { connectTimeoutMs, headerTimeoutMs, timeoutMs, maxBodyBytes, chunkBytes },
  };
}

/**
 * The standard `Response` of an exchange: its status and headers, its body stream as the
 * `Response` body (`null` for `HEAD`, 204, 205 and 304, whose empty body is read first so the
 * connection ends cleanly). `url` is `""` and `statusText` empty, as for any constructed
 * `Response`.
 *
 * @param answer The exchange's answer.
 * @param method The request method.
 * @returns The response.
 */
export async function fetchResponse(answer: EngineResponse, method: EngineMethod): Promise<Response> {
  if (method === "HEAD" || NULL_BODY_STATUSES.has(answer.status)) {
    // The codec frames these as empty: one read ends the body (a 205 with a body is cut off).
    const reader = answer.body.getReader();
    const { done } = await reader.read();
    if (!done) await reader.cancel();
    return new Response(null, { status: answer.status, headers: answer.headers });
  }
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}
