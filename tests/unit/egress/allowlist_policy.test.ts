// The allowlist network kind without an engine: policy validation (every field and bound
// named with its fix), normalisation, the reserve-time proxy image check, the backend
// configuration field, the recovery record's compatible extension, and the bounded queue of
// decisions (drop-oldest with a count).
import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import { DockerEgressEvents } from "../../../lib/docker/egress/events.ts";
import { egressGuestEnv } from "../../../lib/docker/egress/guest_env.ts";
import { resourceNames } from "../../../lib/docker/names.ts";
import { configurationDigest, plannedRecord, recoveryRecordSchema } from "../../../lib/docker/recovery/record.ts";
import { normalizeBackendConfig } from "../../../lib/docker/config.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";
import { MAX_ALLOWLIST_CONFIG_BYTES, MAX_ALLOWLIST_ENTRIES } from "../../../lib/sandbox/network_allowlist.ts";
import { normalizePolicy, type SandboxPolicyInput } from "../../../lib/sandbox/policy.ts";
import { assertThrowsSandbox } from "../sandbox/_assert.ts";

const resources = { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 };
const image = `sha256:${"c".repeat(64)}`;
const proxyImage = `sha256:${"d".repeat(64)}`;

function refused(network: unknown, message: string): void {
  const error = assertThrowsSandbox(
    () => normalizePolicy({ resources, network } as SandboxPolicyInput),
    SandboxConfigurationError,
    "configuration",
    message,
  );
  assert.equal(error.message, message);
}

test("normalizePolicy fills an allowlist's defaults, lower-cases names and freezes it", () => {
  const policy = normalizePolicy({ resources, network: { kind: "allowlist", hosts: ["API.Example.com", "*.PyPI.org:443"], resolve: { "Api.Example.com.": ["203.0.113.7"] } } });
  assert.deepEqual(policy.network, {
    kind: "allowlist",
    hosts: ["api.example.com", "*.pypi.org:443"],
    addresses: [],
    resolve: { "api.example.com": ["203.0.113.7"] },
    maxConnections: 64,
    headersTimeoutMs: 30_000,
    idleTimeoutMs: 300_000,
    maxBytesPerConnection: 0,
    routes: [],
    upstreamCaCertificates: [],
  });
  assert.ok(Object.isFrozen(policy.network) && Object.isFrozen((policy.network as { hosts: unknown }).hosts));
  assert.equal(normalizePolicy({ resources, network: "outbound" }).network, "outbound");
});

test("normalizePolicy drops a trailing dot of a hosts entry and accepts bare addresses and ranges in addresses", () => {
  const policy = normalizePolicy({ resources, network: { kind: "allowlist", hosts: ["API.example.com.", "*.pypi.org.:443"], addresses: ["10.0.0.5", "fd00::1", "10.1.0.0/16"], maxConnections: 128 } });
  const network = policy.network as { hosts: readonly string[]; addresses: readonly string[]; maxConnections: number };
  assert.deepEqual(network.hosts, ["api.example.com", "*.pypi.org:443"]);
  assert.deepEqual(network.addresses, ["10.0.0.5", "fd00::1", "10.1.0.0/16"]);
  assert.equal(network.maxConnections, 128);
});

