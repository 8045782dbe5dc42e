/**
 * Connect-time rules shared by the runtime adapters: argument validation, the connect
 * deadline, the abort signal, and discarding a connection that arrives too late.
 *
 * @module
 */
import { z } from "zod";
import { DockerEngineTransportError } from "../errors.ts";
import { parseInput, socketPathSchema, timerMsSchema } from "../input.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import { describeSocketError } from "./raw_socket.ts";
import type { ConnectOptions } from "./types.ts";

const connectArgumentsSchema = z.object({
  path: socketPathSchema,
  signal: z.instanceof(AbortSignal).optional(),
  timeoutMs: timerMsSchema.optional(),
});

/**
 * Runs `open` under the options' signal and deadline.
 *
 * @param path Absolute Unix socket path (validated here).
 * @param options Signal and connect deadline.
 * @param open Starts connecting.
 * @param discard Releases a connection that arrived after the caller gave up.
 * @returns What `open` resolved with.
 * @throws {TypeError} When `path` or `options` are invalid.
 * @throws {DockerEngineTransportError} `aborted`, `deadline` or `connection`.
 */
export function connectWithin<T>(
  path: string,
  options: ConnectOptions,
  open: () => Promise<T>,
  discard: (value: T) => void,
): Promise<T> {
  try {
    parseInput(connectArgumentsSchema, { path, ...options }, "connect to the socket");
  } catch (error) {
    return Promise.reject(error);
  }
  const { signal, timeoutMs } = options;
  // An already aborted signal ends the race at once; it never opens a connection then.
  // Connecting starts now (not a microtask turn later), a synchronous throw becomes a rejection.
  let opening: Promise<T>;
  try {
    opening = signal?.aborted ? new Promise<never>(() => {}) : open();
  } catch (error) {
    opening = Promise.reject(error);
  }
  const connecting = opening.catch((error: unknown) => {
    throw new DockerEngineTransportError(
      "connection",
      `Cannot connect to ${path}: ${describeSocketError(error)}`,
      { cause: error },
    );
  });
  return raceDeadline(connecting, {
    timeoutMs,
    signal,
    onTimeout: () => new DockerEngineTransportError("deadline", `Cannot connect to ${path}: no connection within ${timeoutMs} ms`),
    onAbort: (reason) => new DockerEngineTransportError("aborted", `Cannot connect to ${path}: the signal was aborted`, { cause: reason }),
    onLate: discard,
  });
}
