import { DockerEngineError } from "../engine/errors.ts";
import { DockerEngineTransportError } from "../engine/http/errors.ts";
import { SandboxAbortedError, SandboxDeadlineError, SandboxEngineError, SandboxError } from "../sandbox/errors.ts";

/**
 * Present any failure of an Engine call as a {@linkcode SandboxError}: sandbox errors pass
 * through; Engine status errors and transport faults become {@linkcode SandboxEngineError}
 * (transport `deadline` → {@linkcode SandboxDeadlineError}, `aborted` →
 * {@linkcode SandboxAbortedError}), keeping the original as `cause`.
 */
export function asSandboxError(error: unknown, action: string): SandboxError {
  if (error instanceof SandboxError) return error;
  if (error instanceof DockerEngineTransportError) {
    if (error.code === "deadline") return new SandboxDeadlineError(`Cannot ${action}: the Engine did not answer in time`, { cause: error });
    if (error.code === "aborted") return new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: error });
    return new SandboxEngineError(`Cannot ${action}: ${error.message}`, { cause: error });
  }
  if (error instanceof DockerEngineError) {
    return new SandboxEngineError(`Cannot ${action}: ${error.message}`, { cause: error, status: error.status });
  }
  return new SandboxEngineError(`Cannot ${action}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

/** Whether `error` is the Engine's `404 Not Found`. */
export function isNotFound(error: unknown): boolean {
  return error instanceof DockerEngineError && error.code === "not_found";
}
