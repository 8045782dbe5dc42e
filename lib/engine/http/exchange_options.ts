/**
 * Validation and defaults of the options every Engine exchange takes.
 *
 * @module
 */
import { z } from "zod";
import { connectUnixSocket } from "../socket/connect.ts";
import type { UnixConnector } from "../socket/types.ts";
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_HEADER_TIMEOUT_MS,
  MAX_CHUNK_BYTES,
} from "./limits.ts";
import { byteLimitSchema, parseInput, socketPathSchema, timerMsSchema } from "../input.ts";
import { engineTargetSchema } from "./validate.ts";

/** An HTTP method the Engine API uses. */
export type EngineMethod = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";

/** Options of `exchange()` (`./exchange.ts`). */
export interface EngineExchangeOptions {
  /** Absolute path of the Engine's Unix socket, e.g. `/var/run/docker.sock`. */
  readonly socketPath: string;
  /** Request method. A body is allowed with `POST` and `PUT` only. */
  readonly method: EngineMethod;
  /**
   * Origin-form request target, e.g. `/v1.51/containers/json?all=1`: starts with `/` (not
   * `//`), printable ASCII without `\` or `#`, at most 16,384 characters.
   */
  readonly target: string;
  /**
   * Extra request header fields: token names, printable ASCII values. The client writes
   * `Host`, `Connection`, `Upgrade`, `Content-Length`, `Transfer-Encoding` and
   * `Content-Type` itself; passing them (or `TE`, `Trailer`, `Keep-Alive`,
   * `Proxy-Connection`, `Expect`) is a `TypeError`.
   *
   * @default {} (none)
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Request body: bytes are sent with `Content-Length`; a stream is sent with chunked
   * transfer coding as the consumer (the socket) drains it, which the Engine accepts for
   * `PUT /containers/{id}/archive` and `POST /images/create?fromSrc=-`. The stream is
   * cancelled when the exchange ends before it was fully sent.
   *
   * @default undefined (no body; `POST`/`PUT` send `Content-Length: 0`)
   */
  readonly body?: Uint8Array | ReadableStream<Uint8Array>;
  /**
   * Called with each non-empty chunk of a stream `body`, in order, once the kernel has
   * every byte of it and the runtime holds no reference to it: from then on the producer
   * may reuse the chunk's memory (a pool of read buffers, say). Not called for a chunk that
   * was not sent completely, nor for empty chunks. The guarantee is the built-in
   * connector's; a replacement `connector` that keeps chunks (wrapping the socket in a
   * `TransformStream`, say) must keep it too. An exception it throws fails the exchange with
   * `aborted`.
   *
   * @default undefined (no notice)
   */
  readonly onBodyChunkSent?: (chunk: Uint8Array) => void;
  /**
   * `Content-Type` of the body, e.g. `application/json` or `application/x-tar`.
   *
   * @default undefined (no Content-Type field)
   */
  readonly contentType?: string;
  /**
   * Time allowed for connecting, in milliseconds (1 … 2^31 − 1).
   *
   * @default {10000}
   */
  readonly connectTimeoutMs?: number;
  /**
   * Time allowed from the request (body included) being fully sent until the response
   * head is parsed, in milliseconds (1 … 2^31 − 1).
   *
   * @default {60000}
   */
  readonly headerTimeoutMs?: number;
  /**
   * Time allowed for the whole exchange, response body included, in milliseconds
   * (1 … 2^31 − 1).
   *
   * @default undefined (no whole-exchange deadline)
   */
  readonly timeoutMs?: number;
  /**
   * Most response body bytes accepted (a non-negative safe integer); more fail the body
   * stream with `response_limit`.
   *
   * @default {Number.MAX_SAFE_INTEGER} (unlimited)
   */
  readonly maxBodyBytes?: number;
  /**
   * Largest piece the body stream delivers at once, in bytes (1 … 65,536).
   *
   * @default {65536}
   */
  readonly chunkBytes?: number;
  /**
   * Aborts the exchange at any stage, the response body included: the pending promise or
   * the body stream fails with `aborted` and the connection is aborted.
   *
   * @default undefined (no signal)
   */
  readonly signal?: AbortSignal;
  /**
   * Opens the connection; replace it to wrap or observe the socket.
   *
   * @default connectUnixSocket (the running runtime's adapter)
   */
  readonly connector?: UnixConnector;
}


