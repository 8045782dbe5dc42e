/**
 * The copier: a short-lived helper container of ours that copies one workspace tree from a
 * volume into another (a snapshot taken of a sandbox's `/workspace/work`, a fork's
 * `/workspace/work` filled from a snapshot) with the image's own `cp -a`, inside the Engine:
 * no byte crosses the Engine socket, no host path is bound.
 *
 * Hardening: the sandboxes' locked-down `HostConfig` (read-only root, no new privileges,
 * private IPC and cgroup namespaces, network `none`, no binds, devices, ports or logs; see
 * `keeper/spec.ts` `lockedDownHostConfig`), bounded memory, CPU and PIDs, the source volume
 * read-only, and only the source and destination volumes mounted. It runs as root with
 * exactly the capabilities a faithful copy of another user's tree needs and nothing else:
 * `CHOWN` (keep owners), `DAC_OVERRIDE` (read a mode-000 file, write into a read-only
 * directory), `FOWNER` (set modes and times on files it does not own), `FSETID` (keep
 * set-group-ID bits). The guest user itself cannot do this: files it made unreadable to
 * itself would be lost, and a fork of another uid needs its files given to it.
 *
 * Recorded like every resource (role `copier`, `recovery/resources.ts`): `creating` before
 * the create, its ID before the start, removed by exact ID after it exited; a controller
 * that dies while it runs leaves a record that `recover()` reclaims.
 *
 * @module
 */
import { type SandboxError, SandboxEngineError, SandboxUnsupportedError } from "../../sandbox/errors.ts";
import type { DockerEngine } from "../../engine/client.ts";
import { type ContainerInspect, createContainer, inspectContainer, startContainer, waitContainer } from "../../engine/containers.ts";
import type { RecoveryLog } from "../recovery/log.ts";
import { createRecorded, removeRecorded } from "../recovery/resources.ts";
import { HARDENING_FIELDS, hostConfigMismatches, lockedDownHostConfig } from "../keeper/spec.ts";
import { resourceLabels } from "../names.ts";
import { assertCreateWarnings } from "../datasets/warnings.ts";

/** The copier's memory bound, bytes (`cp` streams file by file). */
export const COPIER_MEMORY_BYTES = 64 * 1024 * 1024;
/** The copier's PID bound (`sh`, `cp`, `chown`). */
export const COPIER_PIDS = 16;
/** The capabilities the copier keeps (see the module doc). */
export const COPIER_CAPABILITIES: readonly string[] = Object.freeze(["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID"]);

/** Where the copier mounts the source volume (read-only). */
const SOURCE = "/copier/source";
/** Where the copier mounts the destination volume. */
const TARGET = "/copier/target";

/** What every copier container needs. */
export interface CopierContext {
  /** The Engine. */
  readonly engine: DockerEngine;
  /** The record the copier belongs to (a snapshot's, or a fork's); it gains a `copier` entry. */
  readonly log: RecoveryLog;
  /**
   * Image ID the copier runs (the backend's workload image: it needs `sh`, `cp -a`, `chown -R
   * -h`, and for a bounded copy `find`, `stat -c` and `awk`; busybox has them all).
   */
  readonly imageDigest: string;
  /** The image platform (`config.profile.image.platform`). */
  readonly platform: string;
  /** OCI runtime of the profile. */
  readonly runtime: "runc" | "runsc";
}

/** One copy. */
export interface CopyRequest extends CopierContext {
  /** Source volume and the directory in it to copy (`""`: its root). */
  readonly from: { readonly volume: string; readonly path: string };
  /** Destination volume and the directory in it that receives the tree (it exists). */
  readonly to: { readonly volume: string; readonly path: string };
  /** Give every copied entry to this owner (a fork's user); absent: owners are kept. */
  readonly owner?: { readonly uid: number; readonly gid: number };
  /**
   * Refuse the copy, before `cp` writes anything, when the regular files of the source tree
   * add up to more than `bytes` (apparent sizes: a sparse file counts at its full length,
   * as the copy writes it); the error thrown is `refusal`. Absent: no bound.
   */
  readonly bound?: { readonly bytes: number; readonly refusal: () => SandboxError };
  /** Deadline of the whole copy, milliseconds. */
  readonly timeoutMs: number;
}

/** The copier's exit status when the tree is past `CopyRequest.bound` (nothing was copied). */
export const COPIER_PAST_BOUND = 3;
/** The copier's exit status when it could not measure the tree (`find` or `stat` failed). */
export const COPIER_UNMEASURED = 4;

function volumeMount(volume: string, target: string, readOnly: boolean): Record<string, unknown> {
  return { Type: "volume", Source: volume, Target: target, ReadOnly: readOnly, VolumeOptions: { NoCopy: true } };
}

