/**
 * The guest's proxy environment of an allowlist sandbox, added to its fixed environment
 * (the keeper's `Env`, which every process of the sandbox inherits):
 *
 * - `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy`, `https_proxy`: the proxy's URL,
 *   `http://<proxy address on the sandbox's internal network>:3128` (HTTPS goes through it
 *   with `CONNECT`; TLS is not terminated).
 * - `NO_PROXY`, `no_proxy`: `localhost,127.0.0.1,::1` (the guest's own loopback).
 *
 * Both spellings, because tools differ (curl reads only lower-case `http_proxy`; Node's
 * `NODE_USE_ENV_PROXY`, Python and Go read either). A process that ignores them, or
 * unsets them, reaches nothing: the guest's network has no route but to the proxy.
 *
 * @module
 */

/** The guest loopback names the proxy is not used for. */
export const EGRESS_NO_PROXY = "localhost,127.0.0.1,::1";

/**
 * The proxy variables as `NAME=value` entries, in a fixed order.
 *
 * @param proxyUrl `http://address:port` of the proxy
 */
export function egressGuestEnv(proxyUrl: string): readonly string[] {
  return Object.freeze([
    `HTTP_PROXY=${proxyUrl}`,
    `HTTPS_PROXY=${proxyUrl}`,
    `http_proxy=${proxyUrl}`,
    `https_proxy=${proxyUrl}`,
    `NO_PROXY=${EGRESS_NO_PROXY}`,
    `no_proxy=${EGRESS_NO_PROXY}`,
  ]);
}
