/**
 * The TCP socket buffer caps of a sandbox's network namespaces: `net.ipv4.tcp_rmem` and
 * `net.ipv4.tcp_wmem` (`HostConfig.Sysctls`, Engine API v1.44 `ContainerCreate`), sent for
 * the keeper (every network kind, `none` included: the guest's loopback sockets are
 * kernel memory too), the export accessor and the egress proxy.
 *
 * Why: socket buffers are kernel memory that cgroup v1 does not charge to the container
 * (`memory.kmem.tcp` is off unless enabled), so an unread tunnel pins host-wide TCP memory
 * (`/proc/net/sockstat` `TCP: mem`) up to the host's own per-socket maximum (32 MiB receive
 * on the build machines). Both sysctls are per network namespace since Linux 4.15, and the
 * Engine accepts them for a container with its own network namespace with a read-only
 * root, no capabilities and a non-root user (measured on Engine 28.5, runc, kernel 6.18).
 *
 * The values: `min default max` in bytes. A maximum of 1 MiB per direction allows about
 * 20 MiB/s per connection at 50 ms round trip (window ÷ RTT) and 100 MiB/s at 10 ms, which
 * is more than an agent's downloads need, while a socket holds at most about 2 MiB (its
 * receive plus send buffer; the kernel counts `truesize`, so this is the real bound, plus
 * a few pages of overshoot). The defaults are the kernel's own (128 KiB receive, 16 KiB
 * send); autotuning grows a busy socket towards the maximum.
 *
 * Per tunnel of an allowlist sandbox there are three sockets: the guest's end (keeper's
 * namespace) and the proxy's two (guest side and upstream), so one tunnel pins at most
 * about {@linkcode TUNNEL_SOCKET_BYTES} (6 MiB) and the proxy's tunnels at most
 * `maxConnections` × 6 MiB (384 MiB at the default 64). A guest's own loopback sockets are
 * bounded by its open files (`ulimits.nofile`) × 2 MiB.
 *
 * gVisor (`runsc`): the guest's sockets live in gVisor's own netstack, whose buffers are the
 * sentry's memory, charged to the container's memory limit. runsc accepts the sysctls but
 * ignores them (measured: the guest reads gVisor's `4096 1048576 4194304` either way), so
 * they are not sent for a `runsc` keeper. The proxy always runs under runc, named in its
 * `HostConfig.Runtime` and read back (a daemon whose default runtime is runsc cannot run it
 * without the caps), and always gets them.
 *
 * @module
 */

/** Largest receive and send buffer of one socket (`tcp_rmem`/`tcp_wmem` max), bytes: 1 MiB. */
export const SOCKET_BUFFER_MAX_BYTES = 1024 * 1024;

/**
 * Kernel memory one allowlist tunnel can pin, bytes: three sockets × (receive + send
 * maximum) = 6 MiB.
 */
export const TUNNEL_SOCKET_BYTES = 3 * 2 * SOCKET_BUFFER_MAX_BYTES;

/** The sysctls of a runc container: `min default max`, bytes. */
const RUNC_SYSCTLS: Readonly<Record<string, string>> = Object.freeze({
  "net.ipv4.tcp_rmem": `4096 131072 ${SOCKET_BUFFER_MAX_BYTES}`,
  "net.ipv4.tcp_wmem": `4096 16384 ${SOCKET_BUFFER_MAX_BYTES}`,
});

/**
 * `HostConfig.Sysctls` of a container under `runtime`: the caps for `runc`, none for
 * `runsc` (gVisor ignores them; see the module documentation).
 */
export function socketBufferSysctls(runtime: "runc" | "runsc"): Record<string, string> {
  return runtime === "runc" ? { ...RUNC_SYSCTLS } : {};
}
