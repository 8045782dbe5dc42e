// The floor of an exec round trip: the three Engine calls every client makes for one command
// (create the exec, start it with its attach stream until the stream ends, inspect it for the
// exit code) over bare `node:net` sockets with hand-written HTTP/1.1 and no client library,
// so nothing but the Engine's own time and the socket remain. Two shapes: a fresh connection
// per call (as our client does) and one kept-alive connection for create and inspect (as the
// docker CLI and dockerode's agent do). Benchmark code only: it trusts the Engine's framing.
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import { pollExit } from "./_exec_steps.ts";

const HEAD_END = "\r\n\r\n";

/** A `node:net` connection to `socketPath`, once connected. */
function open(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/** Sends `request` and reads one response with a `Content-Length` or chunked body. */
function exchange(socket: Socket, request: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Uint8Array) => {
      text += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
      const headEnd = text.indexOf(HEAD_END);
      if (headEnd < 0) return;
      const head = text.slice(0, headEnd).toLowerCase();
      const rest = text.slice(headEnd + HEAD_END.length);
      const length = /\r\ncontent-length: *(\d+)/u.exec(head);
      let body: string | undefined;
      if (length !== null) {
        if (rest.length >= Number(length[1])) body = rest.slice(0, Number(length[1]));
      } else if (rest.endsWith("0\r\n\r\n")) {
        body = rest.replace(/(^|\r\n)[0-9a-f]+\r\n/gu, "");
      }
      if (body === undefined) return;
      socket.off("data", onData);
      socket.off("error", reject);
      resolve({ status: Number(head.slice(9, 12)), body });
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.write(request);
  });
}

/** Starts the exec on its own connection and counts the attach stream's bytes until it ends. */
function startAndDrain(socketPath: string, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = '{"Detach":false,"Tty":false}';
    const socket = connect(socketPath);
    let head = "";
    let bytes = -1;
    socket.on("connect", () =>
      socket.write(
        `POST ${target} HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ));
    socket.on("data", (chunk: Uint8Array) => {
      if (bytes >= 0) {
        bytes += chunk.byteLength;
        return;
      }
      head += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
      const end = head.indexOf(HEAD_END);
      if (end < 0) return;
      if (!head.startsWith("HTTP/1.1 101")) {
        socket.destroy();
        reject(new Error(`Cannot start the exec: the Engine answered ${head.slice(0, 80)}`));
        return;
      }
      bytes = head.length - end - HEAD_END.length;
    });
    socket.on("error", reject);
    socket.on("end", () => socket.destroy());
    socket.on("close", () => resolve(Math.max(bytes, 0)));
  });
}

/**
 * One exec of `cmd` in `containerId` as `user`, over bare sockets; resolves with the exit
 * code. `keepAlive` sends create and inspect on one persistent connection.
 */
export async function rawSocketExec(
  socketPath: string,
  apiVersion: string,
  containerId: string,
  cmd: readonly string[],
  user: { uid: number; gid: number },
  keepAlive: boolean,
): Promise<number> {
  const prefix = `/v${apiVersion}`;
  const connection = keepAlive ? `Connection: keep-alive` : `Connection: close`;
  const call = async (socket: Socket | undefined, method: string, target: string, json?: string) => {
    const own = socket ?? await open(socketPath);
    try {
      const body = json ?? "";
      const reply = await exchange(
        own,
        `${method} ${prefix}${target} HTTP/1.1\r\nHost: docker\r\n${connection}\r\n` +
          (json === undefined ? "" : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`) +
          `\r\n${body}`,
      );
      if (reply.status >= 300) throw new Error(`Cannot ${method} ${target}: the Engine answered ${reply.status} ${reply.body.slice(0, 200)}`);
      return JSON.parse(reply.body);
    } finally {
      if (socket === undefined) own.destroy();
    }
  };
  const kept = keepAlive ? await open(socketPath) : undefined;
  try {
    const created = await call(kept, "POST", `/containers/${containerId}/exec`, JSON.stringify({
      AttachStdout: true,
      AttachStderr: true,
      Cmd: cmd,
      User: `${user.uid}:${user.gid}`,
      WorkingDir: "/workspace/work",
    })) as { Id: string };
    await startAndDrain(socketPath, `${prefix}/exec/${created.Id}/start`);
    return await pollExit(() => call(kept, "GET", `/exec/${created.Id}/json`));
  } finally {
    kept?.destroy();
  }
}