/**
 * The scan before a bounded copy: the apparent sizes of the source's regular files (`find
 * -type f`, never following a symlink, and `stat -c %s`), summed by `awk`; past `bytes` it
 * exits {@linkcode COPIER_PAST_BOUND}, when `find` or `stat` failed (or printed anything but
 * a size) {@linkcode COPIER_UNMEASURED}. The sum is exact for the copy that follows: the
 * source cannot change in between (a snapshot's source sandbox is paused or stopped for the
 * whole copy, and a fork's source is an immutable snapshot). A hard-linked file counts once
 * per path: never less than `cp -a` writes. The applets are the busybox ones (and POSIX:
 * GNU `find`, `stat` and `awk` take the same flags); awk's numbers are doubles, exact for
 * sums up to 2^53 bytes. The scan writes nothing, so a refused copy leaves the destination
 * as it was.
 */
function scanScript(from: string, bytes: number): string {
  const sum = `awk -v max=${bytes} '/^[0-9]+$/ { total += $1; next } { bad = 1 } ` +
    `END { if (bad) exit ${COPIER_UNMEASURED}; if (total > max + 0) exit ${COPIER_PAST_BOUND}; exit 0 }'`;
  return `{ find ${from}/. -type f -exec stat -c %s {} + || echo unmeasured; } | ${sum}`;
}

/**
 * The copier's shell line: with a bound, the scan first ({@linkcode scanScript}); then copy the
 * tree, then (for a fork) give it to its owner. Busybox `cp -a` keeps no holes (it has no
 * `--sparse`, nor has busybox `tar` `-S`), which is why the bound is on apparent sizes.
 */
export function copyScript(request: Pick<CopyRequest, "from" | "to" | "owner" | "bound">): string {
  const from = `${SOURCE}/${request.from.path}`.replace(/\/$/u, "");
  const to = `${TARGET}/${request.to.path}`.replace(/\/$/u, "");
  const chown = request.owner === undefined ? "" : ` && chown -R -h ${request.owner.uid}:${request.owner.gid} ${to}`;
  const scan = request.bound === undefined ? "" : `${scanScript(from, request.bound.bytes)} && `;
  return `${scan}cp -a ${from}/. ${to}/${chown}`;
}

/**
 * The `POST /containers/create` body of a copier (see the module doc).
 *
 * @param context image, platform and runtime
 * @param mounts the volumes: `source` (always read-only) and/or `target`
 * @param script the shell line it runs once started (a holder that is never started has one too)
 * @param labels the copier's exact labels
 * @returns the create body
 */
export function copierCreateBody(
  context: Pick<CopierContext, "imageDigest" | "runtime">,
  mounts: { readonly source?: string; readonly target?: string },
  script: string,
  labels: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const hostConfig = lockedDownHostConfig({ memoryBytes: COPIER_MEMORY_BYTES, cpus: 1, pids: COPIER_PIDS }, "none");
  return {
    Image: context.imageDigest,
    User: "0:0",
    Entrypoint: ["/bin/sh"],
    Cmd: ["-c", script],
    Env: [],
    WorkingDir: "/",
    Labels: labels,
    NetworkDisabled: true,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    OpenStdin: false,
    Tty: false,
    HostConfig: {
      ...hostConfig,
      CapAdd: [...COPIER_CAPABILITIES],
      Runtime: context.runtime,
      Mounts: [
        ...(mounts.source === undefined ? [] : [volumeMount(mounts.source, SOURCE, true)]),
        ...(mounts.target === undefined ? [] : [volumeMount(mounts.target, TARGET, false)]),
      ],
    },
  };
}

/**
 * Where a copier's readback differs from its create body: image, user, command, the
 * hardening fields of `HostConfig`, and exactly the volumes sent (read-only as sent).
 *
 * @param inspect `GET /containers/{id}/json` of the copier
 * @param body its create body ({@linkcode copierCreateBody})
 * @returns one sentence per mismatch
 */
export function copierMismatches(inspect: ContainerInspect, body: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const host = body.HostConfig as Record<string, unknown>;
  if (inspect.Image !== body.Image) problems.push(`image is ${inspect.Image}`);
  if (inspect.Config.User !== body.User) problems.push(`user is '${inspect.Config.User}'`);
  if (JSON.stringify(inspect.Config.Cmd) !== JSON.stringify(body.Cmd)) problems.push("its command is not the copy");
  const fields = HARDENING_FIELDS.filter((field) => field in host);
  problems.push(...hostConfigMismatches(inspect.HostConfig as unknown as Record<string, unknown>, host, fields));
  const sent = (host.Mounts as { Source: string; Target: string; ReadOnly: boolean }[]).map((m) => `${m.Source}:${m.Target}:${m.ReadOnly ? "ro" : "rw"}`).sort();
  const seen = inspect.Mounts.map((m) => `${m.Name ?? m.Source}:${m.Destination}:${m.RW ? "rw" : "ro"}`).sort();
  if (JSON.stringify(sent) !== JSON.stringify(seen)) problems.push(`mounts are ${JSON.stringify(seen)}`);
  return problems;
}

