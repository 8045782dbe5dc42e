/**
 * The one export slot of a sandbox: while an export stream of a sandbox is open, the
 * Engine's `GET …/archive` of its accessor holds the container's lock, and every further
 * archive request of that container (the next export's `HEAD`) waits for it. So a sandbox
 * has at most one open export, and a second one is refused at once instead of hanging.
 *
 * @module
 */

/** Owners (sandboxes) whose slot is taken. */
const taken = new WeakSet<object>();

/**
 * Takes the export slot of `owner`.
 *
 * @param owner The sandbox.
 * @returns A release function (idempotent; releases only this claim), or `undefined` when
 *   the slot is already taken.
 */
export function claimExportSlot(owner: object): (() => void) | undefined {
  if (taken.has(owner)) return undefined;
  taken.add(owner);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    taken.delete(owner);
  };
}
