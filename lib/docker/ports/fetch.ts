/**
 * `sandbox.fetch(port, request)`: one HTTP/1.1 exchange with a guest server over a relayed
 * connection (`Connection: close`), answered as a standard `Response`. The response is read
 * by the project's one bounded HTTP/1.1 codec (`lib/engine/http/`: its head parser, framing
 * rules and chunked decoder, strict RFC 9112), bounded by `maxHeadBytes`, `maxBodyBytes`, a
 * whole-exchange deadline and the signal.
 *
 * @module
 */
import { SandboxAbortedError, SandboxConfigurationError, SandboxDeadlineError, SandboxError, SandboxQuotaError } from "../../sandbox/errors.ts";
import { normalizeFetch, type SandboxConnection, SandboxConnectionError, type SandboxConnectOptions, type SandboxFetchOptions } from "../../sandbox/ports.ts";
import { DockerEngineTransportError } from "../../engine/errors.ts";
import { bodyDecoder } from "../../engine/http/_body_decoder.ts";
import { responseFraming } from "../../engine/http/_framing.ts";
import { readResponseHead, type ResponseHead } from "../../engine/http/_head.ts";
import { ByteReader } from "../../streams/byte_reader.ts";

/** Opens a connection (the sandbox's `connect`). */
export type Connector = (port: number, options: SandboxConnectOptions) => Promise<SandboxConnection>;

/** Request header fields the exchange writes itself. */
const OWN_FIELDS: ReadonlySet<string> = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer", "proxy-connection", "expect"]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/u;
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/** The request's target and Host field. */
function target(input: Request | string | URL, port: number, action: string): { url: URL; host: string } {
  const text = input instanceof Request ? input.url : input instanceof URL ? input.href : String(input);
  let url: URL;
  try {
    url = new URL(text, `http://localhost:${port}`);
  } catch (cause) {
    throw new SandboxConfigurationError(`Cannot ${action}: request ${JSON.stringify(text).slice(0, 200)} is not a path or http: URL`, { cause });
  }
  if (url.protocol !== "http:") throw new SandboxConfigurationError(`Cannot ${action}: request must be a path such as "/" or an http: URL, not a ${url.protocol} URL`);
  return { url, host: url.host };
}

/** Encode the request head: origin-form target, `Host`, `Connection: close`, the caller's fields, `Content-Length`. */
function requestHead(method: string, url: URL, host: string, headers: Headers, body: Uint8Array | undefined): Uint8Array {
  const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${host}`, "Connection: close"];
  for (const [name, value] of headers) if (!OWN_FIELDS.has(name)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`Content-Length: ${body.byteLength}`);
  else if (method !== "GET" && method !== "HEAD" && method !== "OPTIONS" && method !== "DELETE") lines.push("Content-Length: 0");
  return new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n`);
}

/** The project's error for a codec failure of the guest's answer. */
function answerError(error: unknown, action: string, maxHeadBytes: number, maxBodyBytes: number): unknown {
  if (error instanceof SandboxError) return error;
  if (!(error instanceof DockerEngineTransportError)) return error;
  if (error.code === "response_limit") {
    const which = /body/u.test(error.message) ? `options.maxBodyBytes (${maxBodyBytes} bytes)` : `options.maxHeadBytes (${maxHeadBytes} bytes)`;
    return new SandboxQuotaError(`Cannot ${action}: the response is larger than ${which}`, { cause: error });
  }
  if (error.code === "connection") {
    return new SandboxConnectionError("reset", `Cannot ${action}: the server closed the connection without answering`, { cause: error });
  }
  const reason = error.message.replace(/^Cannot /u, "");
  return new SandboxConnectionError("invalid_response", `Cannot ${action}: the answer is not valid HTTP/1.1 (${reason})`, { cause: error });
}

/**
 * Fetch from the guest server on `port` (see `SandboxPorts.fetch`). The request body, if
 * any, is read whole first and sent with `Content-Length`.
 *
 * @throws {SandboxConfigurationError} for an invalid port, option or request
 * @throws {SandboxConnectionError} `refused`, `reset`, `relay_lost` or `invalid_response`
 * @throws {SandboxQuotaError} past `maxHeadBytes` (the body stream past `maxBodyBytes`)
 * @throws {SandboxDeadlineError} / {SandboxAbortedError} for `timeoutMs` / `signal`
 */
