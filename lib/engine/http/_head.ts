/**
 * The response-head parser of the Engine HTTP/1.1 client.
 *
 * No HTTP library: this bounded HTTP/1.1 codec is what the project exists for. One codec
 * serves Deno, Bun and Node alike, with explicit bounds and identical errors, over a
 * plain byte connection; a runtime's own HTTP client would bring its own limits, its own
 * errors and its own buffering.
 *
 * Strict by design (RFC 9112): lines end with CRLF (a bare LF or CR is rejected), the
 * status line is `HTTP/1.1 NNN reason`, header names are tokens with no whitespace before
 * the colon, values hold no control characters but HTAB, and obs-fold (a line starting
 * with SP or HTAB) is rejected. The Docker Engine (Go net/http) sends exactly this form.
 *
 * @module
 */
import type { ByteReader } from "../../streams/byte_reader.ts";
import { DockerEngineTransportError } from "../errors.ts";
import { readLine } from "./_line.ts";

/** A parsed response head. */
export interface ResponseHead {
  /** Status code, 100–599. */
  readonly status: number;
  /** Reason phrase, possibly empty. */
  readonly reason: string;
  /** Header fields in arrival order (duplicates joined by Web `Headers`). */
  readonly headers: Headers;
  /** Bytes the head took on the wire, its blank line included. */
  readonly byteLength: number;
}

const STATUS_LINE = /^HTTP\/1\.1 ([1-5][0-9]{2})(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
const TAB = 0x09;
const SPACE = 0x20;
const COLON = 0x3a;

/** `tchar` of RFC 9110 §5.6.2, indexed by byte. */
const TOKEN_BYTE: readonly boolean[] = Array.from(
  { length: 256 },
  (_, byte) => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/.test(String.fromCharCode(byte)),
);

function invalid(message: string): DockerEngineTransportError {
  return new DockerEngineTransportError("invalid_response", `Cannot read the ${message}`);
}

/**
 * Decodes bytes one to one into a string (ISO-8859-1, which `Headers` stores as is).
 *
 * @param bytes The bytes.
 * @returns One character per byte.
 */
export function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let start = 0; start < bytes.byteLength; start += 8_192) {
    // `apply` takes the typed array as the argument list; a spread (`...bytes`) builds an
    // iterator result per byte and cost about five times more per head (Node 26, Bun, Deno).
    text += String.fromCharCode.apply(null, bytes.subarray(start, start + 8_192) as unknown as number[]);
  }
  return text;
}

/**
 * Reads and parses one response head (status line, header fields, blank line).
 *
 * @param reader The connection's bytes, positioned at the head.
 * @param budget Most bytes the head may take, its blank line included.
 * @param limit The bound to name when `budget` is exceeded (heads of interim 1xx answers
 * share one bound with the final head).
 * @returns The head; the reader is left at the first body byte.
 * @throws {DockerEngineTransportError} `response_limit` past `budget`;
 * `invalid_response` for a malformed or truncated head; `connection` when the Engine
 * closed the connection before sending anything.
 */
export async function readResponseHead(
  reader: ByteReader,
  budget: number,
  limit: number,
): Promise<ResponseHead> {
  const what = "response head";
  let left = budget;
  const statusLine = await readLine(reader, left, what, limit);
  if (statusLine === null) {
    throw new DockerEngineTransportError(
      "connection",
      "Cannot read the response head: the Engine closed the connection without answering",
    );
  }
  left -= statusLine.byteLength + 2;
  const match = STATUS_LINE.exec(latin1(statusLine));
  if (match === null) throw invalid("response head: the status line is not `HTTP/1.1 NNN reason`");
  const headers = new Headers();
  for (;;) {
    const line = await readLine(reader, left, what, limit);
    if (line === null) throw invalid("response head: the connection ended before its blank line");
    left -= line.byteLength + 2;
    if (line.byteLength === 0) break;
    const [name, value] = parseFieldLine(line, what);
    headers.append(name, value);
  }
  return { status: Number(match[1]), reason: match[2] ?? "", headers, byteLength: budget - left };
}

/**
 * Parses one header or trailer field line (`name: value`).
 *
 * @param line The line without its CRLF.
 * @param what What the line belongs to, for messages.
 * @returns The name and the value without surrounding whitespace.
 * @throws {DockerEngineTransportError} `invalid_response` for obs-fold, a name that is
 * not a token, whitespace before the colon, or a control character in the value.
 */
export function parseFieldLine(line: Uint8Array, what: string): [string, string] {
  if (line[0] === SPACE || line[0] === TAB) {
    throw invalid(`${what}: a folded header line (obs-fold) is not allowed`);
  }
  const colon = line.indexOf(COLON);
  if (colon <= 0) throw invalid(`${what}: a header line has no name before a colon`);
  for (let index = 0; index < colon; index++) {
    if (!TOKEN_BYTE[line[index]]) throw invalid(`${what}: a header name is not a token`);
  }
  let start = colon + 1;
  let end = line.byteLength;
  while (start < end && (line[start] === SPACE || line[start] === TAB)) start++;
  while (end > start && (line[end - 1] === SPACE || line[end - 1] === TAB)) end--;
  for (let index = start; index < end; index++) {
    const byte = line[index];
    if ((byte < SPACE && byte !== TAB) || byte === 0x7f) {
      throw invalid(`${what}: a header value contains a control character`);
    }
  }
  return [latin1(line.subarray(0, colon)), latin1(line.subarray(start, end))];
}
