/**
 * The recovery record of one Docker sandbox, schema `agentcell.docker-sandbox-recovery.v2`:
 * an immutable identity (reservation, profile, endpoint, daemon, image, namespace, user,
 * resource names, a per-reservation nonce and two digests) plus one lifecycle entry per
 * resource. Every resource carries a label with the digest of that identity, so a look-alike
 * made by someone else (who can copy names and the fixed labels, but not the nonce) is never
 * adopted.
 *
 * Resource states: `planned` (named, never dispatched) → `creating` (persisted before the
 * create is dispatched; the outcome is unknown until it is inspected) → `created` (with the
 * inspected ID) → `removing` (persisted before the removal is dispatched) → `removed`.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { MAX_API_VERSION } from "../../engine/api_version.ts";
import type { SandboxPolicy } from "../../sandbox/policy.ts";
import type { DockerSandboxBackendSettings } from "../config.ts";
import type { SandboxResourceNames, SandboxResourceRole } from "../names.ts";

/** Schema name of the records this backend writes. */
export const RECOVERY_SCHEMA = "agentcell.docker-sandbox-recovery.v2";

/** Largest record this backend writes or reads, in bytes of JSON. */
export const MAX_RECOVERY_RECORD_BYTES = 64 * 1024;

/**
 * Backend revision recorded in labels and records: `engine-<api>-v2-<profile>`, where `<api>`
 * is the highest Engine API version this client speaks ({@linkcode MAX_API_VERSION}).
 *
 * @param profile the profile name
 * @returns the revision string
 */
export function backendRevision(profile: string): string {
  return `engine-${MAX_API_VERSION}-v2-${profile}`;
}

/** Lifecycle of one resource in the record (see the module doc). */
export type RecoveryResourceState = "planned" | "creating" | "created" | "removing" | "removed";

/** One resource in a recovery record. */
export interface RecoveryResource {
  /** Exact name, derived from the reservation. */
  readonly name: string;
  /** Exact Engine ID once inspected (a volume's ID is its name). */
  readonly id?: string;
  /** Where the resource is in its lifecycle. */
  readonly state: RecoveryResourceState;
  /**
   * When a `creating` resource's name was first seen absent by recovery (milliseconds since
   * the epoch); see `DockerSandboxRecoverOptions.settleUncertainAfterMs`.
   */
  readonly absentSince?: number;
}

/** The immutable identity of a record; its digest is the `dev.agentcell.record` label. */
export interface RecoveryIdentity {
  /** Reservation ID (32 lowercase hex digits). */
  readonly reservationId: string;
  /** Backend revision, `engine-<api>-v2-<profile>`. */
  readonly revision: string;
  /** Profile name. */
  readonly profile: string;
  /** Engine endpoint, `unix:///…`. */
  readonly endpoint: string;
  /** Backend namespace. */
  readonly namespace: string;
  /** Daemon ID (`GET /info` `ID`). */
  readonly daemonId: string;
  /** Exact workload image ID. */
  readonly imageDigest: string;
  /**
   * Exact image ID of the egress proxy: present exactly when the sandbox's network is an
   * allowlist (its `network` is then internal, and it has a `proxy` and an `egress`).
   * Records written before the allowlist existed lack it and every `proxy`/`egress` entry.
   */
  readonly proxyImageDigest?: string;
  /**
   * Exact image ID of the port relay (`config.proxyImageDigest`, whatever the network):
   * present when the backend has that helper image, so a `relay` may be created on the first
   * `connect()`. Records written before the relay existed lack it and every `relay` entry.
   */
  readonly relayImageDigest?: string;
  /** The guest user: `config.user`, or the uid drawn from `config.userRange` at `reserve()`. */
  readonly user: { readonly uid: number; readonly gid: number };
  /**
   * The range `user` was drawn from (`config.userRange`); absent for a fixed `config.user`.
   * Its presence puts the `dev.agentcell.uid`/`gid` labels on every resource.
   */
  readonly userRange?: { readonly first: number; readonly count: number };
  /** The keeper's user (its containers' `User`). */
  readonly keeperUser: { readonly uid: number; readonly gid: number };
  /**
   * Present exactly on the record of a workspace snapshot (`sandbox.snapshot()`,
   * `backend.importSnapshot()`): its `volume` is the snapshot's tree, its `keeper` stays
   * `planned` (a snapshot never computes), its `copier` is the helper that filled it.
   */
  readonly snapshot?: {
    /** Reservation ID of the sandbox it was taken of; absent for an imported snapshot. */
    readonly source?: string;
    /** When it was taken, milliseconds since the epoch. */
    readonly createdAt: number;
  };
  /** Every resource name of the reservation. */
  readonly names: SandboxResourceNames;
  /** 32 random lowercase hex digits, known only to the record and the labels' digest. */
  readonly nonce: string;
  /** SHA-256 (hex) of the normalized profile, user, image and sorted datasets. */
  readonly configurationDigest: string;
  /** SHA-256 (hex) of the normalized request policy. */
  readonly policyDigest: string;
}

