/**
 * The port relay of one sandbox: created on the first `connect()` (recorded in the recovery
 * log before its create, read back after, attached before it starts), shared by every later
 * connection, removed when the sandbox stops. A relay that ends on its own (killed, OOM,
 * removed from outside) fails its open connections with `relay_lost`; the next `connect()`
 * removes what is left of it and creates a new one.
 *
 * @module
 */
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxConflictError,
  SandboxDeadlineError,
  type SandboxError,
  SandboxUnsupportedError,
} from "../../sandbox/errors.ts";
import { SandboxConnectionError } from "../../sandbox/ports.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { attachContainerStdio } from "../../engine/container_attach.ts";
import { createContainer, inspectContainer, startContainer } from "../../engine/containers.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import type { EngineUpgrade } from "../../engine/http/mod.ts";
import { demultiplex } from "../../engine/frames/demultiplex.ts";
import { raceDeadline } from "../../streams/deadline.ts";
import { resourceLabels } from "../names.ts";
import type { RecoveryLog } from "../recovery/log.ts";
import { createRecorded, isOwned, removeRecorded, RESOURCE_TABLE } from "../recovery/resources.ts";
import { assertCreateWarnings } from "../datasets/warnings.ts";
import { programSource } from "../egress/program_source.ts";
import { asSandboxError } from "../_engine_errors.ts";
import { RelayChannel } from "./_channel.ts";
import { type RelaySpec, relayCreateBody, verifyRelay } from "./relay_container.ts";

/** The fix when the helper image cannot run the relay. */
const NEEDS_NODE = "config.proxyImageDigest must name an image with Node.js 23.6 or newer as node on its PATH";

/** Most bytes of the relay's stderr kept for messages. */
const STDERR_TAIL_BYTES = 2048;

/** What the relay needs from its sandbox. */
export interface RelayContext {
  readonly engine: DockerEngine;
  readonly log: RecoveryLog;
  /** The relay's exact name (`names.relay`). */
  readonly name: string;
  /** The keeper's full ID. */
  readonly keeperId: string;
  /** The relay's user (`config.keeperUser`). */
  readonly user: { readonly uid: number; readonly gid: number };
  /** `config.proxyImageDigest`, or `undefined` (then `connect()` is refused). */
  readonly imageDigest: string | undefined;
  /** The image platform containers are created with. */
  readonly platform: string;
  /** The keeper's OCI runtime (`runsc` cannot be joined). */
  readonly runtime: "runc" | "runsc";
  /** Bound of each cleanup call, milliseconds (`deadlines.cleanupMs`). */
  readonly cleanupMs: number;
}

/** The relay of one sandbox (see the module doc). */
export class SandboxRelay {
  readonly #context: RelayContext;
  #channel: RelayChannel | undefined;
  #attach: EngineUpgrade | undefined;
  #task: Promise<RelayChannel> | undefined;
  #closed: SandboxError | undefined;

  constructor(context: RelayContext) {
    this.#context = context;
  }

  /** The channel once created and not ended, else `undefined`. */
  get current(): RelayChannel | undefined {
    return this.#channel?.failure === undefined ? this.#channel : undefined;
  }