export async function fetchRelayed(connect: Connector, port: unknown, request: Request | string | URL, options?: SandboxFetchOptions): Promise<Response> {
  const action = `fetch from port ${typeof port === "number" ? port : String(JSON.stringify(port)).slice(0, 40)} in the sandbox`;
  const limits = normalizeFetch(port, options, action);
  const given = request instanceof Request ? request : undefined;
  const { url, host } = target(request, limits.port, action);
  const method = (given?.method ?? "GET").toUpperCase();
  if (!TOKEN.test(method) || method === "CONNECT") throw new SandboxConfigurationError(`Cannot ${action}: request.method ${JSON.stringify(method)} is not allowed`);
  const headers = new Headers(given?.headers);
  const body = given?.body ? new Uint8Array(await given.arrayBuffer()) : undefined;
  const signals = [limits.signal, given?.signal].filter((signal): signal is AbortSignal => signal !== undefined);
  const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);

  const startedAt = Date.now();
  const connection = await connect(limits.port, { signal, timeoutMs: limits.timeoutMs });
  let done = false;
  const failWith = (error: SandboxError) => {
    if (done) return;
    done = true;
    failure = error;
    // A relayed connection fails with the error itself (its reader then reports it); any
    // other connection is closed.
    const relayed = connection as { fail?: (error: SandboxError) => void };
    if (relayed.fail) relayed.fail(error);
    else void connection.close();
  };
  let failure: SandboxError | undefined;
  const timer = setTimeout(
    () => failWith(new SandboxDeadlineError(`Cannot ${action}: the exchange took longer than ${limits.timeoutMs} ms (options.timeoutMs)`)),
    Math.max(1, limits.timeoutMs - (Date.now() - startedAt)),
  );
  const onAbort = () => failWith(new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: signal?.reason }));
  signal?.addEventListener("abort", onAbort, { once: true });
  const finish = () => {
    done = true;
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    void connection.close();
  };
  try {
    const writer = connection.writable.getWriter();
    void writer.write(requestHead(method, url, host, headers, body)).catch(() => {});
    if (body !== undefined && body.byteLength > 0) void writer.write(body).catch(() => {});
    writer.releaseLock();
    const reader = new ByteReader(connection.readable);
    let head: ResponseHead;
    let budget = limits.maxHeadBytes;
    do {
      head = await readResponseHead(reader, budget, limits.maxHeadBytes);
      budget -= head.byteLength;
    } while (head.status < 200 && head.status !== 101);
    if (head.status === 101) {
      throw new SandboxConnectionError("invalid_response", `Cannot ${action}: the server switched protocols (101); use connect() or forwardPort() for upgrades`);
    }
    const decoder = bodyDecoder(responseFraming(head, method), reader);
    if (method === "HEAD" || NULL_BODY_STATUSES.has(head.status)) {
      finish();
      return new Response(null, { status: head.status, headers: head.headers });
    }
    let received = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const piece = await decoder.next(64 * 1024);
          if (piece === null) {
            finish();
            controller.close();
            return;
          }
          received += piece.byteLength;
          if (received > limits.maxBodyBytes) {
            throw new SandboxQuotaError(`Cannot ${action}: the response body is larger than options.maxBodyBytes (${limits.maxBodyBytes} bytes)`);
          }
          controller.enqueue(piece);
        } catch (error) {
          const reported = failure ?? answerError(error, action, limits.maxHeadBytes, limits.maxBodyBytes);
          finish();
          controller.error(reported);
        }
      },
      cancel: () => finish(),
    }, { highWaterMark: 0 });
    return new Response(stream, { status: head.status, headers: head.headers });
  } catch (error) {
    const reported = failure ?? answerError(error, action, limits.maxHeadBytes, limits.maxBodyBytes);
    finish();
    throw reported;
  }
}