test("normalizePolicy refuses a malformed allowlist, naming the field and the fix", () => {
  refused("host", 'Cannot reserve sandbox: policy.network must be "isolated", "outbound" or { kind: "allowlist", hosts: [...] }');
  refused({ kind: "allowlist", hosts: [] }, 'Cannot reserve sandbox: policy.network.hosts must list at least one host (use "isolated" for no network), unless routes are given');
  refused({ kind: "allowlist" }, "Cannot reserve sandbox: policy.network.hosts is required");
  refused({ kind: "allowlist", hosts: ["10.0.0.1"] }, "Cannot reserve sandbox: policy.network.hosts.0 must be a DNS name, not an address: list addresses in policy.network.addresses");
  refused({ kind: "allowlist", hosts: ["ok.test", "[::1]:443"] }, "Cannot reserve sandbox: policy.network.hosts.1 must be a DNS name, not an address: list addresses in policy.network.addresses");
  refused({ kind: "allowlist", hosts: ["bad_name.test"] }, "Cannot reserve sandbox: policy.network.hosts.0 must be a DNS name (api.example.com) or a wildcard (*.example.com), optionally with :port");
  refused({ kind: "allowlist", hosts: ["a.*.test"] }, "Cannot reserve sandbox: policy.network.hosts.0 must be a DNS name (api.example.com) or a wildcard (*.example.com), optionally with :port");
  refused({ kind: "allowlist", hosts: ["api.test:0"] }, "Cannot reserve sandbox: policy.network.hosts.0 must have a port from 1 to 65535");
  refused({ kind: "allowlist", hosts: ["api.test:65536"] }, "Cannot reserve sandbox: policy.network.hosts.0 must have a port from 1 to 65535");
  const many = Array.from({ length: MAX_ALLOWLIST_ENTRIES + 1 }, (_, index) => `h${index}.test`);
  refused({ kind: "allowlist", hosts: many }, "Cannot reserve sandbox: policy.network.hosts must list at most 256 hosts (use wildcards such as *.example.com)");
  refused({ kind: "allowlist", hosts: ["a.test"], addresses: ["10.0.0.0/33"] }, "Cannot reserve sandbox: policy.network.addresses.0 must be an IPv4 or IPv6 address or CIDR range (10.0.0.5, 10.1.0.0/16, fd00::/8)");
  refused({ kind: "allowlist", hosts: ["a.test"], addresses: Array(257).fill("10.0.0.1") }, "Cannot reserve sandbox: policy.network.addresses must list at most 256 addresses (use CIDR ranges)");
  refused({ kind: "allowlist", hosts: ["a.test"], resolve: { "a.test": ["a.test"] } }, "Cannot reserve sandbox: policy.network.resolve.a.test.0 must be an IPv4 or IPv6 address");
  refused({ kind: "allowlist", hosts: ["a.test"], resolve: { "a.test": [] } }, "Cannot reserve sandbox: policy.network.resolve.a.test must list at least one address");
  refused({ kind: "allowlist", hosts: ["a.test"], resolve: { "a.test": Array(17).fill("10.0.0.1") } }, "Cannot reserve sandbox: policy.network.resolve.a.test must list at most 16 addresses");
  // Within every count bound, but too large for the proxy's one environment string.
  const label = "a".repeat(60);
  const bigHosts = Array.from({ length: 256 }, (_, index) => `*.h${index}.${label}.${label}.${label}.test`);
  const bigResolve = Object.fromEntries(
    Array.from({ length: 256 }, (_, index) => [`r${index}.${label}.${label}.${label}.test`, Array(16).fill("2001:db8::1234:5678:9abc")]),
  );
  const bigBytes = new TextEncoder().encode(JSON.stringify([bigHosts, undefined, bigResolve, undefined, undefined])).length;
  assert.ok(bigBytes > MAX_ALLOWLIST_CONFIG_BYTES);
  refused(
    { kind: "allowlist", hosts: bigHosts, resolve: bigResolve },
    `Cannot reserve sandbox: policy.network takes ${bigBytes} bytes of JSON (hosts, addresses, resolve, routes and upstreamCaCertificates together), more than 98304: the proxy receives it as one environment string, which Linux bounds at 128 KiB; list fewer or shorter entries (use wildcards and CIDR ranges)`,
  );
  refused({ kind: "allowlist", hosts: ["a.test"], maxConnections: 129 }, "Cannot reserve sandbox: policy.network.maxConnections must be an integer from 1 to 128 connections");
  refused({ kind: "allowlist", hosts: ["a.test"], addresses: ["0.0.0.0/0"] }, "Cannot reserve sandbox: policy.network.addresses.0 must not be a /0 range (every address): list the ranges the guest needs (10.1.0.0/16)");
  refused({ kind: "allowlist", hosts: ["a.test"], addresses: ["10.0.0.5", "::/0"] }, "Cannot reserve sandbox: policy.network.addresses.1 must not be a /0 range (every address): list the ranges the guest needs (10.1.0.0/16)");
  refused({ kind: "allowlist", hosts: ["a.test"], headersTimeoutMs: 999 }, "Cannot reserve sandbox: policy.network.headersTimeoutMs must be an integer from 1000 to 86400000 milliseconds");
  refused({ kind: "allowlist", hosts: ["a.test"], headersTimeoutMs: 86_400_001 }, "Cannot reserve sandbox: policy.network.headersTimeoutMs must be an integer from 1000 to 86400000 milliseconds");
  refused({ kind: "allowlist", hosts: ["a.test"], headersTimeoutMs: 1500.5 }, "Cannot reserve sandbox: policy.network.headersTimeoutMs must be an integer from 1000 to 86400000 milliseconds");
  refused({ kind: "allowlist", hosts: ["a.test"], idleTimeoutMs: 999 }, "Cannot reserve sandbox: policy.network.idleTimeoutMs must be an integer from 1000 to 86400000 milliseconds");
  refused({ kind: "allowlist", hosts: ["a.test"], maxBytesPerConnection: -1 }, "Cannot reserve sandbox: policy.network.maxBytesPerConnection must be an integer from 0 to 9007199254740991 bytes");
  refused({ kind: "allowlist", hosts: ["a.test"], extra: 1 }, "Cannot reserve sandbox: policy.network.extra is not a known field");
});

