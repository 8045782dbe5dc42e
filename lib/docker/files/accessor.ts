/**
 * The export accessor: a container of the sandbox's exact private volume that is created
 * once, never started, and read through the Engine's archive endpoints. It has the keeper's
 * image, user and hardening (a never-started container runs nothing, but its configuration
 * still says what it could do), the volume mounted read-only at `/workspace`, network mode
 * `none`, no dataset or other mounts, and the `accessor` role's name and labels. It is
 * recorded in the recovery log before it is created and removed by `destroy()`.
 *
 * @module
 */
import { SandboxConflictError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { type ContainerInspect, createContainer, inspectContainer } from "../../engine/containers.ts";
import { labelsMatch } from "../names.ts";
import type { RecoveryLog } from "../recovery/log.ts";
import { createRecorded, removeRecorded } from "../recovery/resources.ts";
import { accessorMounts } from "../keeper/mounts.ts";
import { assertCreateWarnings } from "../datasets/warnings.ts";
import { keeperCreateBody, type WorkloadSpec, workloadMismatches } from "../keeper/spec.ts";

/** Everything creating the accessor needs. */
export interface AccessorContext {
  readonly engine: DockerEngine;
  /** The keeper's spec (image, user, policy, volume). */
  readonly spec: WorkloadSpec;
  /** The accessor's exact name (`names.accessor`). */
  readonly name: string;
  /** The accessor's exact labels (role `accessor`). */
  readonly labels: Readonly<Record<string, string>>;
  /** The image platform the keeper was created with. */
  readonly platform: string;
  /** The sandbox's recovery log. */
  readonly log: RecoveryLog;
  /** Deadline of each Engine request, milliseconds. */
  readonly timeoutMs: number;
  /** Aborts the requests. */
  readonly signal?: AbortSignal;
}

/**
 * The accessor's spec: the keeper's image, user and hardening, network mode `none`, its own
 * labels, and only the workspace volume, read-only (never a dataset).
 *
 * @param spec The keeper's spec.
 * @param labels The accessor's labels.
 * @returns The accessor's spec.
 */
export function accessorSpec(spec: WorkloadSpec, labels: Readonly<Record<string, string>>): WorkloadSpec {
  return { ...spec, networkName: undefined, labels, mounts: accessorMounts(spec.mounts) };
}

/**
 * The `POST /containers/create` body of the accessor: the keeper's body built from
 * {@linkcode accessorSpec}.
 *
 * @param spec The keeper's spec.
 * @param labels The accessor's labels.
 * @returns The create body.
 */
export function accessorCreateBody(spec: WorkloadSpec, labels: Readonly<Record<string, string>>): Record<string, unknown> {
  return keeperCreateBody(accessorSpec(spec, labels));
}

/**
 * Compare the accessor's readback with its spec: the one readback routine of workload
 * containers (hardening, network `none`, the read-only workspace as its only mount), its
 * labels, and that it was never started.
 *
 * @returns one sentence per mismatch
 */
export function accessorMismatches(inspect: ContainerInspect, spec: WorkloadSpec, labels: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  if (inspect.State.Status !== "created" || inspect.State.Running) problems.push(`state is ${inspect.State.Status}, not created`);
  if (!labelsMatch(inspect.Config.Labels, labels)) problems.push("labels differ");
  problems.push(...workloadMismatches(inspect, accessorSpec(spec, labels), false));
  return problems;
}

/**
 * Create the accessor through the resource table: recorded `creating` first, then `created`
 * with its ID. A `409` is a definite answer (the name is someone else's: never adopted); only
 * an unknown outcome is resolved by the exact name, and adopted only when it is this
 * record's own.
 *
 * Any warning in the create reply is unexpected (the accessor mounts no image): the accessor
 * is removed again and the export fails.
 *
 * @returns the accessor's container ID; check it with {@linkcode verifyAccessor} next
 * @throws {SandboxConflictError} when the name is taken
 * @throws {SandboxUnsupportedError} when the Engine warned on create (the accessor is removed)
 * @throws {SandboxError} when the Engine fails (an unknown outcome says so)
 */
export async function createAccessor(context: AccessorContext): Promise<string> {
  const { engine, log, name, labels, timeoutMs, signal } = context;
  log.add("accessor");
  let warnings: readonly string[] = [];
  const id = await createRecorded(engine, log, "accessor", "create export accessor", async () => {
    const created = await createContainer(engine, name, accessorCreateBody(context.spec, labels), {
      timeoutMs,
      signal,
      platform: context.platform,
    });
    warnings = created.warnings;
    return created.id;
  }, { timeoutMs });
  try {
    assertCreateWarnings(warnings, 0, "create export accessor");
  } catch (error) {
    // A failed removal leaves the entry recorded: destroy() removes it.
    await removeRecorded(engine, log, "accessor", { timeoutMs }).catch(() => {});
    throw error;
  }
  return id;
}

/**
 * Read the accessor back and compare it with its spec.
 *
 * @throws {SandboxConflictError} when it reads back with another name or labels
 * @throws {SandboxUnsupportedError} listing every other mismatch
 */
export async function verifyAccessor(context: AccessorContext, id: string): Promise<void> {
  const { engine, name, labels, timeoutMs, signal } = context;
  const inspect = await inspectContainer(engine, id, { timeoutMs, signal });
  if (inspect.Name !== `/${name}` || !labelsMatch(inspect.Config.Labels, labels)) {
    throw new SandboxConflictError(`Cannot create export accessor: container ${name} reads back with another name or labels`);
  }
  const problems = accessorMismatches(inspect, context.spec, labels);
  if (problems.length > 0) {
    throw new SandboxUnsupportedError(`Cannot create export accessor: it reads back differently: ${problems.join("; ")}`);
  }
}
