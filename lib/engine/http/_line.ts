/**
 * CRLF-terminated lines of an HTTP/1.1 response (RFC 9112 §2.2), read strictly and within a
 * byte budget from the connection's {@linkcode ByteReader}.
 *
 * @module
 */
import type { ByteReader } from "../../streams/byte_reader.ts";
import { DockerEngineTransportError } from "../errors.ts";

const CR = 0x0d;
const LF = 0x0a;

/**
 * Reads the next line without its CRLF.
 *
 * @param reader The connection's bytes.
 * @param budget Most bytes the line may take, CRLF included.
 * @param what What the line belongs to, for messages ("response head").
 * @param limit The bound to name when `budget` is exceeded.
 * @returns The line, or `null` when the stream ends before the line's first byte.
 * @throws {DockerEngineTransportError} `response_limit` past `budget`; `invalid_response`
 * for a bare LF, a stray CR, or end of stream inside the line.
 */
export async function readLine(reader: ByteReader, budget: number, what: string, limit = budget): Promise<Uint8Array | null> {
  const read = await reader.readThrough(LF, budget);
  if (read === null) return null;
  if (read.end === "limit") {
    throw new DockerEngineTransportError("response_limit", `Cannot read the ${what}: it exceeds ${limit} bytes`);
  }
  if (read.end === "stream") {
    throw new DockerEngineTransportError("invalid_response", `Cannot read the ${what}: the connection ended inside a line`);
  }
  const line = read.bytes;
  if (line.byteLength < 2 || line[line.byteLength - 2] !== CR) {
    throw new DockerEngineTransportError(
      "invalid_response",
      `Cannot read the ${what}: a line ends with a bare LF instead of CRLF`,
    );
  }
  const content = line.subarray(0, line.byteLength - 2);
  if (content.includes(CR)) {
    throw new DockerEngineTransportError("invalid_response", `Cannot read the ${what}: a line contains a bare CR`);
  }
  return content;
}
