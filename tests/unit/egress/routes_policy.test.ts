// Credentialed routes without an engine: the policy's routes and upstreamCaCertificates (every
// field and bound named with its fix), their normalisation, the proxy configuration and
// container they make, the guest's environment, and start()'s secrets (checked before any
// I/O; no message quotes a value).
import assert from "node:assert/strict";
import { test } from "node:test";
import { egressGuestEnv } from "../../../lib/docker/egress/guest_env.ts";
import { proxyConfig, proxyCreateBody, proxyMismatches, type ProxySpec } from "../../../lib/docker/egress/proxy_container.ts";
import { MAX_SECRET_LENGTH, resolveRouteSecrets } from "../../../lib/docker/egress/secrets.ts";
import type { ContainerInspect } from "../../../lib/engine/containers.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";
import type { SandboxAllowlistNetworkSettings } from "../../../lib/sandbox/network_allowlist.ts";
import { MAX_ROUTE_HEADERS, MAX_ROUTES, MAX_UPSTREAM_CA_CERTIFICATES } from "../../../lib/sandbox/network_routes.ts";
import { normalizePolicy, type SandboxPolicyInput } from "../../../lib/sandbox/policy.ts";
import { assertThrowsSandbox } from "../sandbox/_assert.ts";
import { backendOn, withSpill } from "../docker/_start_engine.ts";

const resources = { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 };
const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const route = { name: "model", upstream: "https://API.example.com/v1/", headers: { Authorization: { secret: "model", prefix: "Bearer " } } };

function allowlist(extra: Record<string, unknown>): SandboxAllowlistNetworkSettings {
  return normalizePolicy({ resources, network: { kind: "allowlist", hosts: [], ...extra } } as SandboxPolicyInput).network as SandboxAllowlistNetworkSettings;
}

function refused(extra: Record<string, unknown>, message: string): void {
  const error = assertThrowsSandbox(() => allowlist(extra), SandboxConfigurationError, "configuration", message);
  assert.equal(error.message, message);
}

test("normalizePolicy normalises routes: the upstream as the URL parser writes it without a trailing slash, header names lower-case, defaults filled", () => {
  const network = allowlist({ routes: [{ ...route, baseUrlEnv: ["MODEL_BASE_URL"], env: { MODEL_API_KEY: "placeholder" } }], upstreamCaCertificates: [PEM] });
  assert.deepEqual(network.hosts, []);
  assert.deepEqual(network.routes, [{
    name: "model",
    upstream: "https://api.example.com/v1",
    headers: { authorization: { secret: "model", prefix: "Bearer " } },
    baseUrlEnv: ["MODEL_BASE_URL"],
    env: { MODEL_API_KEY: "placeholder" },
  }]);
  assert.ok(Object.isFrozen(network.routes[0]) && Object.isFrozen(network.routes[0].headers));
  assert.deepEqual(network.upstreamCaCertificates, [PEM]);
  assert.deepEqual(proxyConfig(network, []).routes, [{ name: "model", host: "api.example.com", port: 443, basePath: "/v1", headers: { authorization: { secret: "model", prefix: "Bearer " } } }]);
  assert.deepEqual(
    egressGuestEnv("http://10.0.0.2:3128", network.routes).slice(4),
    ["NO_PROXY=localhost,127.0.0.1,::1,10.0.0.2", "no_proxy=localhost,127.0.0.1,::1,10.0.0.2", "MODEL_BASE_URL=http://10.0.0.2:3128/model", "MODEL_API_KEY=placeholder"],
  );
});

