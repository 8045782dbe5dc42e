/**
 * `@agentcell/docker/engine`: the Docker Engine client the backend is built on, for a host
 * that needs an Engine call the sandbox API does not make. {@linkcode DockerEngine} speaks
 * Engine API 1.44–1.52 over a Unix socket with negotiated versions, typed requests validated
 * by schemas, bounded streams and upgrades, and `engine.fetch` (a WHATWG `fetch` to the
 * Engine); its errors are {@linkcode DockerEngineError} (an HTTP answer) and
 * `DockerEngineTransportError` (the transport). The bounded HTTP/1.1 codec below it
 * (`exchange`, `requestBuffered`, `upgrade` and their limits) is exported too.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a Docker Engine socket
 * import { DockerEngine } from "@agentcell/docker/engine";
 *
 * const engine = new DockerEngine("unix:///var/run/docker.sock");
 * const response = await engine.fetch("/containers/json?all=true");
 * console.log(response.status, (await response.json()).length);
 * ```
 *
 * @module
 */
export {
  DockerEngine,
  type DockerEngineMethod,
  type DockerEngineQuery,
  type DockerEngineReply,
  type DockerEngineRequestOptions,
  type DockerEngineStreamOptions,
  type ReplySchema,
} from "./client.ts";
export type { DockerEngineFetchBody, DockerEngineFetchInit } from "./fetch.ts";
export { DockerEngineError, type DockerEngineErrorCode, type DockerEngineErrorOptions } from "./errors.ts";
export { MAX_SOCKET_PATH_BYTES, parseEngineEndpoint } from "./endpoint.ts";
export { MAX_API_VERSION, MIN_API_VERSION, negotiateApiVersion } from "./api_version.ts";
export type { EngineInfo, EngineVersion } from "./system.ts";
export * from "./http/mod.ts";
