/**
 * The shape of a DNS host name (RFC 1123 labels of 1 … 63 letters, digits and inner hyphens,
 * dot-separated), shared by the allowlist's entries and the routes' upstreams.
 *
 * @module
 */

/** One DNS label: 1 … 63 letters, digits and inner hyphens. */
export const DNS_LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";

/** A whole DNS name (case-insensitive), without a trailing dot. */
export const DNS_NAME: RegExp = new RegExp(`^(?:${DNS_LABEL}\\.)*${DNS_LABEL}$`, "iu");
