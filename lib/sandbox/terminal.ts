/**
 * A process's terminal: the size and `TERM` a caller asks for with `tty`, and the size of a
 * later `resize()`.
 *
 * @module
 */
import { z } from "zod";
import { expect, integerFrom, parseConfiguration } from "../internal/zod_issues.ts";

/** Largest terminal width or height, in character cells: 65535 (the kernel's `winsize` fields are 16 bits). */
export const MAX_TERMINAL_CELLS = 65535;

/** Default of {@linkcode SandboxTerminalRequest.term}: `"xterm-256color"`. */
export const DEFAULT_TERM = "xterm-256color";

/**
 * A terminal size in character cells.
 *
 * @example
 * ```ts
 * import type { SandboxTerminalSize } from "./terminal.ts";
 *
 * const size: SandboxTerminalSize = { columns: 120, rows: 40 };
 * ```
 */
export interface SandboxTerminalSize {
  /** Width in character cells: an integer from 1 to 65535. */
  readonly columns: number;
  /** Height in character cells: an integer from 1 to 65535. */
  readonly rows: number;
}

/**
 * The terminal of a process (`tty` of a process request): its size and its `TERM`.
 *
 * @example
 * ```ts
 * import type { SandboxTerminalRequest } from "./terminal.ts";
 *
 * const tty: SandboxTerminalRequest = { columns: 80, rows: 24, term: "vt100" };
 * ```
 */
export interface SandboxTerminalRequest extends SandboxTerminalSize {
  /**
   * The guest's `TERM`: 1 to 64 characters of `[A-Za-z0-9._+-]`, e.g. `"xterm-256color"`,
   * `"vt100"`, `"screen.xterm-256color"`.
   *
   * @default {"xterm-256color"}
   */
  readonly term?: string;
}

/** A validated {@linkcode SandboxTerminalRequest} with `term` filled. */
export interface NormalizedSandboxTerminal extends SandboxTerminalSize {
  /** The guest's `TERM`. */
  readonly term: string;
}

const TERM_NAME = /^[A-Za-z0-9._+-]{1,64}$/u;

function cells(what: string) {
  return integerFrom(1, MAX_TERMINAL_CELLS, "", `must be an integer from 1 to ${MAX_TERMINAL_CELLS}: the terminal's ${what} in character cells`);
}

/** An object-level error map: `sentence` for a value that is not an object, zod's wording (unknown fields) otherwise. */
function objectError(sentence: string) {
  return (issue: { readonly code?: string; readonly input?: unknown }) =>
    issue.code !== "invalid_type" ? undefined : issue.input === undefined ? "is required" : sentence;
}

/** zod schema of {@linkcode SandboxTerminalSize}, unknown fields rejected. */
export const terminalSizeSchema: z.ZodType<SandboxTerminalSize> = z.strictObject({
  columns: cells("width"),
  rows: cells("height"),
}, { error: objectError("must be an object { columns, rows }") });

/** zod schema of {@linkcode SandboxTerminalRequest}, unknown fields rejected. */
export const terminalRequestSchema: z.ZodType<SandboxTerminalRequest> = z.strictObject({
  columns: cells("width"),
  rows: cells("height"),
  term: z.string({ error: expect('must be a string such as "xterm-256color"') })
    .regex(TERM_NAME, { error: expect('must be 1 to 64 characters of [A-Za-z0-9._+-], such as "xterm-256color"') })
    .optional(),
}, { error: objectError("must be an object { columns, rows, term? }") });

/**
 * Validates a terminal request and fills `term`.
 *
 * @param tty The request's `tty` (already checked by {@linkcode terminalRequestSchema}).
 * @returns The frozen terminal.
 */
export function normalizeTerminal(tty: SandboxTerminalRequest): NormalizedSandboxTerminal {
  return Object.freeze({ columns: tty.columns, rows: tty.rows, term: tty.term ?? DEFAULT_TERM });
}

/**
 * Validates the size of a `resize()`.
 *
 * @param size The size as the caller wrote it (untrusted).
 * @returns The size, copied and frozen.
 * @throws {SandboxConfigurationError} When `size` is not `{ columns, rows }` with integers
 *   from 1 to 65535, e.g. "Cannot resize process: size.columns must be an integer from 1 to
 *   65535: the terminal's width in character cells".
 *
 * @example
 * ```ts
 * import { normalizeTerminalSize } from "./terminal.ts";
 *
 * console.log(normalizeTerminalSize({ columns: 100, rows: 30 })); // { columns: 100, rows: 30 }
 * ```
 */
export function normalizeTerminalSize(size: SandboxTerminalSize): SandboxTerminalSize {
  const parsed = parseConfiguration(terminalSizeSchema, size, "resize process", "size");
  return Object.freeze({ columns: parsed.columns, rows: parsed.rows });
}
