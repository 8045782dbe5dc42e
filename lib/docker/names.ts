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
} = Object.freeze({
  /** Always `"agentcell"`: marks a resource of this library. */
  owner: "dev.agentcell.owner",
  /** The backend namespace. */
  namespace: "dev.agentcell.namespace",
  /** The reservation ID. */
  reservation: "dev.agentcell.reservation",
  /** `volume`, `keeper`, `network` or `accessor`. */
  role: "dev.agentcell.role",
  /** Backend revision (`engine-1.52-v1-<profile>`). */
  revision: "dev.agentcell.revision",
});

/** Roles of the resources of one sandbox. */
export type SandboxResourceRole = "volume" | "keeper" | "network" | "accessor";

/** Names of the resources of one sandbox. */
export interface SandboxResourceNames {
  /** Private named volume mounted at `/workspace`. */
  readonly volume: string;
  /** The keeper (compute) container. */
  readonly keeper: string;
  /** The private bridge network (`outbound` only). */
  readonly network: string;
  /** The never-started export accessor container. */
  readonly accessor: string;
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
  });
}

/** The exact label set of one resource. */
export function resourceLabels(
  namespace: string,
  reservationId: string,
  role: SandboxResourceRole,
  revision: string,
): Readonly<Record<string, string>> {
  return Object.freeze({
    [LABELS.owner]: "agentcell",
    [LABELS.namespace]: namespace,
    [LABELS.reservation]: reservationId,
    [LABELS.role]: role,
    [LABELS.revision]: revision,
  });
}

/** Whether `actual` holds exactly the `expected` labels (extra labels fail too). */
export function labelsMatch(actual: Readonly<Record<string, string>> | null | undefined, expected: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(actual ?? {});
  return keys.length === Object.keys(expected).length && keys.every((key) => actual![key] === expected[key]);
}