/** A recovery record of this backend (JSON; store it verbatim). */
export interface DockerSandboxRecoveryRecord {
  /** {@linkcode RECOVERY_SCHEMA}. */
  readonly schema: typeof RECOVERY_SCHEMA;
  /** Reservation ID (the same as `identity.reservationId`; the key a store files it under). */
  readonly reservationId: string;
  /** The immutable identity. */
  readonly identity: RecoveryIdentity;
  /** SHA-256 (hex) of the canonical JSON of `identity`. */
  readonly identityDigest: string;
  /**
   * Resources by role; `network` only for `outbound` and `allowlist`, `proxy` and `egress`
   * only for `allowlist`, `accessor` once an export began, `relay` once a `connect()` began.
   */
  readonly resources: Readonly<Partial<Record<SandboxResourceRole, RecoveryResource>>>;
  /** Index signature of the neutral `SandboxRecoveryRecord` contract. */
  readonly [field: string]: unknown;
}

const hex = (length: number) => z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`, "u"));
const nameSchema = z.string().min(1).max(255).regex(/^[a-z0-9][a-z0-9_.-]*$/u);
const resourceSchema = z.strictObject({
  name: nameSchema,
  // Container and network IDs are exactly 64 hex digits; a volume's ID is its name (checked
  // against identity.names below). Nothing else may reach an Engine path.
  id: z.string().regex(/^(?:[0-9a-f]{64}|[a-z0-9][a-z0-9_.-]{0,254})$/u).optional(),
  state: z.enum(["planned", "creating", "created", "removing", "removed"]),
  absentSince: z.number().int().nonnegative().optional(),
}).refine((resource) => (resource.state === "created" || resource.state === "removing") === (resource.id !== undefined) || resource.state === "removed", {
  message: "must carry an id exactly when created or removing",
});

/** zod schema of a whole v2 record. */
export const recoveryRecordSchema: z.ZodType<DockerSandboxRecoveryRecord> = z.strictObject({
  schema: z.literal(RECOVERY_SCHEMA),
  reservationId: hex(32),
  identity: z.strictObject({
    reservationId: hex(32),
    revision: z.string().min(1).max(200),
    profile: z.string().min(1).max(100),
    endpoint: z.string().min(1).max(4096),
    namespace: z.string().min(1).max(32),
    daemonId: z.string().max(255),
    imageDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/u),
    proxyImageDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/u).optional(),
    relayImageDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/u).optional(),
    user: z.strictObject({ uid: z.number().int().positive(), gid: z.number().int().positive() }),
    userRange: z.strictObject({ first: z.number().int().positive(), count: z.number().int().positive() }).optional(),
    keeperUser: z.strictObject({ uid: z.number().int().positive(), gid: z.number().int().positive() }),
    snapshot: z.strictObject({ source: hex(32).optional(), createdAt: z.number().int().nonnegative() }).optional(),
    // `proxy`, `egress`, `relay` and `copier` are optional: records written before them lack them.
    names: z.strictObject({
      volume: nameSchema,
      keeper: nameSchema,
      network: nameSchema,
      accessor: nameSchema,
      proxy: nameSchema.optional(),
      egress: nameSchema.optional(),
      copier: nameSchema.optional(),
      relay: nameSchema.optional(),
    }),
    nonce: hex(32),
    configurationDigest: hex(64),
    policyDigest: hex(64),
  }),
  identityDigest: hex(64),
  resources: z.strictObject({
    volume: resourceSchema,
    network: resourceSchema.optional(),
    keeper: resourceSchema,
    accessor: resourceSchema.optional(),
    proxy: resourceSchema.optional(),
    egress: resourceSchema.optional(),
    copier: resourceSchema.optional(),
    relay: resourceSchema.optional(),
  }),
}).superRefine((record, context) => {
  // The resource table must name the identity's own resources: a name or ID edited into it
  // (the identity digest does not cover it) is refused, never acted on.
  for (const [role, entry] of Object.entries(record.resources) as [SandboxResourceRole, { name: string; id?: string } | undefined][]) {
    if (!entry) continue;
    if ((role === "proxy" || role === "egress") && record.identity.proxyImageDigest === undefined) {
      context.addIssue({ code: "custom", path: ["resources", role], message: "must be absent when identity.proxyImageDigest is absent (only allowlist sandboxes have one)" });
    }
    if (role === "relay" && record.identity.relayImageDigest === undefined) {
      context.addIssue({ code: "custom", path: ["resources", role], message: "must be absent when identity.relayImageDigest is absent (the relay runs that image)" });
    }
    if (entry.name !== record.identity.names[role]) {
      context.addIssue({ code: "custom", path: ["resources", role, "name"], message: `must be the identity's ${role} name ${record.identity.names[role]}` });
    }
    const idOk = entry.id === undefined || (role === "volume" ? entry.id === entry.name : /^[0-9a-f]{64}$/u.test(entry.id));
    if (!idOk) {
      context.addIssue({
        code: "custom",
        path: ["resources", role, "id"],
        message: role === "volume" ? "must be the volume's name" : "must be a 64-hex-digit Engine ID",
      });
    }
  }
}) as unknown as z.ZodType<DockerSandboxRecoveryRecord>;

