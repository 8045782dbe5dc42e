/**
 * The body decoder contract every framing's decoder implements (`_body_decoder.ts` picks one,
 * `_chunked.ts` is the chunked one).
 *
 * @module
 */

/** Delivers a body's decoded bytes piece by piece. */
export interface BodyDecoder {
  /**
   * Resolves with the next 1 to `max` body bytes, or `null` once the body is complete.
   * Reads the connection only when called.
   *
   * @throws {DockerEngineTransportError} `invalid_response` for broken framing or a
   * truncated body; `response_limit` for an oversized chunk-size line or trailers.
   */
  next(max: number): Promise<Uint8Array | null>;
}
