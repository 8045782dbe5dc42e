/**
 * The Engine HTTP/1.1 client: one bounded codec over a Unix-socket connection, the same
 * on Deno, Bun and Node. Streaming exchanges ({@linkcode exchange}), bounded buffered
 * requests ({@linkcode requestBuffered}) and connection upgrades ({@linkcode upgrade}),
 * with explicit bounds ({@linkcode MAX_RESPONSE_HEAD_BYTES} and friends), deadlines,
 * `AbortSignal` support, and one error class ({@linkcode DockerEngineTransportError}).
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine socket
 * import { requestBuffered } from "./mod.ts";
 *
 * const reply = await requestBuffered({
 *   socketPath: "/var/run/docker.sock",
 *   method: "GET",
 *   target: "/version",
 *   timeoutMs: 5_000,
 *   maxResponseBytes: 64 * 1024,
 * });
 * console.log(JSON.parse(new TextDecoder().decode(reply.body)).ApiVersion);
 * ```
 *
 * @module
 */
export {
  DockerEngineTransportError,
  type DockerEngineTransportErrorCode,
  type DockerEngineTransportErrorOptions,
} from "../errors.ts";
export {
  type EngineExchangeOptions,
  type EngineMethod,
  type EngineResponse,
  exchange,
} from "./exchange.ts";
export {
  type EngineBufferedRequestOptions,
  type EngineBufferedResponse,
  requestBuffered,
} from "./request_buffered.ts";
export { type EngineUpgrade, type EngineUpgradeOptions, upgrade } from "./upgrade.ts";
// The zod schemas of validate.ts are exported by that file, not here.
export { type EngineRequestLimits, validateEngineRequest } from "./validate.ts";
export * from "./limits.ts";
export type { ConnectOptions, SocketConnection, UnixConnector } from "../socket/types.ts";