test("normalizePolicy refuses a wildcard under a top-level domain or directly under a public suffix unless allowBroadWildcards, naming the entry and the fix", () => {
  const fix = (example: string) => `name the site (${example}), or set policy.network.allowBroadWildcards to true`;
  refused(
    { kind: "allowlist", hosts: ["*.com"] },
    `Cannot reserve sandbox: policy.network.hosts.0 must not be a wildcard directly under the top-level domain com (*.com allows every site registered under it): ${fix("*.example.com")}`,
  );
  refused(
    { kind: "allowlist", hosts: ["api.example.com", "*.TEST.:443"] },
    `Cannot reserve sandbox: policy.network.hosts.1 must not be a wildcard directly under the top-level domain test (*.test allows every site registered under it): ${fix("*.example.test")}`,
  );
  for (const suffix of ["co.uk", "com.au", "co.jp", "github.io"]) {
    refused(
      { kind: "allowlist", hosts: [`*.${suffix}`] },
      `Cannot reserve sandbox: policy.network.hosts.0 must not be a wildcard directly under the public suffix ${suffix} (*.${suffix} allows every site registered under it): ${fix(`*.example.${suffix}`)}`,
    );
  }
  refused(
    { kind: "allowlist", hosts: ["*.com"], allowBroadWildcards: "yes" },
    "Cannot reserve sandbox: policy.network.allowBroadWildcards must be a boolean",
  );
  // One label more is a site, and exact names are never broad.
  for (const host of ["*.example.com", "*.example.co.uk", "*.user.github.io", "com", "co.uk"]) {
    assert.deepEqual((normalizePolicy({ resources, network: { kind: "allowlist", hosts: [host] } }).network as { hosts: unknown }).hosts, [host]);
  }
  // Forced, they are kept as written (the flag is a consent at validation, not a setting).
  const forced = normalizePolicy({ resources, network: { kind: "allowlist", hosts: ["*.com", "*.co.uk:443"], allowBroadWildcards: true } }).network;
  assert.deepEqual((forced as { hosts: unknown }).hosts, ["*.com", "*.co.uk:443"]);
  assert.equal((forced as { allowBroadWildcards?: unknown }).allowBroadWildcards, undefined);
});

test("backend.reserve refuses an allowlist without config.proxyImageDigest, and the config field takes only an exact ID", () => {
  const config = {
    profile: "linux-x64-cgroupfs" as const,
    endpoint: "unix:///nonexistent/docker.sock",
    namespace: "unit",
    spillDirectory: "/tmp",
    imageDigest: image,
    user: { uid: 1000, gid: 1000 },
  };
  const policy: SandboxPolicyInput = { resources, network: { kind: "allowlist", hosts: ["a.test"] } };
  const port = { record: () => Promise.resolve() };
  const error = assertThrowsSandbox(() => createDockerSandboxBackend(config).reserve({ policy }, port), SandboxConfigurationError, "configuration", "config.proxyImageDigest");
  assert.equal(
    error.message,
    "Cannot reserve sandbox: policy.network is an allowlist, which needs an egress proxy image: set config.proxyImageDigest to the exact ID of a local image with Node.js 23.6 or newer as node",
  );
  assert.ok(createDockerSandboxBackend({ ...config, proxyImageDigest: proxyImage }).reserve({ policy }, port).id);
  assert.throws(() => normalizeBackendConfig({ ...config, proxyImageDigest: "node:26" }), (thrown) =>
    thrown instanceof SandboxConfigurationError && thrown.code === "configuration" &&
    thrown.message === "Cannot create Docker sandbox backend: config.proxyImageDigest must be sha256: followed by 64 lowercase hexadecimal digits, the exact ID of a local image with node on its PATH (names and tags are not accepted; list IDs with docker image ls --no-trunc)");
  // Unset, it leaves the configuration digest of older records unchanged.
  const plain = normalizeBackendConfig(config);
  assert.equal(plain.proxyImageDigest, undefined);
  assert.notEqual(configurationDigest(plain), configurationDigest(normalizeBackendConfig({ ...config, proxyImageDigest: proxyImage })));
});

