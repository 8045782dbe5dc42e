/**
 * What a Docker sandbox offers for reaching its guest servers: `connect`, `fetch` and
 * `forwardPort` over one relay, and their end when the sandbox stops (every connection and
 * forward ends with the stop cause at once; the relay is removed before the keeper).
 *
 * @module
 */
import type { SandboxError } from "../../sandbox/errors.ts";
import type { SandboxConnectOptions, SandboxFetchOptions, SandboxForwardOptions, SandboxPortForward } from "../../sandbox/ports.ts";
import type { RelayConnection } from "./_connection.ts";
import { connectRelayed, type ConnectHost, type RelayConnectOptions } from "./connect.ts";
import { fetchRelayed } from "./fetch.ts";
import { type DockerPortForward, forwardRelayed } from "./forward.ts";
import { type RelayContext, SandboxRelay } from "./relay.ts";

/** What the ports need from their sandbox. */
export interface PortsContext extends RelayContext {
  /** Aborted with the stop cause when the sandbox stops. */
  readonly stopping: AbortSignal;
  /** Throws the stop cause (or a stopped error for `action`) unless the sandbox runs. */
  readonly assertRunning: (action: string) => void;
}

/** The ports of one sandbox (made on first use). */
export class DockerSandboxPorts {
  readonly #relay: SandboxRelay;
  readonly #host: ConnectHost;
  readonly #forwards = new Set<DockerPortForward>();
  readonly #stopping: AbortSignal;

  constructor(context: PortsContext) {
    this.#relay = new SandboxRelay(context);
    this.#host = { relay: this.#relay, assertRunning: context.assertRunning };
    this.#stopping = context.stopping;
    const onStop = () => this.#end(context.stopping.reason as SandboxError);
    if (context.stopping.aborted) onStop();
    else context.stopping.addEventListener("abort", onStop, { once: true });
  }

  /** Every connection and forward ends with `cause` now (the relay's removal follows in `stop`). */
  #end(cause: SandboxError): void {
    this.#relay.current?.fail(cause);
    for (const forward of this.#forwards) void forward.end("sandbox_stopped");
  }

  /** See `SandboxPorts.connect`. */
  connect(port: number, options?: RelayConnectOptions): Promise<RelayConnection> {
    return connectRelayed(this.#host, port, options);
  }

  /** See `SandboxPorts.fetch`. */
  fetch(port: number, request: Request | string | URL, options?: SandboxFetchOptions): Promise<Response> {
    return fetchRelayed((target, connectOptions: SandboxConnectOptions) => this.connect(target, connectOptions), port, request, options);
  }

  /** See `SandboxPorts.forwardPort`. */
  async forwardPort(port: number, options?: SandboxForwardOptions): Promise<SandboxPortForward> {
    const forward = await forwardRelayed((target, connectOptions) => this.connect(target, connectOptions), port, options, (action) => {
      this.#host.assertRunning(action);
      this.#relay.assertPossible(action);
    });
    this.#forwards.add(forward);
    forward.closed.finally(() => this.#forwards.delete(forward)).catch(() => {});
    if (this.#stopping.aborted) void forward.end("sandbox_stopped");
    return forward;
  }

  /**
   * Compute stops: end everything with `cause`, then remove the relay.
   *
   * @throws {SandboxError} when the relay's removal fails
   */
  async stop(cause: SandboxError): Promise<void> {
    this.#end(cause);
    await this.#relay.close(cause);
  }
}
