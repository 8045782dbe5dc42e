// The host side of a WebSocket echo through a forward, with the runtime's own global
// WebSocket client (Deno, Bun and Node all have one): one text and one binary message,
// echoed exactly; then the forward's events until the connection's `closed`.
import assert from "node:assert/strict";
import type { SandboxForwardEvent, SandboxPortForward } from "../../../lib/sandbox/ports.ts";

/** Echo a text and a binary message through `forward.url`; returns the forward's events up to `closed`. */
export async function webSocketRoundTrip(forward: SandboxPortForward, binary: Uint8Array): Promise<SandboxForwardEvent[]> {
  const socket = new WebSocket(forward.url.replace("http:", "ws:"));
  socket.binaryType = "arraybuffer";
  await new Promise((resolve, reject) => (socket.onopen = resolve, socket.onerror = reject));
  const replies: unknown[] = [];
  const both = new Promise<void>((resolve) => {
    socket.onmessage = (event) => {
      replies.push(event.data);
      if (replies.length === 2) resolve();
    };
  });
  socket.send("hello through the relay");
  socket.send(binary);
  await both;
  assert.equal(replies[0], "hello through the relay");
  assert.deepEqual(new Uint8Array(replies[1] as ArrayBuffer), binary);
  socket.close();
  const seen: SandboxForwardEvent[] = [];
  for await (const event of forward.events) {
    seen.push(event);
    if (event.event === "closed") break;
  }
  return seen;
}
