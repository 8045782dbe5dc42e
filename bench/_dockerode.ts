// dockerode (node:http based) as a comparison client: loaded lazily so a runtime that cannot
// run it reports "n/a" with the reason instead of failing the benchmark.
import { Writable } from "node:stream";
import type Dockerode from "dockerode";
import { pollExit } from "./_exec_steps.ts";

/** A loaded dockerode client, or the reason there is none. */
export type DockerodeClient = { docker: Dockerode; error?: undefined } | { docker?: undefined; error: string };

/** Loads dockerode and proves one exec works in `containerId` within 20 s. */
export async function loadDockerode(socketPath: string, containerId: string, user: string): Promise<DockerodeClient> {
  try {
    const module = await import("dockerode");
    const Docker = module.default;
    const docker = new Docker({ socketPath });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("a probe exec did not finish within 20 s")), 20_000);
    });
    try {
      const code = await Promise.race([dockerodeExec(docker, containerId, ["true"], user), timeout]);
      if (code.code !== 0) throw new Error(`a probe exec exited with ${code.code}`);
    } finally {
      clearTimeout(timer);
    }
    return { docker };
  } catch (error) {
    return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

/**
 * `container.exec()` + `exec.start({ hijack: true, stdin: false })`, stdout and stderr
 * through `modem.demuxStream` into counting writables, wait for the stream's end, then
 * `exec.inspect()` (polled like ours while it still reports running).
 */
export async function dockerodeExec(
  docker: Dockerode,
  containerId: string,
  cmd: string[],
  user: string,
): Promise<{ stdoutBytes: number; code: number }> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: cmd,
    AttachStdout: true,
    AttachStderr: true,
    User: user,
    WorkingDir: "/workspace/work",
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  let stdoutBytes = 0;
  const counter = (add: (n: number) => void) =>
    new Writable({
      write(chunk: Uint8Array, _encoding, callback) {
        add(chunk.byteLength);
        callback();
      },
    });
  const ended = new Promise<void>((resolve, reject) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", reject);
  });
  docker.modem.demuxStream(stream, counter((n) => stdoutBytes += n), counter(() => {}));
  await ended;
  stream.destroy();
  const code = await pollExit(() => exec.inspect());
  return { stdoutBytes, code };
}
