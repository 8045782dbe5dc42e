/**
 * Helpers shared by the HTTP transport tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  DockerEngineTransportError,
  type DockerEngineTransportErrorCode,
  type UnixConnector,
} from "../../../lib/engine/http/mod.ts";
import { socketConnectionFromRaw } from "../../../lib/engine/socket/raw_socket.ts";
import { concat } from "../_fake_engine.ts";

/** A predicate for `assert.rejects`: a transport error with `code`. */
export function transportError(
  code: DockerEngineTransportErrorCode,
  message?: RegExp,
): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof DockerEngineTransportError, `not a transport error: ${error}`);
    assert.equal(error.name, "DockerEngineTransportError");
    assert.equal(error.code, code, `code of: ${error.message}`);
    assert.match(error.message, /^Cannot [^\n]*[^.]$/);
    if (message !== undefined) assert.match(error.message, message);
    return true;
  };
}

/** Reads a stream to its end. */
export async function readAll(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const reader = readable.getReader();
  const parts: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return concat(parts);
    parts.push(value);
  }
}

/** Reads a stream to its end as UTF-8 text. */
export async function readText(readable: ReadableStream<Uint8Array>): Promise<string> {
  return new TextDecoder().decode(await readAll(readable));
}

/** Latin-1 bytes of a string (for scripted responses). */
export function latin1(text: string): Uint8Array {
  return Uint8Array.from(text, (char) => char.charCodeAt(0));
}

/**
 * A connector to an in-memory peer that answers with `pieces`, one per read, then ends.
 * The request bytes the client wrote are collected in `written`.
 */
export function scriptedConnector(pieces: readonly Uint8Array[]): {
  connector: UnixConnector;
  written: Uint8Array[];
} {
  const written: Uint8Array[] = [];
  const connector: UnixConnector = () => {
    const queue = [...pieces];
    return Promise.resolve(socketConnectionFromRaw({
      read: () => Promise.resolve(queue.shift() ?? null),
      write: (chunk) => {
        written.push(chunk.slice());
        return Promise.resolve();
      },
      shutdown: () => Promise.resolve(),
      destroy: () => {},
    }));
  };
  return { connector, written };
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
