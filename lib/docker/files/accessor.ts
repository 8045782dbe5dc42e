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
import type { RecoveryLog } from "../recovery_log.ts";
import { createRecorded } from "../resources.ts";
import { keeperCreateBody, WORKSPACE_PATH, type WorkloadSpec, workloadMismatches } from "../workload.ts";

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

/** The accessor's spec: the keeper's, without a network and with its own labels. */
function accessorSpec(spec: WorkloadSpec, labels: Readonly<Record<string, string>>): WorkloadSpec {
  return { ...spec, networkName: undefined, labels };
}

/**
 * The `POST /containers/create` body of the accessor: the keeper's body with network mode
 * `none`, the accessor's labels and the workspace volume read-only.
 *
 * @param spec The keeper's spec.
 * @param labels The accessor's labels.
 * @returns The create body.
 */
export function accessorCreateBody(spec: WorkloadSpec, labels: Readonly<Record<string, string>>): Record<string, unknown> {
  const body = keeperCreateBody(accessorSpec(spec, labels));
  const host = body.HostConfig as Record<string, unknown>;
  host.Mounts = [{ Type: "volume", Source: spec.volumeName, Target: WORKSPACE_PATH, ReadOnly: true, VolumeOptions: { NoCopy: true } }];
  return body;
}

/**
 * Compare the accessor's readback with its spec: everything the keeper's readback checks
 * (with network `none`), the read-only workspace mount, and that it was never started.
 *
 * @returns one sentence per mismatch
 */
export function accessorMismatches(inspect: ContainerInspect, spec: WorkloadSpec, labels: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  const requested = inspect.HostConfig.Mounts ?? [];
  const effective = inspect.Mounts;
  const readOnly = requested.length === 1 && requested[0].ReadOnly === true && effective.length === 1 && effective[0].RW === false;
  if (!readOnly) problems.push(`the workspace mount is not read-only (${JSON.stringify(effective.map((m) => [m.Name, m.RW]))})`);
  if (inspect.State.Status !== "created" || inspect.State.Running) problems.push(`state is ${inspect.State.Status}, not created`);
  if (!labelsMatch(inspect.Config.Labels, labels)) problems.push("labels differ");
  // The keeper's checks expect a writable mount; the read-only flag was checked above.
  const asWritable: ContainerInspect = {
    ...inspect,
    HostConfig: { ...inspect.HostConfig, Mounts: requested.map((mount) => ({ ...mount, ReadOnly: false })) },
    Mounts: effective.map((mount) => ({ ...mount, RW: true })),
  };
  problems.push(...workloadMismatches(asWritable, accessorSpec(spec, labels), false));
  return problems;
}

/**
 * Create the accessor through the resource table: recorded `creating` first, then `created`
 * with its ID. A `409` is a definite answer (the name is someone else's: never adopted); only
 * an unknown outcome is resolved by the exact name, and adopted only when it is this
 * record's own.
 *
 * @returns the accessor's container ID; check it with {@linkcode verifyAccessor} next
 * @throws {SandboxConflictError} when the name is taken
 * @throws {SandboxError} when the Engine fails (an unknown outcome says so)
 */
export async function createAccessor(context: AccessorContext): Promise<string> {
  const { engine, log, name, labels, timeoutMs, signal } = context;
  log.add("accessor");
  return await createRecorded(engine, log, "accessor", "create export accessor", async () =>
    (await createContainer(engine, name, accessorCreateBody(context.spec, labels), {
      timeoutMs,
      signal,
      platform: context.platform,
    })).id, { timeoutMs });
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
