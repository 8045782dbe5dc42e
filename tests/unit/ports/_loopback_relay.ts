// The relay program and the controller's channel joined in one process (no engine): the
// channel's frames go to `startRelay`'s `receive`, the relay's output comes back as the
// channel's output stream, and the relay connects to loopback servers of the test.
import { connect } from "node:net";
import { SandboxConnectionError } from "../../../lib/sandbox/ports.ts";
import { RelayChannel } from "../../../lib/docker/ports/_channel.ts";
import { type Relay, type RelaySocket, startRelay } from "../../../lib/docker/ports/relay_program.ts";

/** A channel and its relay; `cut()` ends the relay's output as a lost relay would. */
export interface LoopbackRelay {
  readonly channel: RelayChannel;
  readonly relay: Relay;
  /** Bytes the relay wrote (frames). */
  written(): number;
  /** Ends the relay's output stream (the channel sees its relay lost). */
  cut(): void;
  /** Feeds raw bytes to the channel as if the relay wrote them. */
  inject(bytes: Uint8Array): void;
}

/** Start a relay and its channel. */
export function loopbackRelay(): LoopbackRelay {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let total = 0;
  const output = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const channel = new RelayChannel(output, {
    write: (bytes) => {
      // A copy, as a pipe would: the channel may reuse nothing, but the relay keeps views.
      const copy = bytes.slice();
      return new Promise((resolve) => setTimeout(() => {
        relay.receive(copy);
        resolve();
      }, 0));
    },
  }, (why) => new SandboxConnectionError("relay_lost", `Cannot relay: the relay was lost (${why})`));
  const relay: Relay = startRelay({
    connect: (port) => connect({ host: "127.0.0.1", port, allowHalfOpen: true }) as unknown as RelaySocket,
    write: (bytes) => {
      total += bytes.byteLength;
      try {
        controller.enqueue(bytes.slice());
      } catch {
        // Cut already.
      }
      return true;
    },
  });
  return {
    channel,
    relay,
    written: () => total,
    cut: () => controller.close(),
    inject: (bytes) => controller.enqueue(bytes),
  };
}