/** Create the copier of `context.log` (recorded), checking the create's warnings and its readback. */
async function createCopier(
  context: CopierContext,
  mounts: { readonly source?: string; readonly target?: string },
  script: string,
  timeoutMs: number,
): Promise<string> {
  const { engine, log } = context;
  log.add("copier");
  let warnings: readonly string[] = [];
  const body = copierCreateBody(context, mounts, script, resourceLabels(log.record, "copier"));
  const id = await createRecorded(engine, log, "copier", "create the workspace copier", async () => {
    const created = await createContainer(engine, log.resource("copier").name, body, {
      timeoutMs,
      platform: context.platform,
    });
    warnings = created.warnings;
    return created.id;
  }, { timeoutMs });
  try {
    assertCreateWarnings(warnings, 0, "create the workspace copier");
    const problems = copierMismatches(await inspectContainer(engine, id, { timeoutMs }), body);
    if (problems.length > 0) {
      throw new SandboxUnsupportedError(`Cannot create the workspace copier: it reads back differently: ${problems.join("; ")}`);
    }
  } catch (error) {
    await removeRecorded(engine, log, "copier", { timeoutMs }).catch(() => {});
    throw error;
  }
  return id;
}

/** A never-started copier that holds one volume for the Engine's archive endpoints. */
export interface VolumeHolder {
  /** The container's ID (`GET`/`PUT /containers/{id}/archive`). */
  readonly id: string;
  /** Where the volume is in it: the archive path. */
  readonly path: string;
  /** Remove it (recorded); idempotent. */
  remove(): Promise<void>;
}

/**
 * Create a never-started copier that mounts `volume` (read-only for `"read"`) so the
 * Engine's archive endpoints reach it: a snapshot's export (`GET`) and import (`PUT`).
 *
 * @throws {SandboxError} as the recorded create throws
 */
export async function holdVolume(context: CopierContext, volume: string, access: "read" | "write", timeoutMs: number): Promise<VolumeHolder> {
  const mounts = access === "read" ? { source: volume } : { target: volume };
  const id = await createCopier(context, mounts, "exit 1", timeoutMs);
  let removal: Promise<void> | undefined;
  return {
    id,
    path: access === "read" ? SOURCE : TARGET,
    remove: () => removal ??= removeRecorded(context.engine, context.log, "copier", { timeoutMs }).then(() => {}),
  };
}

/**
 * Copy one tree (see {@linkcode CopyRequest}): the copier is created (recorded), started,
 * waited for and removed (recorded), also when the copy fails.
 *
 * @throws {SandboxQuotaError} `request.bound.refusal()` when the tree's files are past the
 *   bound (nothing was copied)
 * @throws {SandboxEngineError} when the copy exits non-zero (the tree holds something `cp`
 *   cannot copy, the destination is full), the bounded scan could not measure the tree, or
 *   the Engine fails
 * @throws {SandboxDeadlineError} / {SandboxError} as the recorded create and removal throw
 */
export async function copyTree(request: CopyRequest): Promise<void> {
  const { engine, log, timeoutMs } = request;
  const until = Date.now() + timeoutMs;
  const left = () => Math.max(1, until - Date.now());
  const id = await createCopier(request, { source: request.from.volume, target: request.to.volume }, copyScript(request), left());
  let failure: unknown;
  try {
    await startContainer(engine, id, { timeoutMs: left() });
    const code = await waitContainer(engine, id, { condition: "not-running", signal: AbortSignal.timeout(left()) });
    if (code === COPIER_PAST_BOUND && request.bound !== undefined) throw request.bound.refusal();
    if (code === COPIER_UNMEASURED && request.bound !== undefined) {
      throw new SandboxEngineError(
        "Cannot copy the workspace: the copier could not measure the tree's file sizes (find or stat failed, or the image lacks find, stat or awk); nothing was copied",
      );
    }
    if (code === 127) {
      throw new SandboxEngineError(
        "Cannot copy the workspace: a command the copier runs is not in the workload image (it needs sh, cp, chown, and for a byte bound find, stat and awk; busybox has them); nothing was kept",
      );
    }
    if (code !== 0) {
      throw new SandboxEngineError(
        `Cannot copy the workspace: the copier's cp exited with status ${code} (a tree cp -a cannot copy, or a full disk); nothing was kept`,
      );
    }
  } catch (error) {
    failure = error;
  }
  // Removed whatever happened; a failed removal leaves the entry recorded for recover().
  await removeRecorded(engine, log, "copier", { timeoutMs: Math.max(left(), 5_000) }).catch((error) => void (failure ??= error));
  if (failure !== undefined) throw failure;
}
