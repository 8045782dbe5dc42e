/**
 * How the body of a response is delimited (RFC 9112 §6.3), decided strictly: a
 * response that could be read two ways is rejected rather than guessed.
 *
 * @module
 */
import type { ResponseHead } from "./_head.ts";
import { DockerEngineTransportError } from "../errors.ts";

/** Where a response body ends. */
export type BodyFraming =
  | { readonly kind: "none" }
  | { readonly kind: "length"; readonly length: number }
  | { readonly kind: "chunked" }
  | { readonly kind: "close" };

function invalid(reason: string): DockerEngineTransportError {
  return new DockerEngineTransportError("invalid_response", `Cannot read the response: ${reason}`);
}

/**
 * Decides the framing of a final (non-1xx) response body.
 *
 * @param head The parsed head.
 * @param method The request method (a `HEAD` response has no body).
 * @returns Where the body ends: nothing (HEAD, 204, 304), `Content-Length` bytes, the
 * last chunk of a chunked body, or the end of the connection.
 * @throws {DockerEngineTransportError} `invalid_response` for `Content-Length` together
 * with `Transfer-Encoding`, differing or malformed `Content-Length` values, or a transfer
 * coding other than exactly `chunked`.
 */
export function responseFraming(head: ResponseHead, method: string): BodyFraming {
  const transferEncoding = head.headers.get("transfer-encoding");
  const contentLength = head.headers.get("content-length");
  if (transferEncoding !== null && contentLength !== null) {
    throw invalid("it has both Content-Length and Transfer-Encoding");
  }
  const length = contentLength === null ? undefined : parseContentLength(contentLength);
  if (method === "HEAD" || head.status === 204 || head.status === 304) return { kind: "none" };
  if (transferEncoding !== null) {
    const codings = transferEncoding.split(",").map((coding) => coding.trim().toLowerCase());
    if (codings.length !== 1 || codings[0] !== "chunked") {
      throw invalid(`the transfer coding "${transferEncoding}" is not supported (only chunked)`);
    }
    return { kind: "chunked" };
  }
  return length === undefined ? { kind: "close" } : { kind: "length", length };
}

/** `Content-Length`, possibly repeated (`Headers` joins repeats with ", "): all equal. */
function parseContentLength(field: string): number {
  const values = field.split(",").map((value) => value.trim());
  if (!values.every((value) => /^[0-9]{1,15}$/.test(value))) {
    throw invalid(`Content-Length "${field.slice(0, 64)}" is not a decimal byte count`);
  }
  const lengths = new Set(values.map(Number));
  if (lengths.size !== 1) {
    throw invalid(`it has differing Content-Length values "${field.slice(0, 64)}"`);
  }
  return [...lengths][0];
}
