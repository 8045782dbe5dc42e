/**
 * {@linkcode AcpPermissionRequest}: one `session/request_permission` from the agent, answered
 * exactly once — by the caller's `onPermissionRequest`, by the bridge's default deny, or as
 * `cancelled` when the turn is cancelled or the session closes (ACP v1, "Prompt Turn" §
 * Cancellation: the client must answer pending permission requests with `cancelled`).
 *
 * @module
 */
import type { PermissionOption, RequestPermissionOutcome, RequestPermissionRequest, ToolCallUpdate } from "./protocol.ts";
import { SandboxConfigurationError, SandboxStateError } from "../sandbox/errors.ts";

const ACTION = "answer permission request";

/**
 * The answer that denies: the first `reject_once` option, else the first `reject_always`,
 * else `cancelled` (the agent offered no way to say no).
 *
 * @param options The options the agent offered.
 * @returns The outcome to send.
 *
 * @example
 * ```ts
 * import { denyOutcome } from "./permission.ts";
 *
 * const outcome = denyOutcome([
 *   { optionId: "yes", name: "Allow", kind: "allow_once" },
 *   { optionId: "no", name: "Reject", kind: "reject_once" },
 * ]);
 * console.log(outcome); // { outcome: "selected", optionId: "no" }
 * ```
 */
export function denyOutcome(options: readonly PermissionOption[]): RequestPermissionOutcome {
  const reject = options.find((option) => option.kind === "reject_once") ??
    options.find((option) => option.kind === "reject_always");
  return reject === undefined ? { outcome: "cancelled" } : { outcome: "selected", optionId: reject.optionId };
}

/**
 * A permission request of the agent, handed to `onPermissionRequest`. Answer it once with
 * {@linkcode select} or {@linkcode deny}, now or later (the agent waits; the turn can still
 * be cancelled). Every further answer throws.
 *
 * When the bridge answers it itself — the turn was cancelled, the session is closing, or the
 * agent withdrew the request — {@linkcode signal} aborts and {@linkcode outcome} is
 * `{ outcome: "cancelled" }`.
 *
 * @example
 * ```ts ignore
 * // ignore: needs a running ACP session in a sandbox
 * const session = await startAcpSession(sandbox, request, {
 *   onPermissionRequest(permission) {
 *     // `kind` is optional: judge what the tool call names (a real agent sends the title
 *     // "Write /workspace/work/out/hello.txt" and no kind; `locations` lists paths when given).
 *     const allow = permission.options.find((option) => option.kind === "allow_once");
 *     const { locations, title = "" } = permission.toolCall;
 *     const paths = locations?.length ? locations.map((location) => location.path) : [title?.split(" ").at(-1) ?? ""];
 *     const inOut = /^(Write|Edit) /.test(title ?? "") && paths.every((path) => path.startsWith("/workspace/work/out/"));
 *     if (inOut && allow) permission.select(allow.optionId);
 *     else permission.deny();
 *   },
 * });
 * ```
 */
export class AcpPermissionRequest {
  /** The session the request belongs to. */
  readonly sessionId: string;
  /** The tool call the agent wants to run (ACP `ToolCallUpdate`: `toolCallId`, `title`, `kind`, …). */
  readonly toolCall: ToolCallUpdate;
  /** The options the agent offers (frozen): `optionId`, `name`, `kind` (`allow_once`, `allow_always`, `reject_once`, `reject_always`). */
  readonly options: readonly PermissionOption[];
  readonly #abort = new AbortController();
  readonly #respond: (outcome: RequestPermissionOutcome) => void;
  #outcome: RequestPermissionOutcome | undefined;
  #how: string | undefined;

  /**
   * @internal Made by the bridge for each request; not for callers.
   *
   * @param params The agent's request.
   * @param respond Sends the one answer.
   */
  constructor(params: RequestPermissionRequest, respond: (outcome: RequestPermissionOutcome) => void) {
    this.sessionId = params.sessionId;
    this.toolCall = params.toolCall;
    this.options = Object.freeze([...params.options]);
    this.#respond = respond;
  }

  /** Aborts when the bridge answered the request itself (turn cancelled, session closing). */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** The answer sent, or `undefined` while the request is open. */
  get outcome(): RequestPermissionOutcome | undefined {
    return this.#outcome;
  }

  /**
   * Answer with one of the offered options.
   *
   * @param optionId The `optionId` of one of {@linkcode options}.
   * @throws {SandboxConfigurationError} `configuration`: `optionId` is not one of the offered
   *   options (nothing is sent; the request stays open)
   * @throws {SandboxStateError} `invalid_state`: the request was already answered
   */
  select(optionId: string): void {
    this.#checkOpen();
    if (!this.options.some((option) => option.optionId === optionId)) {
      const offered = this.options.map((option) => JSON.stringify(option.optionId)).join(", ");
      throw new SandboxConfigurationError(
        `Cannot ${ACTION}: optionId ${JSON.stringify(optionId)} is not one of the offered options (${offered}); pass one of them`,
      );
    }
    this.#settle({ outcome: "selected", optionId }, `selected ${JSON.stringify(optionId)}`);
  }

  /**
   * Answer no: the first `reject_once` option, else `reject_always`, else `cancelled`.
   *
   * @throws {SandboxStateError} `invalid_state`: the request was already answered
   */
  deny(): void {
    this.#checkOpen();
    const outcome = denyOutcome(this.options);
    this.#settle(outcome, outcome.outcome === "selected" ? `denied with ${JSON.stringify(outcome.optionId)}` : "denied as cancelled");
  }

  /**
   * @internal The bridge answers `cancelled` (no-op when already answered).
   *
   * @param why Why, for the message of a later answer ("the turn was cancelled").
   */
  cancel(why: string): void {
    if (this.#outcome !== undefined) return;
    this.#settle({ outcome: "cancelled" }, `cancelled: ${why}`);
    this.#abort.abort();
  }

  #checkOpen(): void {
    if (this.#outcome !== undefined) {
      throw new SandboxStateError(`Cannot ${ACTION}: it was already answered (${this.#how}); each request takes one answer`);
    }
  }

  #settle(outcome: RequestPermissionOutcome, how: string): void {
    this.#outcome = Object.freeze(outcome);
    this.#how = how;
    this.#respond(this.#outcome);
  }
}
