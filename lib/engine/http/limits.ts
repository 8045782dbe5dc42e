/**
 * Named bounds and defaults of the Engine HTTP/1.1 client. Every input the Engine
 * controls has one; crossing it fails with a `DockerEngineTransportError` of code
 * `response_limit`.
 *
 * @module
 */

/** Largest response head (status line, header lines, blank line), in bytes: 16 KiB. */
export const MAX_RESPONSE_HEAD_BYTES = 16_384;

/**
 * Largest head of the answer to an upgrade request (exec start, attach), in bytes:
 * 64 KiB.
 */
export const MAX_UPGRADE_HEAD_BYTES = 65_536;

/** Largest piece a response body or upgraded stream delivers at once, in bytes: 64 KiB. */
export const MAX_CHUNK_BYTES = 65_536;

/** Largest chunk-size line of a chunked body (size, extensions, CRLF), in bytes: 4 KiB. */
export const MAX_CHUNK_SIZE_LINE_BYTES = 4_096;

/** Largest trailer section of a chunked body (including its blank line), in bytes: 16 KiB. */
export const MAX_TRAILER_BYTES = 16_384;

/** Longest request target, in characters: 16,384. */
export const MAX_TARGET_LENGTH = 16_384;

/** Most body bytes of a refused upgrade kept on the error, in bytes: 4 KiB. */
export const MAX_REFUSAL_BODY_BYTES = 4_096;

export { MAX_TIMER_MS } from "../input.ts";

/** Default time allowed for connecting to the Engine socket, in milliseconds: 10 s. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Default time allowed from the request being fully sent until the response head is
 * parsed, in milliseconds: 60 s.
 */
export const DEFAULT_HEADER_TIMEOUT_MS = 60_000;
