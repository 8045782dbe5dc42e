/**
 * The port relay program: ours, run by the JS runtime of the backend's helper image
 * (`config.proxyImageDigest`, the egress proxy's image) inside the sandbox's relay container,
 * which joins the keeper's network namespace (`NetworkMode: container:<keeper>`). Passed as
 * this one file's text on the container's command line like the egress proxy program (it
 * imports nothing at its top level, so it needs nothing else in the image).
 *
 * It carries many TCP connections to `127.0.0.1:<port>` of that namespace over its own stdin
 * and stdout, which the controller holds through the Engine (container attach). Both ways
 * the bytes are frames: a 9-byte header — type (u8), connection ID (u32, big-endian),
 * payload length (u32, big-endian) — then the payload, at most {@linkcode MAX_FRAME_PAYLOAD}
 * bytes. Flow control is by credit, per connection and direction: a side sends at most
 * {@linkcode RELAY_WINDOW_BYTES} data bytes the other has not yet granted back
 * (`credit` frames, sent once the bytes were delivered: written to the guest socket here,
 * read by the host's consumer there), so neither side ever holds more than one window per
 * connection and one connection's slow reader never stalls another.
 *
 * The controller does not run this program: it reads the file's text (like the proxy's,
 * through `egress/program_source.ts`) and imports its frame codec (pure functions: no I/O, no
 * runtime API). Importing it starts nothing: the relay starts only when this file's text is
 * the main program and its first argument is {@linkcode RELAY_ARGUMENT}
 * (`node --input-type=module-typescript -e <text> agentcell-relay`); it ends when its stdin
 * ends (the controller's attach closed: the controller stopped the sandbox, or died).
 *
 * @module
 */

/** Frame types (the first header byte). */
export const FRAME: {
  readonly open: 1;
  readonly data: 2;
  readonly end: 3;
  readonly reset: 4;
  readonly credit: 5;
  readonly opened: 6;
  readonly refused: 7;
  readonly closed: 8;
  readonly ready: 9;
} = Object.freeze({
  /** Host → relay: connect the ID to the port in the payload (u16, big-endian). */
  open: 1,
  /** Either way: bytes of the connection. */
  data: 2,
  /** Either way: no more bytes from this side (FIN, a half-close). */
  end: 3,
  /** Either way: the connection is abandoned (host) or failed (relay); payload: a reason. */
  reset: 4,
  /** Either way: the sender delivered this many more bytes (u32, big-endian). */
  credit: 5,
  /** Relay → host: connected. */
  opened: 6,
  /** Relay → host: the connect failed; payload: the error code (`ECONNREFUSED`). */
  refused: 7,
  /** Relay → host: the guest socket is closed and its ID forgotten. */
  closed: 8,
  /** Relay → host, ID 0, once: the relay runs and reads its stdin. */
  ready: 9,
});

/** Bytes of a frame header. */
export const FRAME_HEADER_BYTES = 9;

/** Largest frame payload, in bytes: 64 KiB. */
export const MAX_FRAME_PAYLOAD = 64 * 1024;

/** Data bytes one side may send on one connection before the other grants them back: 1 MiB. */
export const RELAY_WINDOW_BYTES = 1024 * 1024;

/** Credit is granted back in batches of at least this many bytes (or when nothing is left to grant for). */
export const CREDIT_BATCH_BYTES = RELAY_WINDOW_BYTES / 4;

/** Most connections the relay holds at once (the controller's own bound is lower). */
export const RELAY_MAX_CONNECTIONS = 4096;

/** The first argument after the program text that makes it run as the relay. */
export const RELAY_ARGUMENT = "agentcell-relay";

/** One decoded frame; a `data` payload is a view into the chunk it arrived in. */
export interface RelayFrame {
  readonly type: number;
  readonly id: number;
  readonly payload: Uint8Array;
}

/**
 * Encode one frame.
 *
 * @param type one of {@linkcode FRAME}
 * @param id connection ID, 0 … 2^32 − 1
 * @param payload at most {@linkcode MAX_FRAME_PAYLOAD} bytes
 * @returns header and payload in one buffer
 */
