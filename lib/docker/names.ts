/**
 * Resource identities derived from a reservation: every name and label is fixed before
 * anything is created, so a later controller can find exactly these resources again.
 *
 * @module
 */

/** Label keys on every resource this backend creates. */
export const LABELS: {
  readonly owner: string;
  readonly namespace: string;
  readonly reservation: string;
  readonly role: string;
  readonly revision: string;
  readonly record: string;
  readonly configuration: string;
  readonly uid: string;
  readonly gid: string;
  readonly snapshot: string;
} = Object.freeze({
  /** Always `"agentcell"`: marks a resource of this library. */
  owner: "dev.agentcell.owner",
  /** The backend namespace. */
  namespace: "dev.agentcell.namespace",
  /** The reservation ID. */
  reservation: "dev.agentcell.reservation",
  /** `volume`, `keeper`, `network`, `accessor`, `proxy`, `egress`, `relay` or `copier`. */
  role: "dev.agentcell.role",
  /** Backend revision (`engine-1.52-v2-<profile>`). */
  revision: "dev.agentcell.revision",
  /**
   * SHA-256 of the recovery record's immutable identity, which includes a per-reservation
   * nonce that only the record holds: names and the other labels can be copied by anyone
   * who sees a resource, this one cannot be derived from them.
   */
  record: "dev.agentcell.record",
  /** The record's `configurationDigest` (profile, user, image, datasets). */
  configuration: "dev.agentcell.configuration",
  /** The agent's uid (`identity.user.uid`), on the resources of a `config.userRange` sandbox only. */
  uid: "dev.agentcell.uid",
  /** The agent's gid (`identity.user.gid`), likewise. */
  gid: "dev.agentcell.gid",
  /**
   * `"true"` on the resources of a workspace snapshot's record (its volume and its copier):
   * a snapshot is a record of its own, reclaimable apart from the sandbox it was taken of.
   */
  snapshot: "dev.agentcell.snapshot",
});

/** Roles of the resources of one sandbox. */
export type SandboxResourceRole = "volume" | "keeper" | "network" | "accessor" | "proxy" | "egress" | "relay" | "copier";

/** Names of the resources of one sandbox. */
export interface SandboxResourceNames {
  /** Private named volume mounted at `/workspace`. */
  readonly volume: string;
  /** The keeper (compute) container. */
  readonly keeper: string;
  /** The private bridge network (`outbound`; for `allowlist` an internal one). */
  readonly network: string;
  /** The never-started export accessor container. */
  readonly accessor: string;
  /** The egress proxy container (`allowlist` only). */
  readonly proxy: string;
  /** The proxy's own bridge network to the outside (`allowlist` only). */
  readonly egress: string;
  /**
   * The short-lived helper that copies a workspace tree between two volumes (a snapshot
   * taken, a fork filled; see `snapshots/copier.ts`). Records written before snapshots lack it.
   */
  readonly copier: string;
  /** The port relay container (created on the first `connect()`; see `ports/`). */
  readonly relay: string;
}

/**
 * Make a reservation ID: 32 lowercase hex digits from `crypto.getRandomValues`.
 */
export function newReservationId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Derive the resource names of a reservation: `agentcell-<namespace>-<reservation>-<role>`.
 */
export function resourceNames(namespace: string, reservationId: string): SandboxResourceNames {
  const base = `agentcell-${namespace}-${reservationId}`;
  return Object.freeze({
    volume: `${base}-volume`,
    keeper: `${base}-keeper`,
    network: `${base}-network`,
    accessor: `${base}-accessor`,
    proxy: `${base}-proxy`,
    egress: `${base}-egress`,
    copier: `${base}-copier`,
    relay: `${base}-relay`,
  });
}

/**
 * The exact label set of one resource of a record (with `dev.agentcell.uid`/`gid` when the
 * identity was drawn from a `userRange`).
 *
 * @param record the record's identity and its digest
 * @param role the resource's role
 */
export function resourceLabels(
  record: {
    readonly identity: {
      readonly namespace: string;
      readonly reservationId: string;
      readonly revision: string;
      readonly configurationDigest: string;
      readonly user: { readonly uid: number; readonly gid: number };
      readonly userRange?: unknown;
      readonly snapshot?: unknown;
    };
    readonly identityDigest: string;
  },
  role: SandboxResourceRole,
): Readonly<Record<string, string>> {
  const { identity } = record;
  return Object.freeze({
    [LABELS.owner]: "agentcell",
    [LABELS.namespace]: identity.namespace,
    [LABELS.reservation]: identity.reservationId,
    [LABELS.role]: role,
    [LABELS.revision]: identity.revision,
    [LABELS.record]: record.identityDigest,
    [LABELS.configuration]: identity.configurationDigest,
    // Only identities drawn from a range are labelled: fixed-user resources keep the label
    // set of earlier builds, so their records still recover.
    ...(identity.userRange === undefined ? {} : { [LABELS.uid]: String(identity.user.uid), [LABELS.gid]: String(identity.user.gid) }),
    ...(identity.snapshot === undefined ? {} : { [LABELS.snapshot]: "true" }),
  });
}

/** Whether `actual` holds exactly the `expected` labels (extra labels fail too). */
export function labelsMatch(actual: Readonly<Record<string, string>> | null | undefined, expected: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(actual ?? {});
  return keys.length === Object.keys(expected).length && keys.every((key) => actual![key] === expected[key]);
}
