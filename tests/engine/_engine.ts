// Shared setup of the real-engine lane: the engine endpoint and guest image IDs come from
// the environment that `npm test` (scripts/test.sh) prepares. Without them every engine test
// fails with the reason (never a skip); scripts/test.sh also fails a run whose engine lane
// ran nothing.
import process from "node:process";
import { test, type TestContext } from "node:test";
import { DockerEngine } from "../../lib/engine/client.ts";

/** Engine endpoint of the lane, `unix:///…`, or undefined. */
export const endpoint: string | undefined = process.env.AGENTCELL_TEST_ENGINE;
/** sha256: ID of the busybox guest image. */
export const busyboxImage: string = process.env.AGENTCELL_TEST_BUSYBOX_IMAGE ?? "";
/** sha256: ID of the node guest image. */
export const nodeImage: string = process.env.AGENTCELL_TEST_NODE_IMAGE ?? "";

const missing = !endpoint || !busyboxImage || !nodeImage;

/** A test of the real-engine lane; receives a client of the lane's engine. */
export function engineTest(
  name: string,
  fn: (engine: DockerEngine, t: TestContext) => Promise<void>,
  options: { timeout?: number } = {},
): void {
  test(name, { timeout: options.timeout ?? 120_000 }, async (t) => {
    if (missing) {
      const reason = "no engine: set AGENTCELL_TEST_ENGINE, AGENTCELL_TEST_BUSYBOX_IMAGE and AGENTCELL_TEST_NODE_IMAGE (npm test does)";
      throw new Error(`Cannot run the engine lane: ${reason}`);
    }
    await fn(new DockerEngine(endpoint!), t);
  });
}

/**
 * Poll `probe` until it returns a value other than `undefined`, and return that value. A
 * deadline of its own (default 30 s, far above what any machine needs) turns a condition
 * that never comes into a failure naming `what`; the assertion is the event, not the time
 * it took.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  options: { deadlineMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadlineMs = options.deadlineMs ?? 30_000;
  const give = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > give) throw new Error(`${what} did not happen within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}

/** This runtime's executable and arguments for running the TypeScript file `script`. */
export function runtimeCommand(script: string): [string, string[]] {
  const globals = globalThis as { Deno?: unknown; Bun?: unknown };
  return [process.execPath, globals.Deno !== undefined ? ["run", "-A", script] : [script]];
}