export function encodeFrame(type: number, id: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES + payload.byteLength);
  writeHeader(bytes, type, id, payload.byteLength);
  bytes.set(payload, FRAME_HEADER_BYTES);
  return bytes;
}

/**
 * Encode a frame header alone (the payload is sent after it, unchanged).
 *
 * @returns the 9 header bytes
 */
export function encodeHeader(type: number, id: number, length: number): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  writeHeader(bytes, type, id, length);
  return bytes;
}

function writeHeader(bytes: Uint8Array, type: number, id: number, length: number): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, FRAME_HEADER_BYTES);
  view.setUint8(0, type);
  view.setUint32(1, id);
  view.setUint32(5, length);
}

/** A u32 payload (credit). */
export function u32(value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value);
  return bytes;
}

/** The u32 of a payload. */
export function readU32(payload: Uint8Array): number {
  return new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0);
}

/**
 * An incremental frame decoder: feed it chunks in order, get frames. A `data` frame's payload
 * is handed out piece by piece as it arrives (views into the chunks, never joined), so one
 * frame may come out as several `data` frames of the same ID; every other frame comes out
 * whole. It holds at most a partial header and one partial control frame (≤ 9 +
 * {@linkcode MAX_FRAME_PAYLOAD} bytes).
 */
export class FrameDecoder {
  #header = new Uint8Array(FRAME_HEADER_BYTES);
  #headerBytes = 0;
  /** The frame being read, once its header is complete. */
  #current: { type: number; id: number; remaining: number; parts: Uint8Array[] } | undefined;

