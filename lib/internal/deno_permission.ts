/**
 * Recognising Deno's permission denials (`Deno.errors.NotCapable`, Deno 2) anywhere in a
 * failure's cause chain, and wording the flag that grants the access. Only the error's
 * `name` and message are read: no runtime API is touched, so this runs on every runtime
 * (on Bun and Node it simply never finds a denial).
 *
 * @module
 */

/** What Deno denied, and the flag that allows it. */
export interface DenoPermissionDenial {
  /** Permission kind: `read`, `write`, `net`, `sys`, `env`, `run` or `ffi`. */
  readonly kind: string;
  /** What was asked for (a path, `unix:/path`, `uid`, a variable name), when Deno says. */
  readonly target: string | undefined;
  /** The command-line flag that grants it, e.g. `--allow-sys=uid`. */
  readonly flag: string;
}

/** Deno 2's wording: `Requires read access to "/x", run again with the --allow-read flag`. */
const DENIAL = /Requires (\w+) access to "([^"]*)"/u;
/** How deep a cause chain is followed. */
const MAX_DEPTH = 8;

/**
 * Finds the first Deno permission denial in `error` or its `cause` chain (and the members of
 * an `AggregateError`).
 *
 * @param error Any failure.
 * @returns The denial, or `undefined` when there is none.
 */
export function denoPermissionDenial(error: unknown): DenoPermissionDenial | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.size < MAX_DEPTH * 4) {
    const current = queue.shift();
    if (!(current instanceof Error) || seen.has(current)) continue;
    seen.add(current);
    if (current.name === "NotCapable") {
      const match = DENIAL.exec(current.message);
      const kind = match?.[1] ?? /--allow-(\w+)/u.exec(current.message)?.[1] ?? "all";
      const target = match?.[2];
      return { kind, target, flag: target ? `--allow-${kind}=${target}` : `--allow-${kind}` };
    }
    queue.push(current.cause);
    if (current instanceof AggregateError) queue.push(...current.errors);
  }
  return undefined;
}

/**
 * The same denial for a directory instead of the file Deno named: the flag a caller passes
 * for a directory the library creates files in under names of its own (a spill file, an
 * export's temporary sibling), which no flag could name in advance.
 *
 * @param denial The denial of one file.
 * @param directory The directory to grant.
 * @returns The denial of `directory`.
 */
export function denialOfDirectory(denial: DenoPermissionDenial, directory: string): DenoPermissionDenial {
  return { kind: denial.kind, target: directory, flag: `--allow-${denial.kind}=${directory}` };
}

/**
 * The reason for a message about a denial: what Deno refused and the flag to add.
 *
 * @param denial The denial found by {@linkcode denoPermissionDenial}.
 * @returns E.g. `Deno denied sys access to "uid"; run deno with --allow-sys=uid (see the
 *   README's "Deno permissions")`.
 */
export function denialReason(denial: DenoPermissionDenial): string {
  const what = denial.target === undefined ? "" : ` to ${JSON.stringify(denial.target)}`;
  return `Deno denied ${denial.kind} access${what}; run deno with ${denial.flag} (see the README's "Deno permissions")`;
}
