/**
 * The one resource table of a sandbox: per role (volume, network, keeper, accessor, the port
 * relay, the snapshot copier, and for an allowlist network the egress proxy and its egress
 * bridge) how to
 * inspect it by exact name or ID, check its labels and configuration fingerprint, and remove
 * it by exact ID — and the recorded create and remove steps that acquisition, `stop()`,
 * `destroy()` and recovery all share.
 *
 * Rules the steps keep:
 * - A create is announced (`creating`, persisted) before it is dispatched, and its inspected
 *   ID is recorded (`created`) before any later effect.
 * - An Engine *answer* refusing a create (a `409` name conflict, a `400`) is definite: nothing
 *   was created, the entry goes back to `planned` and nothing found under the name is ever
 *   adopted. Only an *unknown* outcome (a lost reply, a deadline, a cut connection) is
 *   resolved by looking the exact name up, and adopted only when it carries exactly this
 *   record's labels (whose digest binds the record's nonce) and configuration fingerprint.
 * - A removal is announced (`removing`, persisted) before it is dispatched; `404` counts as
 *   done; containers go before the network and the volume.
 *
 * @module
 */
import { SandboxConflictError, SandboxEngineError, type SandboxError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { inspectContainer, removeContainer } from "../../engine/containers.ts";
import { DockerEngineError } from "../../engine/errors.ts";
import { GATEWAY_MODE_OPTION, inspectNetwork, isolatedGateway, removeNetwork } from "../../engine/networks.ts";
import { inspectVolume, removeVolume } from "../../engine/volumes.ts";
import { labelsMatch, resourceLabels, type SandboxResourceRole } from "../names.ts";
import type { RecoveryLog } from "./log.ts";
import type { DockerSandboxRecoveryRecord } from "./record.ts";
import { asSandboxError, isNotFound } from "../_engine_errors.ts";

/** A resource as the Engine shows it, reduced to what ownership checks need. */
export interface ObservedResource {
  /** Container or network ID; a volume's name. */
  readonly id: string;
  /** Name (without a container's leading `/`). */
  readonly name: string;
  /** Labels (empty when none). */
  readonly labels: Readonly<Record<string, string>>;
  /** Where its configuration differs from what the record's identity implies. */
  readonly mismatches: readonly string[];
}

/** Deadline and signal of one Engine call. */
export interface ResourceCallOptions {
  /** Deadline of the request, milliseconds. */
  readonly timeoutMs: number;
  /** Aborts the request. */
  readonly signal?: AbortSignal;
}

/** What the table knows of one role. */
export interface ResourceRoleEntry {
  /** Engine object kind. */
  readonly kind: "volume" | "network" | "container";
  /** Inspect by exact name or ID; `undefined` when the Engine answers 404. */
  inspect(engine: DockerEngine, record: DockerSandboxRecoveryRecord, nameOrId: string, options: ResourceCallOptions): Promise<ObservedResource | undefined>;
  /** Remove by exact ID (a volume by its name); `404` counts as done. */
  remove(engine: DockerEngine, id: string, options: ResourceCallOptions): Promise<boolean>;
}

/**
 * A container role; `imageOf` names the image its containers must run, `userOf` its user
 * (default: the keeper's user).
 */
function containerEntry(
  imageOf: (record: DockerSandboxRecoveryRecord) => string | undefined,
  userOf: (record: DockerSandboxRecoveryRecord) => { readonly uid: number; readonly gid: number } = (record) => record.identity.keeperUser,
): ResourceRoleEntry {
  return {
    kind: "container",
    async inspect(engine, record, nameOrId, options) {
      try {
        const found = await inspectContainer(engine, nameOrId, options);
        const user = userOf(record);
        const imageDigest = imageOf(record);
        const mismatches: string[] = [];
        if (found.Image !== imageDigest) mismatches.push(`image is ${found.Image}`);
        if (found.Config.User !== `${user.uid}:${user.gid}`) mismatches.push(`user is ${JSON.stringify(found.Config.User)}`);
        return { id: found.Id, name: found.Name.replace(/^\//u, ""), labels: found.Config.Labels ?? {}, mismatches };
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async remove(engine, id, options) {
      try {
        return await removeContainer(engine, id, options);
      } catch (error) {
        // 409: a removal is already in progress (someone else's, or the Engine's own after
        // a kill). Done once the container is gone; bounded by the same deadline.
        if (!(error instanceof DockerEngineError && error.code === "conflict")) throw error;
        const giveUp = Date.now() + options.timeoutMs;
        for (let pause = 20; Date.now() < giveUp; pause = Math.min(pause * 2, 1_000)) {
          await new Promise((resolve) => setTimeout(resolve, pause));
          try {
            await inspectContainer(engine, id, { timeoutMs: Math.max(1, giveUp - Date.now()), signal: options.signal });
          } catch (inspectError) {
            if (isNotFound(inspectError)) return false;
            throw inspectError;
          }
        }
        throw error;
      }
    },
  };
}

/** A network role; `internal(record)` says whether the network must be internal and isolated. */
function networkEntry(internal: (record: DockerSandboxRecoveryRecord) => boolean): ResourceRoleEntry {
  return {
    kind: "network",
    async inspect(engine, record, nameOrId, options) {
      const found = await inspectNetwork(engine, nameOrId, options);
      if (!found) return undefined;
      const wanted = internal(record);
      const mismatches = found.Driver === "bridge" && found.Internal === wanted && isolatedGateway(found) === wanted
        ? []
        : [`driver ${found.Driver}, internal ${found.Internal}, gateway mode ${found.Options?.[GATEWAY_MODE_OPTION] ?? "default"}`];
      return { id: found.Id, name: found.Name, labels: found.Labels ?? {}, mismatches };
    },
    remove: (engine, id, options) => removeNetwork(engine, id, options),
  };
}

/** The resource table. */
export const RESOURCE_TABLE: Readonly<Record<SandboxResourceRole, ResourceRoleEntry>> = Object.freeze({
  volume: {
    kind: "volume",
    async inspect(engine, _record, name, options) {
      const found = await inspectVolume(engine, name, options);
      if (!found) return undefined;
      return { id: found.Name, name: found.Name, labels: found.Labels ?? {}, mismatches: found.Driver === "local" ? [] : [`driver is ${found.Driver}`] };
    },
    remove: (engine, name, options) => removeVolume(engine, name, options),
  },
  // An allowlist sandbox's own network is internal with an isolated gateway (no address on
  // the host); every other bridge of ours is neither (see egress/networks.ts).
  network: networkEntry((record) => record.identity.proxyImageDigest !== undefined),
  egress: networkEntry(() => false),
  keeper: containerEntry((record) => record.identity.imageDigest),
  accessor: containerEntry((record) => record.identity.imageDigest),
  proxy: containerEntry((record) => record.identity.proxyImageDigest),
  relay: containerEntry((record) => record.identity.relayImageDigest),
  // The copier runs as root with the few capabilities a faithful copy needs (snapshots/copier.ts).
  copier: containerEntry((record) => record.identity.imageDigest, () => ({ uid: 0, gid: 0 })),
});

/**
 * Roles in removal order: containers before the networks before the volume; the port relay
 * first, as it lives in the keeper's network namespace.
 */
export const REMOVAL_ORDER: readonly SandboxResourceRole[] = Object.freeze(["relay", "keeper", "proxy", "accessor", "copier", "network", "egress", "volume"]);

/**
 * Where `observed` differs from this record's resource of `role` — its name, each label
 * that is missing, different or extra, its configuration fingerprint; empty when it is ours.
 */
export function ownershipDefects(record: DockerSandboxRecoveryRecord, role: SandboxResourceRole, observed: ObservedResource): string[] {
  const defects: string[] = [];
  if (observed.name !== record.identity.names[role]) defects.push(`name is ${observed.name}`);
  const expected = resourceLabels(record, role);
  if (!labelsMatch(observed.labels, expected)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(observed.labels)])].sort();
    const differ = keys.filter((key) => observed.labels[key] !== expected[key]);
    defects.push(`labels differ (${differ.join(", ")})`);
  }
  return [...defects, ...observed.mismatches];
}

/** Whether `observed` is this record's resource of `role`: exact name, exact labels, fingerprint. */
export function isOwned(record: DockerSandboxRecoveryRecord, role: SandboxResourceRole, observed: ObservedResource): boolean {
  return ownershipDefects(record, role, observed).length === 0;
}

/**
 * Look up the exact name of `role` and return its ID when it is this record's own.
 *
 * @returns `{ id }` when ours, `{ foreign }` (what holds it) when the name holds something
 *   else, `{ absent: true }` when nothing has the name
 */
export async function resolveByName(
  engine: DockerEngine,
  record: DockerSandboxRecoveryRecord,
  role: SandboxResourceRole,
  options: ResourceCallOptions,
): Promise<{ id: string } | { foreign: ObservedResource } | { absent: true }> {
  const observed = await RESOURCE_TABLE[role].inspect(engine, record, record.identity.names[role], options);
  if (!observed) return { absent: true };
  return isOwned(record, role, observed) ? { id: observed.id } : { foreign: observed };
}

/** An error that says the outcome of a create is unknown and the record keeps it `creating`. */
function uncertain(role: SandboxResourceRole, action: string, error: unknown): SandboxError {
  const failure = asSandboxError(error, action);
  failure.message = `${failure.message}; whether the ${role} was created is unknown, and the recovery record keeps it as creating`;
  return failure;
}

/**
 * Create the resource of `role`, recorded: `creating` is persisted first; an Engine answer
 * refusing the create is definite (`planned` again; a `409` becomes a
 * {@linkcode SandboxConflictError}); an unknown outcome is resolved once by exact name and
 * adopted only when it is this record's own.
 *
 * @param dispatch sends the create; resolves with the new ID
 * @returns the resource's ID (recorded `created` before this resolves)
 * @throws {SandboxConflictError} when the Engine answers 409 (the name is taken)
 * @throws {SandboxError} the create's failure; for an unknown outcome the message says so
 */
export async function createRecorded(
  engine: DockerEngine,
  log: RecoveryLog,
  role: SandboxResourceRole,
  action: string,
  dispatch: () => Promise<string>,
  lookup: ResourceCallOptions,
): Promise<string> {
  try {
    await log.mark(role, "creating");
  } catch (error) {
    // Not persisted, so not dispatched: the owner knows nothing was created.
    log.replace(role, "planned");
    throw error;
  }
  let id: string;
  try {
    id = await dispatch();
  } catch (error) {
    if (error instanceof SandboxConflictError || (error instanceof DockerEngineError && error.status !== undefined)) {
      // A definite answer: nothing was created under this record.
      await log.mark(role, "planned").catch(() => {});
      if (error instanceof SandboxConflictError) throw error;
      if (error.code === "conflict") {
        throw new SandboxConflictError(
          `Cannot ${action}: the name ${log.resource(role).name} is taken by a resource this sandbox did not create; it is left alone`,
          { cause: error },
        );
      }
      throw asSandboxError(error, action);
    }
    const found = await resolveByName(engine, log.record, role, lookup).catch(() => undefined);
    if (found && "id" in found) {
      await log.mark(role, "created", found.id);
      throw asSandboxError(error, action);
    }
    throw uncertain(role, action, error);
  }
  await log.mark(role, "created", id);
  return id;
}

/**
 * Remove the resource of `role` by its recorded ID: `removing` is persisted first, `404`
 * counts as done, `removed` is persisted after. A `creating` entry is first resolved by
 * exact name (adopted only when ours); `planned` and `removed` entries need nothing.
 *
 * @returns `"removed"`, `"absent"` (nothing of ours under this role), or `"uncertain"` (a
 *   `creating` entry whose name is absent: the create may still land; the entry stays)
 * @throws the Engine's or the port's failure (the entry keeps its state; call again)
 */
export async function removeRecorded(
  engine: DockerEngine,
  log: RecoveryLog,
  role: SandboxResourceRole,
  options: ResourceCallOptions,
): Promise<"removed" | "absent" | "uncertain"> {
  const entry = log.record.resources[role];
  if (!entry || entry.state === "planned" || entry.state === "removed") return "absent";
  let id = entry.id;
  if (entry.state === "creating") {
    const found = await resolveByName(engine, log.record, role, options);
    if ("absent" in found) return "uncertain";
    if ("foreign" in found) {
      await log.mark(role, "removed");
      return "absent";
    }
    id = found.id;
    await log.mark(role, "created", id);
  }
  await log.mark(role, "removing", id);
  await RESOURCE_TABLE[role].remove(engine, id!, options);
  await log.mark(role, "removed");
  return "removed";
}

/** What {@linkcode removeAllRecorded} left behind. */
export interface RemovalReport {
  /** Roles whose removal failed, with the failure. */
  readonly failures: readonly { readonly role: SandboxResourceRole; readonly error: unknown }[];
  /** Roles whose create outcome is still unknown (name absent); their entries stay `creating`. */
  readonly uncertain: readonly SandboxResourceRole[];
}

/**
 * Remove every resource of the record in {@linkcode REMOVAL_ORDER}; a failure of one role
 * does not stop the others, except that the volume and network wait for the containers
 * (a container still using them would make their removal fail).
 *
 * @param leave roles left untouched, entries as they are (recovery's squatted names)
 */
export async function removeAllRecorded(
  engine: DockerEngine,
  log: RecoveryLog,
  options: ResourceCallOptions,
  leave: readonly SandboxResourceRole[] = [],
): Promise<RemovalReport> {
  const failures: { role: SandboxResourceRole; error: unknown }[] = [];
  const uncertainRoles: SandboxResourceRole[] = [];
  for (const role of REMOVAL_ORDER) {
    if (leave.includes(role)) continue;
    const containerFailed = failures.some((failure) => RESOURCE_TABLE[failure.role].kind === "container");
    if (RESOURCE_TABLE[role].kind !== "container" && containerFailed) {
      failures.push({ role, error: new SandboxEngineError(`Cannot remove the ${role}: a container of the sandbox could not be removed first`) });
      continue;
    }
    try {
      if (await removeRecorded(engine, log, role, options) === "uncertain") uncertainRoles.push(role);
    } catch (error) {
      failures.push({ role, error });
    }
  }
  return { failures, uncertain: uncertainRoles };
}
