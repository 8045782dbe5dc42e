// The `sandbox.run()` row of the sandbox benchmark: the short path's round trip in a running
// sandbox against `docker exec C true` and dockerode's exec of the same command in the same
// keeper, as the same user in the same directory. Its aims (issue 12): ours ≤ 1.0× dockerode
// and ≤ 0.7× the CLI. A reference variant runs through dockerode the exact `Cmd` that run()
// sends (the guest wrapper that marks the process, raises its OOM score and execs true), so
// the client's share can be told from the wrapper's; floors make the same three Engine
// calls over bare sockets with no client library (bench/_exec_floor.ts: `node:net`, and on
// Deno and Bun the native socket; a connection per call, and kept alive), so the Engine's own
// share of the time shows: what no client can go below.
import { processMark, wrappedCommand } from "../lib/docker/process/process.ts";
import type { DockerSandbox } from "../lib/docker/sandbox.ts";
import { type DockerodeClient, dockerodeExec } from "./_dockerode.ts";
import { type FloorSocket, rawSocketExec } from "./_exec_floor.ts";
import { cliExecVariant, USER } from "./_rows.ts";
import { type BenchConfig, roundRobin, type TimedVariant } from "./_setup.ts";
import type { RowResult } from "./_stats.ts";

/** Names of the bare-socket exec floors start with this (bench/_goals.ts finds them by it). */
const EXEC_FLOOR_PREFIX = "floor: bare";

/** The bare-socket exec floors of the running runtime: `node:net` everywhere, the native socket on Deno and Bun. */
function execFloors(config: BenchConfig, apiVersion: string, keeperId: string, succeeded: (code: number) => void): TimedVariant[] {
  const global = globalThis as { Deno?: unknown; Bun?: unknown };
  const native = global.Deno ? "Deno.connect" : global.Bun ? "Bun.connect" : undefined;
  const sockets: [FloorSocket, string][] = [["node:net", "node:net"]];
  if (native !== undefined) sockets.push(["native", native]);
  return sockets.flatMap(([socket, label]) =>
    [false, true].map((keepAlive): TimedVariant => ({
      name: `${EXEC_FLOOR_PREFIX} ${label} exec of true, ${keepAlive ? "create and inspect on one kept-alive connection" : "a connection per call"}, no client library`,
      run: async () => succeeded(await rawSocketExec(config.socketPath, apiVersion, keeperId, ["true"], USER, { keepAlive, socket })),
    }))
  );
}

/** Row 5: `sandbox.run("/bin/true")` round trip in the running sandbox `keeper`. */
export async function runRow(config: BenchConfig, keeper: DockerSandbox, dockerode: DockerodeClient, apiVersion: string): Promise<RowResult> {
  const keeperId = keeper.resources.keeperId;
  const userText = `${USER.uid}:${USER.gid}`;
  const succeeded = (code: number) => {
    if (code !== 0) throw new Error(`true exited with ${code}`);
  };
  const variants: TimedVariant[] = [
    {
      name: 'ours: sandbox.run("/bin/true") → result',
      run: async () => {
        const result = await keeper.run("/bin/true");
        succeeded(result.exit.code);
      },
    },
    cliExecVariant("docker exec C true (CLI)", config, keeperId),
    {
      name: "dockerode exec+start(hijack)+inspect",
      run: dockerode.docker
        ? async () => succeeded((await dockerodeExec(dockerode.docker!, keeperId, ["true"], userText)).code)
        : () => Promise.reject(new Error(dockerode.error)),
    },
    {
      name: "dockerode exec of run()'s own Cmd (guest wrapper + true; like for like)",
      run: dockerode.docker
        ? async () => succeeded((await dockerodeExec(dockerode.docker!, keeperId, wrappedCommand(["/bin/true"], processMark(), "p"), userText)).code)
        : () => Promise.reject(new Error(dockerode.error)),
    },
    ...execFloors(config, apiVersion, keeperId, succeeded),
  ];
  const results = await roundRobin(variants, config.execs, config.warmups);
  return {
    row: '5. sandbox.run("/bin/true") round trip',
    variants: variants.map((variant) => {
      const result = results.get(variant.name)!;
      return { variant: variant.name, samplesMs: result.samples, cpuMs: result.cpu, child: variant.child, unavailable: result.error };
    }),
  };
}
