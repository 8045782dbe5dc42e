/**
 * Validation and defaults of the options every Engine exchange takes.
 *
 * @module
 */
import { z } from "zod";
import { connectUnixSocket } from "../socket/connect.ts";
import type { UnixConnector } from "../socket/types.ts";
import type { EngineExchangeOptions, EngineMethod } from "./exchange.ts";
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_HEADER_TIMEOUT_MS,
  MAX_CHUNK_BYTES,
} from "./limits.ts";
import { byteLimitSchema, parseInput, socketPathSchema, timerMsSchema } from "../input.ts";
import { engineTargetSchema } from "./validate.ts";

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