test("normalizePolicy refuses a malformed route, naming the field and the fix", () => {
  const at = "Cannot reserve sandbox: policy.network.routes.0";
  refused({}, 'Cannot reserve sandbox: policy.network.hosts must list at least one host (use "isolated" for no network), unless routes are given');
  refused({ routes: [{ ...route, name: "Model" }] }, `${at}.name must be 1 to 63 lower-case letters, digits and inner hyphens (anthropic)`);
  refused({ routes: [{ ...route, upstream: "http://api.example.com" }] }, `${at}.upstream must be an https:// URL: the proxy adds credentials only over TLS it verifies`);
  refused({ routes: [{ ...route, upstream: "https://u:p@api.example.com" }] }, `${at}.upstream must not carry a user or password: put credentials in headers`);
  refused({ routes: [{ ...route, upstream: "https://api.example.com/?key=1" }] }, `${at}.upstream must not have a query or fragment`);
  refused({ routes: [{ ...route, upstream: "https://203.0.113.7" }] }, `${at}.upstream must name its host by a DNS name, not an address`);
  refused({ routes: [{ ...route, upstream: "not a url" }] }, `${at}.upstream must be an https:// URL (https://api.example.com)`);
  refused({ routes: [{ ...route, headers: {} }] }, `${at}.headers must set 1 to ${MAX_ROUTE_HEADERS} headers`);
  const many = Object.fromEntries(Array.from({ length: MAX_ROUTE_HEADERS + 1 }, (_, index) => [`x-h${index}`, { secret: "s" }]));
  refused({ routes: [{ ...route, headers: many }] }, `${at}.headers must set 1 to ${MAX_ROUTE_HEADERS} headers`);
  refused({ routes: [{ ...route, headers: { Host: { secret: "s" } } }] }, `${at}.headers.Host must not be host, a framing or a hop-by-hop field`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "s" }, "X-A": { secret: "s" } } }] }, `${at}.headers must not name a field twice (names are case-insensitive)`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "no spaces" } } }] }, `${at}.headers.x-a.secret must be a secret name of 1 to 64 letters, digits, _, . or -`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "s", prefix: "a\r\nb" } } }] }, `${at}.headers.x-a.prefix must be printable ASCII`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "s", value: "literal" } } }] }, `${at}.headers.x-a.value is not a known field`);
  refused({ routes: [{ ...route, upstream: `https://api.example.com/${"a".repeat(2048)}` }] }, `${at}.upstream must be at most 2048 characters`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "s".repeat(65) } } }] }, `${at}.headers.x-a.secret must be a secret name of 1 to 64 letters, digits, _, . or -`);
  refused({ routes: [{ ...route, headers: { "x-a": { secret: "s", prefix: "p".repeat(257) } } }] }, `${at}.headers.x-a.prefix must be at most 256 characters`);
  refused({ routes: [{ ...route, baseUrlEnv: Array.from({ length: 17 }, (_, index) => `V${index}`) }] }, `${at}.baseUrlEnv must list at most 16 variables`);
  refused({ routes: [{ ...route, env: Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`V${index}`, "x"])) }] }, `${at}.env must set at most 16 variables`);
  refused({ routes: [{ ...route, env: { V: "x".repeat(4097) } }] }, `${at}.env.V must be at most 4096 characters`);
  refused({ routes: [{ ...route, baseUrlEnv: ["HTTPS_PROXY"] }] }, `${at}.baseUrlEnv.0 must not be HOME, TMPDIR, PATH or a proxy variable (the backend sets those)`);
  refused({ routes: [{ ...route, env: { "1A": "x" } }] }, `${at}.env.1A must be an environment variable name (letters, digits and _, not starting with a digit)`);
  refused({ routes: [route, { ...route }] }, "Cannot reserve sandbox: policy.network.routes.1.name must be unique: \"model\" is taken by an earlier route");
  refused(
    { routes: [{ ...route, baseUrlEnv: ["A"] }, { ...route, name: "other", env: { A: "x" } }] },
    "Cannot reserve sandbox: policy.network.routes.1 must not set A again: an earlier variable of the routes sets it",
  );
  const routes = Array.from({ length: MAX_ROUTES + 1 }, (_, index) => ({ ...route, name: `r${index}` }));
  refused({ routes }, `Cannot reserve sandbox: policy.network.routes must list at most ${MAX_ROUTES} routes`);
  refused({ routes: [route], upstreamCaCertificates: ["not a pem"] }, "Cannot reserve sandbox: policy.network.upstreamCaCertificates.0 must be one PEM certificate (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)");
  refused(
    { routes: [route], upstreamCaCertificates: Array(MAX_UPSTREAM_CA_CERTIFICATES + 1).fill(PEM) },
    `Cannot reserve sandbox: policy.network.upstreamCaCertificates must list at most ${MAX_UPSTREAM_CA_CERTIFICATES} certificates`,
  );
  refused({ routes: [route], upstreamCaCertificates: [PEM.replace("MIIB", "A".repeat(16_400))] }, "Cannot reserve sandbox: policy.network.upstreamCaCertificates.0 must be at most 16384 characters");
});

