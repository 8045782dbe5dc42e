// The floors of the stdout row: an exec attach over a bare socket of the running runtime,
// with a hand-written upgrade request, no HTTP client and no demultiplexing; the bytes after
// the `101` head are only counted. `node:net` runs on every runtime; `Deno.connect` and
// `Bun.connect` are the native sockets of Deno and Bun (benchmark code may call runtime
// APIs directly: it measures them).
import { connect } from "node:net";
import type { DockerEngine } from "../lib/engine/client.ts";
import { createExec } from "../lib/engine/exec.ts";
import { execBody } from "./_exec_steps.ts";

/** The part of a Bun socket the floors use. */
export interface BunFloorSocket {
  write(data: Uint8Array): number;
  end(): void;
}

/** The handlers of a Bun socket the floors set. */
export interface BunFloorHandlers {
  open?(socket: BunFloorSocket): void;
  data(socket: BunFloorSocket, data: Uint8Array): void;
  drain?(socket: BunFloorSocket): void;
  end(socket: BunFloorSocket): void;
  close(socket: BunFloorSocket): void;
  error(socket: BunFloorSocket, error: Error): void;
}

declare const Bun: {
  connect(options: { unix: string; socket: BunFloorHandlers }): Promise<BunFloorSocket>;
};

/** `Bun.connect` to the Unix socket `unix`; Bun only. */
export function bunConnect(unix: string, socket: BunFloorHandlers): Promise<BunFloorSocket> {
  return Bun.connect({ unix, socket });
}

const CRLF2 = [0x0d, 0x0a, 0x0d, 0x0a];

/** Counts the bytes after a `101` head, chunk by chunk. */
export class HeadThenCount {
  bytes = 0;
  #head: number[] = [];
  #done = false;

  /** Takes one chunk; throws when the head is not `101`. */
  take(chunk: Uint8Array): void {
    if (this.#done) {
      this.bytes += chunk.byteLength;
      return;
    }
    for (let index = 0; index < chunk.byteLength; index++) {
      this.#head.push(chunk[index]);
      const n = this.#head.length;
      if (n >= 4 && CRLF2.every((byte, at) => this.#head[n - 4 + at] === byte)) {
        const text = String.fromCharCode(...this.#head.slice(0, 12));
        if (text !== "HTTP/1.1 101") throw new Error(`Cannot attach: the Engine answered ${String.fromCharCode(...this.#head.slice(0, 80))}`);
        this.#done = true;
        this.bytes += chunk.byteLength - index - 1;
        return;
      }
    }
  }
}

/** The hand-written `POST /exec/{id}/start` asking for the attach stream (`Upgrade: tcp`). */
export function execStartRequest(apiVersion: string, execId: string): Uint8Array {
  const body = JSON.stringify({ Detach: false, Tty: false });
  return new TextEncoder().encode(
    `POST /v${apiVersion}/exec/${execId}/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
}

async function upgradeHead(engine: DockerEngine, keeperId: string, cmd: readonly string[], user: { uid: number; gid: number }): Promise<Uint8Array> {
  const execId = await createExec(engine, keeperId, execBody(cmd, user));
  return execStartRequest(await engine.apiVersion(), execId);
}

/** The floor over `node:net` ('data' events, flowing mode); resolves with the bytes after the head. */
export async function netFloor(engine: DockerEngine, socketPath: string, keeperId: string, cmd: readonly string[], user: { uid: number; gid: number }): Promise<number> {
  const head = await upgradeHead(engine, keeperId, cmd, user);
  return await new Promise<number>((resolve, reject) => {
    const counter = new HeadThenCount();
    const socket = connect(socketPath);
    socket.on("connect", () => socket.write(head));
    socket.on("data", (chunk: Uint8Array) => {
      try {
        counter.take(chunk);
      } catch (error) {
        socket.destroy();
        reject(error);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(counter.bytes));
    socket.on("end", () => socket.destroy());
  });
}

/**
 * How the Deno floor reads: `reused` into one 64 KiB buffer, keeping nothing (the bare
 * floor); `owned` the same, plus a copy of each read into a fresh buffer of its length — the
 * least any stream that hands chunks to a caller must do, and nothing else; `readable`
 * through Deno's own `conn.readable` with a default reader (what a Deno program reading a
 * socket as a Web Stream gets).
 */
export type DenoFloorReads = "reused" | "owned" | "readable";

/** The floor over `Deno.connect`; Deno only. */
export async function denoFloor(
  engine: DockerEngine,
  socketPath: string,
  keeperId: string,
  cmd: readonly string[],
  user: { uid: number; gid: number },
  reads: DenoFloorReads = "reused",
): Promise<number> {
  const head = await upgradeHead(engine, keeperId, cmd, user);
  const conn = await Deno.connect({ transport: "unix", path: socketPath });
  let closed = false;
  try {
    for (let offset = 0; offset < head.byteLength;) offset += await conn.write(head.subarray(offset));
    const counter = new HeadThenCount();
    if (reads === "readable") {
      closed = true; // the readable closes the connection at its end
      for await (const chunk of conn.readable) counter.take(chunk);
      return counter.bytes;
    }
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const length = await conn.read(buffer);
      if (length === null) return counter.bytes;
      counter.take(reads === "owned" ? buffer.slice(0, length) : buffer.subarray(0, length));
    }
  } finally {
    if (!closed) conn.close();
  }
}

/** The floor over `Bun.connect` ('data' handler); Bun only. */
export async function bunFloor(engine: DockerEngine, socketPath: string, keeperId: string, cmd: readonly string[], user: { uid: number; gid: number }): Promise<number> {
  const head = await upgradeHead(engine, keeperId, cmd, user);
  return await new Promise<number>((resolve, reject) => {
    const counter = new HeadThenCount();
    bunConnect(socketPath, {
      open: (socket) => {
        if (socket.write(head) !== head.byteLength) reject(new Error("Cannot attach: the request head was not written at once"));
      },
      data: (socket, chunk) => {
        try {
          counter.take(chunk);
        } catch (error) {
          socket.end();
          reject(error);
        }
      },
      end: (socket) => socket.end(),
      close: () => resolve(counter.bytes),
      error: (_socket, error) => reject(error),
    }).catch(reject);
  });
}