/** JSON with object keys sorted at every level: the input of every digest. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 (lowercase hex) of the canonical JSON of `value`. */
export function digestOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

/**
 * The configuration a record is bound to: the normalized profile, user (or user range),
 * keeper user, image and the
 * dataset list as normalized (sorted by name; each `name`, `imageDigest` and `subpath` when
 * given). A backend with another dataset list conflicts with the record before any Engine
 * access.
 */
export function configurationDigest(settings: DockerSandboxBackendSettings): string {
  return digestOf({
    profile: settings.profile,
    user: settings.user,
    userRange: settings.userRange,
    keeperUser: settings.keeperUser,
    imageDigest: settings.imageDigest,
    datasets: settings.datasets,
    // Absent (and so not in the digest) unless configured: older records keep their digest.
    proxyImageDigest: settings.proxyImageDigest,
  });
}

/**
 * The fields of an identity that the backend's configuration fixes (and `recover()` checks
 * against it): revision, profile, endpoint, namespace, workload image, user range, keeper
 * user and configuration digest.
 *
 * @param settings the backend's settings
 * @returns those fields of a {@linkcode RecoveryIdentity}
 */
export function backendIdentity(
  settings: DockerSandboxBackendSettings,
): Pick<RecoveryIdentity, "revision" | "profile" | "endpoint" | "namespace" | "imageDigest" | "userRange" | "keeperUser" | "configurationDigest"> {
  return {
    revision: backendRevision(settings.profile.name),
    profile: settings.profile.name,
    endpoint: settings.endpoint,
    namespace: settings.namespace,
    imageDigest: settings.imageDigest,
    ...(settings.userRange === undefined ? {} : { userRange: settings.userRange }),
    keeperUser: settings.keeperUser,
    configurationDigest: configurationDigest(settings),
  };
}

/** The digest of a normalized request policy. */
export function policyDigest(policy: SandboxPolicy): string {
  return digestOf(policy);
}

/** A fresh per-reservation nonce: 32 lowercase hex digits from `crypto.getRandomValues`. */
export function newNonce(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * The planned record of a reservation: every resource of `roles` in state `planned`.
 *
 * @param identity the immutable identity (its digest is computed here)
 * @param roles the roles this sandbox will create, in creation order
 */
export function plannedRecord(identity: RecoveryIdentity, roles: readonly SandboxResourceRole[]): DockerSandboxRecoveryRecord {
  const resources: Partial<Record<SandboxResourceRole, RecoveryResource>> = {};
  for (const role of roles) resources[role] = Object.freeze({ name: identity.names[role], state: "planned" });
  return Object.freeze({
    schema: RECOVERY_SCHEMA,
    reservationId: identity.reservationId,
    identity: Object.freeze(identity),
    identityDigest: digestOf(identity),
    resources: Object.freeze(resources),
  });
}