test("resolveRouteSecrets takes exactly the secrets the routes name, from an object or a provider, and quotes no value in its errors", async () => {
  const network = allowlist({ routes: [route, { ...route, name: "other", headers: { "x-api-key": { secret: "other" } } }] });
  const value = "sk-do-not-print-me";
  assert.deepEqual(await resolveRouteSecrets(network, { model: value, other: "o" }), { model: value, other: "o" });
  assert.deepEqual(await resolveRouteSecrets(network, () => Promise.resolve({ model: value, other: "o" })), { model: value, other: "o" });
  assert.deepEqual(await resolveRouteSecrets("isolated", undefined), {});
  const refusedWith = async (given: Parameters<typeof resolveRouteSecrets>[1], message: string, on = network as Parameters<typeof resolveRouteSecrets>[0]) => {
    const error = await resolveRouteSecrets(on, given).then(() => undefined, (thrown) => thrown);
    assert.ok(error instanceof SandboxConfigurationError, String(error));
    assert.equal(error.code, "configuration");
    assert.equal(error.message, message);
    assert.ok(!error.message.includes(value));
  };
  await refusedWith(undefined, "Cannot start sandbox: options.secrets is required: policy.network.routes name the secret model; pass its value in reservation.start({ secrets })");
  await refusedWith({ model: value }, "Cannot start sandbox: options.secrets.other is required: a route of policy.network.routes names it");
  await refusedWith({ model: `${value}\r\nx-injected: 1`, other: "o" }, `Cannot start sandbox: options.secrets.model must be a string of 1 to ${MAX_SECRET_LENGTH} printable ASCII characters (a header value)`);
  await refusedWith({ model: "x".repeat(MAX_SECRET_LENGTH + 1), other: "o" }, `Cannot start sandbox: options.secrets.model must be a string of 1 to ${MAX_SECRET_LENGTH} printable ASCII characters (a header value)`);
  await refusedWith({ model: "caf\u00e9", other: "o" }, `Cannot start sandbox: options.secrets.model must be a string of 1 to ${MAX_SECRET_LENGTH} printable ASCII characters (a header value)`);
  await refusedWith({ model: "", other: "o" }, `Cannot start sandbox: options.secrets.model must be a string of 1 to ${MAX_SECRET_LENGTH} printable ASCII characters (a header value)`);
  await refusedWith({ model: value, other: "o", typo: value }, "Cannot start sandbox: options.secrets.typo is not named by any route of policy.network.routes: remove it");
  await refusedWith(() => Promise.reject(new Error(value)), "Cannot start sandbox: the options.secrets provider failed");
  await refusedWith(() => [value] as unknown as Record<string, string>, "Cannot start sandbox: options.secrets must be an object of secret name → value (or a function returning one)");
  await refusedWith({ model: value }, "Cannot start sandbox: options.secrets is given, but no route of policy.network names a secret: remove it, or add routes", "isolated");
  assert.ok(MAX_SECRET_LENGTH === 8192);
});

test("reservation.start refuses missing secrets before any I/O (the endpoint does not exist)", async () => {
  await withSpill(async (spill) => {
    const backend = backendOn("/nonexistent/docker.sock", spill, { proxyImageDigest: `sha256:${"d".repeat(64)}` });
    const records: unknown[] = [];
    const reservation = backend.reserve({ policy: { resources, network: { kind: "allowlist", hosts: [], routes: [route] } } }, { record: (record) => Promise.resolve(void records.push(record)) });
    await assert.rejects(reservation.start(), (error) => error instanceof SandboxConfigurationError && /options\.secrets is required/u.test(error.message));
    assert.deepEqual(records, [], "nothing was recorded");
  });
});

test("proxyCreateBody opens the proxy's stdin once for routes only, and the readback checks it", () => {
  const network = allowlist({ routes: [route] });
  const spec: ProxySpec = {
    imageDigest: `sha256:${"d".repeat(64)}`,
    user: { uid: 65533, gid: 65533 },
    program: "program",
    config: proxyConfig(network, []),
    internalNetwork: "internal",
    egressNetwork: "egress",
    labels: {},
  };
  const body = proxyCreateBody(spec) as { OpenStdin: boolean; StdinOnce: boolean; AttachStdin: boolean; Env: string[] };
  assert.deepEqual([body.OpenStdin, body.StdinOnce, body.AttachStdin], [true, true, true]);
  assert.ok(!body.Env.join("\n").includes("sk-"), "no secret in the environment");
  const plain = proxyCreateBody({ ...spec, config: { ...spec.config, routes: [] } }) as { OpenStdin: boolean };
  assert.equal(plain.OpenStdin, false);
  const inspect = {
    Image: spec.imageDigest,
    Config: { ...body, Env: body.Env },
    HostConfig: (body as unknown as { HostConfig: unknown }).HostConfig,
    Mounts: [],
    NetworkSettings: { Networks: { internal: { IPAddress: "10.0.0.2", NetworkID: "a" }, egress: { IPAddress: "10.1.0.2", NetworkID: "b" } } },
    State: { Running: true, Status: "running" },
  } as unknown as ContainerInspect;
  const mismatch = proxyMismatches({ ...inspect, Config: { ...inspect.Config, OpenStdin: false } } as ContainerInspect, spec, false);
  assert.ok(mismatch.includes("a TTY is attached, stdin is not as created, or ports are exposed"), mismatch.join("; "));
});