  /**
   * The running relay's channel, creating the relay first when there is none (or the last
   * one ended). Concurrent calls share one creation.
   *
   * @param action for messages ("connect to port 3000")
   * @param timeoutMs bound of the creation
   * @throws {SandboxConfigurationError} without `config.proxyImageDigest`, or when Deno denies reading the program
   * @throws {SandboxUnsupportedError} under gVisor, or when the relay reads back differently or never gets ready
   * @throws {SandboxConflictError} when its name is taken
   * @throws {SandboxDeadlineError} past `timeoutMs`
   */
  channel(action: string, timeoutMs: number): Promise<RelayChannel> {
    if (this.#closed) return Promise.reject(this.#closed);
    const current = this.current;
    if (current) return Promise.resolve(current);
    this.#task ??= this.#create(action, timeoutMs).finally(() => {
      this.#task = undefined;
    });
    return this.#task;
  }

  /**
   * Throw when this sandbox can have no relay at all: no helper image, or gVisor. Checked
   * before a relay is made, and by `forwardPort()` before it listens (so a forward that could
   * never relay is refused at once, not on each connection).
   *
   * @throws {SandboxConfigurationError} without `config.proxyImageDigest`
   * @throws {SandboxUnsupportedError} under gVisor
   */
  assertPossible(action: string): void {
    const context = this.#context;
    if (context.imageDigest === undefined || context.log.record.identity.relayImageDigest === undefined) {
      throw new SandboxConfigurationError(
        `Cannot ${action}: the port relay needs the backend's helper image: set config.proxyImageDigest to the exact ID of a local image with Node.js 23.6 or newer as node`,
      );
    }
    if (context.runtime === "runsc") {
      throw new SandboxUnsupportedError(
        `Cannot ${action}: the sandbox runs under gVisor (runsc), whose guest sockets live in its own network stack, which a relay container cannot join; use a runc profile to reach guest servers`,
      );
    }
  }

  async #create(action: string, timeoutMs: number): Promise<RelayChannel> {
    const context = this.#context;
    const { engine, log } = context;
    this.assertPossible(action);
    const startedAt = Date.now();
    const remaining = () => {
      const left = timeoutMs - (Date.now() - startedAt);
      if (left <= 0) throw new SandboxDeadlineError(`Cannot ${action}: the port relay was not ready within ${timeoutMs} ms (options.timeoutMs)`);
      return left;
    };
    // What is left of an earlier relay goes first (it ended on its own).
    if (this.#channel !== undefined) {
      this.#attach?.abort();
      this.#channel = undefined;
      this.#attach = undefined;
      await removeRecorded(engine, log, "relay", { timeoutMs: context.cleanupMs });
    }
    const spec: RelaySpec = {
      imageDigest: context.imageDigest!, // (assertPossible above)
      user: context.user,
      program: await programSource(new URL("./relay_program.ts", import.meta.url), action, "the port relay program"),
      keeperId: context.keeperId,
      labels: resourceLabels(log.record, "relay"),
    };
    log.add("relay");
    let warnings: readonly string[] = [];
    let attach: EngineUpgrade | undefined;
    try {
      const id = await createRecorded(engine, log, "relay", "create port relay container", async () => {
        const created = await createContainer(engine, context.name, relayCreateBody(spec), { timeoutMs: remaining(), platform: context.platform });
        warnings = created.warnings;
        return created.id;
      }, { timeoutMs: context.cleanupMs });
      assertCreateWarnings(warnings, 0, `${action}: creating the port relay`);
      const owned = await RESOURCE_TABLE.relay.inspect(engine, log.record, id, { timeoutMs: remaining() });
      if (!owned || !isOwned(log.record, "relay", owned)) {
        throw new SandboxConflictError(`Cannot ${action}: container ${context.name} reads back with another name, labels, image or user`);
      }
      verifyRelay(await inspectContainer(engine, id, { timeoutMs: remaining() }), spec, false);
      // Attached before the start, so the relay's first frame is not missed.
      attach = await attachContainerStdio(engine, id, { connectTimeoutMs: remaining(), headerTimeoutMs: remaining() });
      const output = demultiplex(attach.readable, { maxBufferedOutputBytes: 4 * 1024 * 1024, onFault: () => undefined });
      let stderr = "";
      void output.stderr.pipeTo(new WritableStream({
        write: (chunk) => void (stderr = (stderr + new TextDecoder().decode(chunk)).slice(-STDERR_TAIL_BYTES)),
      })).catch(() => {});
      const writer = attach.writable.getWriter();
      const channel = new RelayChannel(output.stdout, { write: (bytes) => writer.write(bytes) }, (why, cause) =>
        new SandboxConnectionError(
          "relay_lost",
          `Cannot relay: the sandbox's port relay was lost (${why}${stderr.trim() ? `; it said: ${stderr.trim().slice(-300)}` : ""}), so the connection was cut`,
          { cause },
        ));
      await startContainer(engine, id, { timeoutMs: remaining() }).catch((error) => {
        if (!(error instanceof DockerEngineError && error.status === 400)) throw error;
        throw new SandboxUnsupportedError(`Cannot ${action}: the port relay cannot start (${error.message}); ${NEEDS_NODE}`, { cause: error });
      });
      verifyRelay(await inspectContainer(engine, id, { timeoutMs: remaining() }), spec, true);
      await raceDeadline(channel.ready, {
        timeoutMs: remaining(),
        onTimeout: () => new SandboxDeadlineError(`Cannot ${action}: the port relay was not ready within ${timeoutMs} ms (options.timeoutMs)`),
        onAbort: (reason) => new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: reason }),
      }).catch((error) => {
        if (error instanceof SandboxDeadlineError) throw error;
        throw new SandboxUnsupportedError(`Cannot ${action}: the port relay exited before it was ready (${stderr.trim().slice(-300) || "no output"}); ${NEEDS_NODE}`, {
          cause: error,
        });
      });
      if (this.#closed) throw this.#closed;
      this.#channel = channel;
      this.#attach = attach;
      return channel;
    } catch (error) {
      attach?.abort(error);
      await removeRecorded(engine, log, "relay", { timeoutMs: context.cleanupMs }).catch(() => {});
      throw asSandboxError(error, action);
    }
  }

  /**
   * Fail every connection with `cause` (at once), then remove the relay by its recorded ID.
   * Idempotent; later `channel()` calls reject with `cause`.
   *
   * @throws {SandboxError} when the removal fails (the record keeps the relay; destroy or recovery removes it)
   */
  async close(cause: SandboxError): Promise<void> {
    this.#closed ??= cause;
    this.#channel?.fail(cause);
    await this.#task?.catch(() => {});
    this.#channel?.fail(cause);
    this.#attach?.close().catch(() => {});
    if (this.#context.log.record.resources.relay === undefined) return;
    try {
      await removeRecorded(this.#context.engine, this.#context.log, "relay", { timeoutMs: this.#context.cleanupMs });
    } catch (error) {
      throw asSandboxError(error, "stop sandbox");
    }
  }
}
