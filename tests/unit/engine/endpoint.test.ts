import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEngineEndpoint } from "../../../lib/engine/endpoint.ts";
import { compareApiVersions, negotiateApiVersion } from "../../../lib/engine/api_version.ts";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { DockerEngine } from "../../../lib/engine/client.ts";

test("parseEngineEndpoint returns the absolute socket path", () => {
  assert.equal(parseEngineEndpoint("unix:///var/run/docker.sock"), "/var/run/docker.sock");
});

test("parseEngineEndpoint rejects other schemes, relative, //, control characters, % ? # and long paths", () => {
  for (const endpoint of [
    "tcp://localhost:2375",
    "npipe:////./pipe/docker_engine",
    "ssh://host",
    "unix://docker.sock",
    "unix://",
    "unix:////var/run/docker.sock",
    "unix:///var/run/\u0000docker.sock",
    "unix:///var/run/docker.sock\n",
    "unix:///var/run/%2e%2e/docker.sock",
    "unix:///var/run/docker.sock?x",
    "unix:///var/run/docker.sock#x",
    `unix:///${"a".repeat(107)}`,
    "/var/run/docker.sock",
  ]) {
    assert.throws(
      () => parseEngineEndpoint(endpoint),
      (error) => error instanceof DockerEngineError && error.code === "invalid_endpoint" && error.message.startsWith("Cannot use Engine endpoint: "),
      endpoint,
    );
  }
  assert.throws(() => new DockerEngine("tcp://x"), (error) => error instanceof DockerEngineError && error.code === "invalid_endpoint");
});

test("parseEngineEndpoint names the corrected endpoint in its message", () => {
  assert.throws(
    () => parseEngineEndpoint("/run/agentcell-test-engine/docker.sock"),
    (error) =>
      error instanceof DockerEngineError &&
      error.message ===
        'Cannot use Engine endpoint: the endpoint must be unix:// followed by the absolute socket path ("/run/agentcell-test-engine/docker.sock" is not): use "unix:///run/agentcell-test-engine/docker.sock"',
  );
  assert.throws(
    () => parseEngineEndpoint(`unix:///${"a".repeat(120)}`),
    (error) => error instanceof DockerEngineError && /at most 107 bytes \(this one has 121\): use a shorter path to the socket/.test(error.message),
  );
  assert.throws(
    () => parseEngineEndpoint("unix:///var/run/docker.sock\u001b[2J"),
    (error) => error instanceof DockerEngineError && error.message.includes("\\u001b[2J") && !error.message.includes("\u001b"),
  );
});

test("negotiateApiVersion takes min(daemon, 1.52) and rejects below 1.44 naming both", () => {
  assert.equal(negotiateApiVersion("1.44"), "1.44");
  assert.equal(negotiateApiVersion("1.51"), "1.51");
  assert.equal(negotiateApiVersion("1.52"), "1.52");
  assert.equal(negotiateApiVersion("1.60"), "1.52");
  assert.equal(negotiateApiVersion("2.0"), "1.52");
  for (const version of ["1.43", "1.41", "0.9"]) {
    assert.throws(
      () => negotiateApiVersion(version),
      (error) =>
        error instanceof DockerEngineError && error.code === "unsupported_api_version" && error.message.includes(version) &&
        error.message.includes("1.44"),
    );
  }
  assert.throws(() => negotiateApiVersion("latest"), (error) => error instanceof DockerEngineError && error.code === "unsupported_api_version");
  assert.ok(compareApiVersions("1.9", "1.10") < 0);
});
