import { DockerEngineError, type DockerEngineOutputError, DockerEngineTransportError } from "../engine/errors.ts";
import {
  SandboxAbandonedOutputError,
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxDeadlineError,
  SandboxEngineError,
  SandboxError,
  SandboxFramingError,
  SandboxOutputLimitError,
} from "../sandbox/errors.ts";
import { denialReason, denoPermissionDenial } from "../internal/deno_permission.ts";
import { reasonOf } from "../internal/reason.ts";

/** What a failed connect's system error code means, and what to do (in the backend's terms). */
const CONNECT_FAULTS: Readonly<Record<string, { readonly meaning: string; readonly fix: string }>> = {
  ENOENT: { meaning: "no socket exists at that path", fix: "check config.endpoint and that the Docker daemon runs" },
  ECONNREFUSED: { meaning: "nothing listens on that socket", fix: "check config.endpoint and that the Docker daemon runs" },
  ENOTSOCK: { meaning: "that path is not a socket", fix: "check config.endpoint" },
  EACCES: { meaning: "this user may not open that socket", fix: "run as a user the socket admits (its owner or group)" },
};

/**
 * A connect to the Engine's socket that failed with a known system error, found in
 * `error`'s cause chain (a {@linkcode DockerEngineTransportError} `connection`), or
 * `undefined` for any other failure. The system code is the same on every runtime; the
 * transport's own text is not (Node: `connect ENOENT /x.sock`, Deno: `No such file or
 * directory (os error 2)`, Bun: `Failed to connect`), so callers word the failure from this.
 *
 * @param error any failure
 * @returns the system code (`ENOENT`, `ECONNREFUSED`, `ENOTSOCK`, `EACCES`), what it means,
 *   and the backend's fix (naming `config.endpoint`)
 */
export function connectFaultOf(error: unknown): { readonly systemCode: string; readonly meaning: string; readonly fix: string } | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if (!(at instanceof DockerEngineTransportError) || at.code !== "connection") continue;
    const systemCode = (at.cause as { code?: unknown } | undefined)?.code;
    const fault = typeof systemCode === "string" ? CONNECT_FAULTS[systemCode] : undefined;
    return fault === undefined ? undefined : { systemCode: systemCode as string, ...fault };
  }
  return undefined;
}

/**
 * Present any failure of an Engine call as a {@linkcode SandboxError}: sandbox errors pass
 * through; a Deno permission denial anywhere in the cause chain becomes
 * {@linkcode SandboxConfigurationError} naming the `--allow-*` flag; Engine status errors and
 * transport faults become {@linkcode SandboxEngineError} (transport `deadline` →
 * {@linkcode SandboxDeadlineError}, `aborted` → {@linkcode SandboxAbortedError}), keeping the
 * original as `cause`. The inner message is wrapped as a reason ("Cannot start process:
 * create exec: …"), never as a second "Cannot …"; a socket that cannot be connected to says
 * to check `config.endpoint`.
 */
export function asSandboxError(error: unknown, action: string): SandboxError {
  if (error instanceof SandboxError) return error;
  const denial = denoPermissionDenial(error);
  if (denial) return new SandboxConfigurationError(`Cannot ${action}: ${denialReason(denial)}`, { cause: error });
  const reason = reasonOf(error, action);
  if (error instanceof DockerEngineTransportError) {
    if (error.code === "deadline") return new SandboxDeadlineError(`Cannot ${action}: the Engine did not answer in time`, { cause: error });
    if (error.code === "aborted") return new SandboxAbortedError(`Cannot ${action}: aborted`, { cause: error });
    const fault = connectFaultOf(error);
    return new SandboxEngineError(`Cannot ${action}: ${reason}${fault ? `; ${fault.meaning}: ${fault.fix}` : ""}`, { cause: error });
  }
  if (error instanceof DockerEngineError) {
    return new SandboxEngineError(`Cannot ${action}: ${reason}`, { cause: error, status: error.status });
  }
  return new SandboxEngineError(`Cannot ${action}: ${reason}`, { cause: error });
}

/**
 * Present a fault of a process's output as the {@linkcode SandboxError} of its code, with
 * the same message: `output_limit` → {@linkcode SandboxOutputLimitError}, `framing` →
 * {@linkcode SandboxFramingError}, `abandoned` → {@linkcode SandboxAbandonedOutputError}
 * (`cause`: the cancel reason), `source_failed` → the source's own error when it is a sandbox
 * error (the sandbox's stop cause, say), else {@linkcode SandboxEngineError} (`cause`: the
 * source's error).
 */
export function asOutputError(error: DockerEngineOutputError): SandboxError {
  switch (error.code) {
    case "output_limit":
      return new SandboxOutputLimitError(error.message);
    case "framing":
      return new SandboxFramingError(error.message);
    case "abandoned":
      return new SandboxAbandonedOutputError(error.message, { cause: error.cause });
    case "source_failed":
      return error.cause instanceof SandboxError ? error.cause : new SandboxEngineError(error.message, { cause: error.cause });
  }
}

/** Whether `error` is the Engine's `404 Not Found`. */
export function isNotFound(error: unknown): boolean {
  return error instanceof DockerEngineError && error.code === "not_found";
}

/**
 * A new error of `error`'s own class (so its `code`, `instanceof` and `name` hold) with
 * `message` and `cause`: for a failure that gained a second part on the way ("…; cleanup
 * also failed"). A base `SandboxError` stays a base one with the same code.
 */
export function rephrased(error: SandboxError, message: string, cause: unknown): SandboxError {
  if (error.constructor === SandboxError) return new SandboxError(error.code, message, { cause });
  const Class = error.constructor as new (message: string, options: { cause: unknown }) => SandboxError;
  return new Class(message, { cause });
}

/**
 * The stop cause when the Engine answered nothing for `timeoutMs` (`policy.deadlines.cleanupMs`)
 * while the sandbox needed it (an exit to observe, a container to watch).
 *
 * @param action the "<action>" of the message ("observe the process's exit")
 * @param timeoutMs how long it has not answered, in milliseconds
 * @param error the last failure
 */
export function unansweredError(action: string, timeoutMs: number, error: unknown): SandboxEngineError {
  return new SandboxEngineError(
    `Cannot ${action}: the Engine has not answered for ${timeoutMs} ms (policy.deadlines.cleanupMs; last: ${
      error instanceof Error ? error.message : String(error)
    }), so the sandbox was stopped`,
    { cause: error },
  );
}