test("recoveryRecordSchema reads records without proxy names (written before the allowlist) and refuses proxy entries without a proxy image", () => {
  const reservationId = "0123456789abcdef0123456789abcdef";
  const names = resourceNames("unit", reservationId);
  const identity = {
    reservationId,
    revision: "engine-1.52-v2-linux-x64-cgroupfs",
    profile: "linux-x64-cgroupfs",
    endpoint: "unix:///x.sock",
    namespace: "unit",
    daemonId: "d",
    imageDigest: image,
    user: { uid: 1000, gid: 1000 },
    keeperUser: { uid: 65533, gid: 65533 },
    nonce: "f".repeat(32),
    configurationDigest: "a".repeat(64),
    policyDigest: "b".repeat(64),
  };
  const { proxy: _proxy, egress: _egress, ...oldNames } = names;
  const old = plannedRecord({ ...identity, names: oldNames as typeof names }, ["volume", "keeper"]);
  assert.equal(recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(old))).success, true);
  const allowlist = plannedRecord({ ...identity, names, proxyImageDigest: proxyImage }, ["volume", "network", "egress", "proxy", "keeper"]);
  assert.equal(recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(allowlist))).success, true);
  const forged = plannedRecord({ ...identity, names }, ["volume", "proxy", "keeper"]);
  const result = recoveryRecordSchema.safeParse(JSON.parse(JSON.stringify(forged)));
  assert.equal(result.success, false);
  assert.equal(result.error!.issues[0].message, "must be absent when identity.proxyImageDigest is absent (only allowlist sandboxes have one)");
});

test("egressGuestEnv names the proxy in both spellings and keeps loopback direct", () => {
  assert.deepEqual(egressGuestEnv("http://172.18.0.2:3128"), [
    "HTTP_PROXY=http://172.18.0.2:3128",
    "HTTPS_PROXY=http://172.18.0.2:3128",
    "http_proxy=http://172.18.0.2:3128",
    "https_proxy=http://172.18.0.2:3128",
    "NO_PROXY=localhost,127.0.0.1,::1",
    "no_proxy=localhost,127.0.0.1,::1",
  ]);
});

/** One stdout frame (stream type 1) of a multiplexed attach stream. */
function frame(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const bytes = new Uint8Array(8 + payload.length);
  bytes[0] = 1;
  new DataView(bytes.buffer).setUint32(4, payload.length);
  bytes.set(payload, 8);
  return bytes;
}

test("DockerEgressEvents keeps at most capacity events, drops the oldest with a count, skips malformed lines and ends with its source", async () => {
  const lines = [
    JSON.stringify({ event: "listening", port: 3128 }),
    ...Array.from({ length: 10 }, (_, index) => JSON.stringify({ event: "denied", host: `h${index}.test`, port: 443, reason: "x" })),
    "not json",
    JSON.stringify({ event: "allowed", host: "a.test", port: 443, unknown: true }),
    "x".repeat(100),
  ];
  const events = new DockerEgressEvents(ReadableStream.from([frame(lines.join("\n") + "\n")]), 4);
  await events.listening;
  await events.ended;
  assert.equal(events.dropped, 6);
  assert.equal(events.malformed, 3);
  const seen: string[] = [];
  for await (const event of events) seen.push(event.host);
  assert.deepEqual(seen, ["h6.test", "h7.test", "h8.test", "h9.test"]);
});

test("DockerEgressEvents stops reading at a line longer than 16 KiB and rejects listening when the output ends first", async () => {
  const events = new DockerEgressEvents(ReadableStream.from([frame("y".repeat(16 * 1024 + 1) + "\n" + JSON.stringify({ event: "denied", host: "late.test", port: 1 }) + "\n")]));
  await events.ended;
  await assert.rejects(events.listening, /ended before it listened/u);
  const seen = [];
  for await (const event of events) seen.push(event);
  assert.deepEqual(seen, [], "nothing after the over-long line is read");
});

test("normalizePolicy refuses { kind: \"outbound\" } and { kind: \"isolated\" }, naming the plain string", () => {
  for (const kind of ["outbound", "isolated"] as const) {
    assert.throws(() => normalizePolicy({ resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 }, network: { kind } as never }), {
      name: "SandboxConfigurationError",
      message: `Cannot reserve sandbox: policy.network must be the string "${kind}", not an object with kind "${kind}" (only the allowlist is an object)`,
    });
  }
});
