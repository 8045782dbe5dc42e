/**
 * `sandbox.run()`: one process from start to end, its stdin fed, its stdout and stderr
 * captured within `maxOutputBytes`, and either the result or an error carrying what was
 * captured.
 *
 * @module
 */
import {
  SandboxAbortedError,
  SandboxDeadlineError,
  type SandboxError,
  SandboxOutputLimitError,
  SandboxStoppedError,
} from "../../sandbox/errors.ts";
import type { SandboxExitReceipt, SandboxKillReason } from "../../sandbox/process.ts";
import { markRunOutput, type NormalizedRunRequest, type SandboxRunResult } from "../../sandbox/run.ts";
import { concatBytes } from "../../streams/concat_bytes.ts";
import type { DockerProcess, DockerProcessReservation } from "./process.ts";

/** Feed `stdin` and half-close; a process that stops reading is not an error of the run. */
async function feed(process: DockerProcess, stdin: NormalizedRunRequest["stdin"]): Promise<void> {
  const writer = process.stdin.getWriter();
  try {
    if (stdin !== undefined) {
      if (typeof stdin === "string") await writer.write(new TextEncoder().encode(stdin));
      else if (stdin instanceof Uint8Array) await writer.write(stdin.slice());
      else for await (const chunk of stdin instanceof Blob ? stdin.stream() : stdin) await writer.write(chunk);
    }
    await writer.close();
  } catch {
    // The process exited (or was ended) before it read everything: its receipt says how it ended.
    await writer.abort().catch(() => {});
    if (stdin instanceof ReadableStream) await stdin.cancel().catch(() => {});
  }
}

/**
 * Run `request` through `reservation` (made by `reserveProcess` with the run's fields).
 *
 * @param reservation The inert reservation of the command.
 * @param request The validated `run()` arguments.
 * @param stopping The sandbox's stop signal (its reason is the stop cause).
 * @returns The result of a command that exited on its own.
 * @throws {SandboxOutputLimitError} when the output reached `maxOutputBytes`
 * @throws {SandboxDeadlineError} when `timeoutMs` passed
 * @throws {SandboxAbortedError} when `signal` aborted
 * @throws {SandboxStoppedError} (or the stop cause) when the sandbox stopped meanwhile
 * @throws what a process start and its output streams throw (framing, engine)
 */
export async function runToEnd(
  reservation: DockerProcessReservation,
  request: NormalizedRunRequest,
  stopping: AbortSignal,
): Promise<SandboxRunResult> {
  const { signal, maxOutputBytes } = request;
  const label = `Cannot run ${request.executable}`;
  const process = await reservation.start({ signal });
  let failure: SandboxError | undefined;
  const end = (error: SandboxError, reason: SandboxKillReason) => {
    if (failure !== undefined) return;
    failure = error;
    process.end(reason, error).catch(() => {});
  };
  const onAbort = () => end(new SandboxAbortedError(`${label}: aborted`, { cause: signal!.reason }), "aborted");
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });

  let captured = 0;
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const chunks: Uint8Array[] = [];
    try {
      for await (const chunk of stream) {
        // Past the bound, the rest is read and dropped until the kill ends the stream.
        const room = Math.max(0, maxOutputBytes - captured);
        const keep = Math.min(room, chunk.byteLength);
        if (keep > 0) {
          chunks.push(keep === chunk.byteLength ? chunk : chunk.slice(0, keep));
          captured += keep;
        }
        if (keep < chunk.byteLength) {
          end(
            new SandboxOutputLimitError(
              `${label}: its stdout and stderr reached ${maxOutputBytes} bytes (maxOutputBytes), so it was killed; ` +
                "raise options.maxOutputBytes (up to 1 GiB), or read a large output as a stream from reserveProcess().start()",
            ),
            "output_limit",
          );
        }
      }
    } catch (error) {
      failure ??= error as SandboxError;
    }
    return { chunks };
  };
  try {
    const [out, err, exit] = await Promise.all([collect(process.stdout), collect(process.stderr), process.exit, feed(process, request.stdin)]);
    const stdout = concatBytes(out.chunks);
    const stderr = concatBytes(err.chunks);
    const receipt: SandboxExitReceipt = exit;
    if (receipt.kind === "killed" && receipt.reason === "timeout") {
      failure ??= new SandboxDeadlineError(`${label}: its timeoutMs of ${request.timeoutMs} ms elapsed, so it was killed; raise options.timeoutMs if it needs longer`);
    }
    if (receipt.kind === "unavailable") {
      failure ??= (stopping.reason as SandboxError | undefined) ?? new SandboxStoppedError(`${label}: the sandbox stopped`);
    }
    if (failure !== undefined || receipt.kind !== "exited") {
      failure ??= new SandboxStoppedError(`${label}: it was ended (${receipt.kind === "killed" ? receipt.reason : receipt.kind})`);
      throw markRunOutput(failure, { stdout, stderr, exit: receipt });
    }
    const decoder = new TextDecoder();
    return Object.freeze({
      exit: receipt,
      stdout,
      stderr,
      get stdoutText() {
        return decoder.decode(stdout);
      },
      get stderrText() {
        return decoder.decode(stderr);
      },
    });
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}