  /**
   * Decode what `chunk` completes.
   *
   * @throws {RangeError} for a declared payload above {@linkcode MAX_FRAME_PAYLOAD} or an unknown type
   */
  push(chunk: Uint8Array): RelayFrame[] {
    const frames: RelayFrame[] = [];
    let offset = 0;
    while (offset < chunk.byteLength || (this.#current !== undefined && this.#current.remaining === 0)) {
      if (this.#current === undefined) {
        const take = Math.min(FRAME_HEADER_BYTES - this.#headerBytes, chunk.byteLength - offset);
        this.#header.set(chunk.subarray(offset, offset + take), this.#headerBytes);
        this.#headerBytes += take;
        offset += take;
        if (this.#headerBytes < FRAME_HEADER_BYTES) break;
        this.#headerBytes = 0;
        const view = new DataView(this.#header.buffer);
        const type = view.getUint8(0);
        const length = view.getUint32(5);
        if (type < FRAME.open || type > FRAME.ready) throw new RangeError(`frame type ${type} is unknown`);
        if (length > MAX_FRAME_PAYLOAD) throw new RangeError(`a frame declares ${length} payload bytes, more than ${MAX_FRAME_PAYLOAD}`);
        this.#current = { type, id: view.getUint32(1), remaining: length, parts: [] };
      }
      const current = this.#current;
      const take = Math.min(current.remaining, chunk.byteLength - offset);
      const piece = chunk.subarray(offset, offset + take);
      offset += take;
      current.remaining -= take;
      if (current.type === FRAME.data) {
        if (piece.byteLength > 0) frames.push({ type: current.type, id: current.id, payload: piece });
      } else if (piece.byteLength > 0) current.parts.push(piece.slice());
      if (current.remaining > 0) break;
      this.#current = undefined;
      if (current.type !== FRAME.data) frames.push({ type: current.type, id: current.id, payload: joinParts(current.parts) });
    }
    return frames;
  }

  /** Bytes of an incomplete frame held (header and control payload). */
  get pendingBytes(): number {
    return this.#headerBytes + (this.#current?.parts.reduce((sum, part) => sum + part.byteLength, 0) ?? 0);
  }
}

function joinParts(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) (joined.set(part, offset), offset += part.byteLength);
  return joined;
}

/** The part of a `node:net` socket the relay uses. */
export interface RelaySocket {
  write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean;
  end(): void;
  destroy(): void;
  pause(): void;
  resume(): void;
  setNoDelay(noDelay: boolean): void;
  on(event: "connect" | "end" | "close", listener: () => void): unknown;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "error", listener: (error: Error & { code?: string }) => void): unknown;
}

/** What the relay runs on. */
export interface RelayIo {
  /** Opens a TCP connection to `127.0.0.1:port` (allow half-open). */
  connect(port: number): RelaySocket;
  /** Writes bytes to the controller; `false`: wait for `drain` before writing more. */
  write(bytes: Uint8Array): boolean;
}

/** One relayed connection. */
interface Link {
  readonly socket: RelaySocket;
  connected: boolean;
  /** Bytes we may still send to the host. */
  credit: number;
  /** Guest bytes read beyond the credit, waiting for more of it. */
  held: Uint8Array[];
  /** The guest ended its side; END goes out once `held` is sent. */
  guestEnded: boolean;
  /** Bytes written to the guest socket, flushed, not yet granted back. */
  grant: number;
  /** Bytes sent to the guest socket and not yet flushed. */
  unflushed: number;
  failed: boolean;
  /**
   * The socket closed while guest bytes (or its END) still waited for credit: CLOSED goes out
   * once they are sent, and the link stays known until then (credit frames still reach it).
   */
  closePending: boolean;
}

/** The relay: `receive` takes the controller's bytes; `drained` resumes after a full stdout. */
export interface Relay {
  receive(chunk: Uint8Array): void;
  drained(): void;
  /** Destroys every connection. */
  close(): void;
  /** Connections held. */
  readonly size: number;
}

/**
 * Run the relay over `io`.
 *
 * @throws {RangeError} from `receive` when the controller's frames are malformed (the caller exits)
 */
export function startRelay(io: RelayIo): Relay {
  const links = new Map<number, Link>();
  const decoder = new FrameDecoder();
  let blocked = false;
  const send = (type: number, id: number, payload?: Uint8Array) => {
    if (!io.write(encodeFrame(type, id, payload))) blocked = true;
  };
  const sendData = (id: number, link: Link, chunk: Uint8Array) => {
    for (let offset = 0; offset < chunk.byteLength; offset += MAX_FRAME_PAYLOAD) {
      const piece = chunk.subarray(offset, offset + MAX_FRAME_PAYLOAD);
      if (!io.write(encodeHeader(FRAME.data, id, piece.byteLength))) blocked = true;
      if (!io.write(piece)) blocked = true;
    }
    link.credit -= chunk.byteLength;
  };
  const text = (value: string) => new TextEncoder().encode(value.slice(0, 200));
  /** Send what the credit allows; pause the socket while anything is held or stdout is full. */
  const flush = (id: number, link: Link) => {
    while (link.held.length > 0 && link.credit > 0) {
      const chunk = link.held[0];
      if (chunk.byteLength <= link.credit) {
        link.held.shift();
        sendData(id, link, chunk);
      } else {
        const allowed = link.credit;
        sendData(id, link, chunk.subarray(0, allowed));
        link.held[0] = chunk.subarray(allowed);
      }
    }
    if (link.held.length === 0 && link.guestEnded) {
      link.guestEnded = false;
      send(FRAME.end, id);
    }
    if (link.closePending && link.held.length === 0 && !link.guestEnded) {
      links.delete(id);
      send(FRAME.closed, id);
      return;
    }
    if (link.held.length > 0 || blocked) link.socket.pause();
    else link.socket.resume();
  };
  const open = (id: number, port: number) => {
    if (links.has(id) || links.size >= RELAY_MAX_CONNECTIONS) return send(FRAME.refused, id, text("EMFILE"));
    const socket = io.connect(port);
    const link: Link = { socket, connected: false, credit: RELAY_WINDOW_BYTES, held: [], guestEnded: false, grant: 0, unflushed: 0, failed: false, closePending: false };
    links.set(id, link);
    socket.setNoDelay(true);
    socket.on("connect", () => {
      link.connected = true;
      send(FRAME.opened, id);
      if (blocked) socket.pause();
    });
    socket.on("data", (chunk) => {
      if (link.credit >= chunk.byteLength && link.held.length === 0) sendData(id, link, chunk);
      else {
        link.held.push(chunk);
        flush(id, link);
      }
      if (blocked || link.credit <= 0) socket.pause();
    });
    socket.on("end", () => {
      link.guestEnded = true;
      flush(id, link);
    });
    socket.on("error", (error) => {
      link.failed = true;
      send(link.connected ? FRAME.reset : FRAME.refused, id, text(error.code ?? error.message));
    });
    socket.on("close", () => {
      if (links.get(id) !== link) return;
      // A guest that sent its last bytes and FIN faster than the host's credit allowed: they
      // were read (held), so they and the END go first, then CLOSED (from flush).
      if (!link.failed && (link.held.length > 0 || link.guestEnded)) {
        link.closePending = true;
        return;
      }
      links.delete(id);
      if (link.connected || !link.failed) send(FRAME.closed, id);
    });
  };
  const grantBack = (id: number, link: Link, bytes: number) => {
    link.unflushed -= bytes;
    link.grant += bytes;
    if (link.grant >= CREDIT_BATCH_BYTES || link.unflushed === 0) {
      send(FRAME.credit, id, u32(link.grant));
      link.grant = 0;
    }
  };
  const handle = (frame: RelayFrame) => {
    const { type, id, payload } = frame;
    if (type === FRAME.open) {
      if (payload.byteLength !== 2) throw new RangeError("an open frame's payload is not a port");
      return open(id, (payload[0] << 8) | payload[1]);
    }
    const link = links.get(id);
    // Frames for a connection already gone (it closed while they were on their way) are dropped.
    if (link === undefined) return;
    if (type === FRAME.data) {
      if (payload.byteLength === 0) return;
      // A view into a stdin chunk, which Node never reuses: written as it is.
      const bytes = payload;
      link.unflushed += bytes.byteLength;
      link.socket.write(bytes, (error) => {
        if (!error && links.get(id) === link) grantBack(id, link, bytes.byteLength);
      });
    } else if (type === FRAME.end) link.socket.end();
    else if (type === FRAME.reset) {
      links.delete(id);
      link.socket.destroy();
    } else if (type === FRAME.credit) {
      link.credit += readU32(payload);
      flush(id, link);
    } else throw new RangeError(`frame type ${type} does not go to the relay`);
  };
  send(FRAME.ready, 0);
  return {
    receive(chunk) {
      for (const frame of decoder.push(chunk)) handle(frame);
    },
    drained() {
      blocked = false;
      for (const [id, link] of links) if (link.connected) flush(id, link);
    },
    close() {
      for (const link of links.values()) link.socket.destroy();
      links.clear();
    },
    get size() {
      return links.size;
    },
  };
}

// Run as the relay container's program: `node --input-type=module-typescript -e <text>
// agentcell-relay` (with `-e`, `process.argv[1]` is the first argument after the text).
const runtime = (globalThis as { process?: { argv?: string[] } }).process;
if (runtime?.argv?.[1] === RELAY_ARGUMENT && runtime.argv.length === 2) {
  const { connect } = await import("node:net");
  const process = (await import("node:process")).default;
  const relay = startRelay({
    connect: (port) => connect({ host: "127.0.0.1", port, allowHalfOpen: true }) as unknown as RelaySocket,
    write: (bytes) => process.stdout.write(bytes),
  });
  process.stdout.on("drain", () => relay.drained());
  process.stdin.on("data", (chunk: Uint8Array) => {
    try {
      relay.receive(chunk);
    } catch (error) {
      process.stderr.write(`relay: ${(error as Error).message}\n`);
      process.exit(2);
    }
  });
  const end = () => {
    relay.close();
    process.exit(0);
  };
  process.stdin.on("end", end);
  process.stdin.on("error", end);
  // As PID 1 of its container, node would ignore a signal it has no handler for.
  process.on("SIGTERM", end);
}