const ENGINE_METHODS: readonly [EngineMethod, ...EngineMethod[]] = [
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
];

/** Header fields the client writes itself (RFC 9110 connection and framing fields). */
const RESERVED_HEADERS = new Set([
  "host",
  "connection",
  "upgrade",
  "content-length",
  "transfer-encoding",
  "content-type",
  "te",
  "trailer",
  "keep-alive",
  "proxy-connection",
  "expect",
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Printable ASCII, SP and HTAB, trimmed; what the client writes into a field value. */
const FIELD_VALUE = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/;

const headersSchema = z.record(z.string(), z.string()).refine(
  (headers) =>
    Object.entries(headers).every(([name, value]) =>
      TOKEN.test(name) && !RESERVED_HEADERS.has(name.toLowerCase()) && FIELD_VALUE.test(value)
    ),
  {
    error:
      "must map token names to printable ASCII values, without Host, Connection, Upgrade, Content-Length, Transfer-Encoding, TE, Trailer, Keep-Alive, Proxy-Connection or Expect (the client sets those); give Content-Type as the contentType option (engine.fetch() takes it as a header)",
  },
);

const requestSchema = z.object({
  socketPath: socketPathSchema,
  method: z.enum(ENGINE_METHODS),
  target: engineTargetSchema,
  headers: headersSchema.optional(),
  body: z.union([z.instanceof(Uint8Array), z.instanceof(ReadableStream)]).optional(),
  contentType: z.string().regex(FIELD_VALUE).min(1).optional(),
  connectTimeoutMs: timerMsSchema.optional(),
  headerTimeoutMs: timerMsSchema.optional(),
  timeoutMs: timerMsSchema.optional(),
  maxBodyBytes: byteLimitSchema.optional(),
  chunkBytes: z.custom<number>(
    (bytes) =>
      Number.isSafeInteger(bytes) && (bytes as number) >= 1 && (bytes as number) <= MAX_CHUNK_BYTES,
    { error: `must be a safe integer from 1 to ${MAX_CHUNK_BYTES} (bytes)` },
  ).optional(),
  signal: z.instanceof(AbortSignal).optional(),
  connector: z.custom<UnixConnector>((value) => typeof value === "function", {
    error: "must be a function",
  }).optional(),
  onBodyChunkSent: z.custom<(chunk: Uint8Array) => void>((value) => typeof value === "function", {
    error: "must be a function",
  }).optional(),
}).refine((request) => request.body === undefined || ["POST", "PUT"].includes(request.method), {
  error: "must be POST or PUT to carry a body",
  path: ["method"],
});

/** Options whose defaults `parseRequest` applies. */
export type Defaulted =
  | "connectTimeoutMs"
  | "headerTimeoutMs"
  | "maxBodyBytes"
  | "chunkBytes"
  | "connector";

/** Validated exchange options with their defaults applied. */
export type ParsedRequest =
  & Omit<EngineExchangeOptions, Defaulted>
  & Readonly<Required<Pick<EngineExchangeOptions, Defaulted>>>;

/**
 * Validates an exchange's options and applies the defaults.
 *
 * @param input The caller's options.
 * @returns The options with defaults.
 * @throws {TypeError} When an option is invalid; the message names it.
 */
export function parseRequest(input: EngineExchangeOptions): ParsedRequest {
  parseInput(requestSchema, input, "send the Engine request");
  return {
    ...input,
    connectTimeoutMs: input.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    headerTimeoutMs: input.headerTimeoutMs ?? DEFAULT_HEADER_TIMEOUT_MS,
    maxBodyBytes: input.maxBodyBytes ?? Number.MAX_SAFE_INTEGER,
    chunkBytes: input.chunkBytes ?? MAX_CHUNK_BYTES,
    connector: input.connector ?? connectUnixSocket,
  };
}
