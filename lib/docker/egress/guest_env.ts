/**
 * The guest's proxy environment of an allowlist sandbox, added to its fixed environment
 * (the keeper's `Env`, which every process of the sandbox inherits):
 *
 * - `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy`, `https_proxy`: the proxy's URL,
 *   `http://<proxy address on the sandbox's internal network>:3128` (HTTPS goes through it
 *   with `CONNECT`; TLS is not terminated).
 * - `NO_PROXY`, `no_proxy`: `localhost,127.0.0.1,::1` (the guest's own loopback), and with
 *   routes the proxy's address too, so a client sends a route's plain-HTTP requests to the
 *   proxy directly (one that tunnels them with `CONNECT` anyway reaches the routes as well).
 * - With routes: each route's `baseUrlEnv` variables = `http://<proxy address>:3128/<name>`,
 *   and its `env` variables with their fixed values (placeholders, never secrets).
 *
 * Both spellings, because tools differ (curl reads only lower-case `http_proxy`; Node's
 * `NODE_USE_ENV_PROXY`, Python and Go read either). A process that ignores them, or
 * unsets them, reaches nothing: the guest's network has no route but to the proxy.
 *
 * @module
 */
import type { SandboxRouteSettings } from "../../sandbox/network_routes.ts";

/** The guest loopback names the proxy is not used for. */
export const EGRESS_NO_PROXY = "localhost,127.0.0.1,::1";

/**
 * The proxy variables as `NAME=value` entries, in a fixed order.
 *
 * @param proxyUrl `http://address:port` of the proxy
 * @param routes the allowlist's routes (their variables follow the proxy's)
 */
export function egressGuestEnv(proxyUrl: string, routes: readonly SandboxRouteSettings[] = []): readonly string[] {
  const noProxy = routes.length === 0 ? EGRESS_NO_PROXY : `${EGRESS_NO_PROXY},${new URL(proxyUrl).hostname}`;
  return Object.freeze([
    `HTTP_PROXY=${proxyUrl}`,
    `HTTPS_PROXY=${proxyUrl}`,
    `http_proxy=${proxyUrl}`,
    `https_proxy=${proxyUrl}`,
    `NO_PROXY=${noProxy}`,
    `no_proxy=${noProxy}`,
    ...routes.flatMap((route) => [
      ...route.baseUrlEnv.map((name) => `${name}=${proxyUrl}/${route.name}`),
      ...Object.entries(route.env).map(([name, value]) => `${name}=${value}`),
    ]),
  ]);
}
