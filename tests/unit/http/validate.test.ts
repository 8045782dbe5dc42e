import assert from "node:assert/strict";
import { test } from "node:test";
import { validateEngineRequest } from "../../../lib/engine/http/mod.ts";

const limits = { timeoutMs: 1_000, maxResponseBytes: 1_024 };

test("validateEngineRequest accepts origin-form targets", () => {
  for (
    const target of [
      "/",
      "/_ping",
      "/v1.51/containers/json?all=1&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%7D",
      "/containers/abc/archive?path=%2Fworkspace%2Fwork",
      "/" + "a".repeat(16_383),
      "/~!$&'()*+,;=:@-._?/",
    ]
  ) {
    assert.doesNotThrow(() => validateEngineRequest(target, limits), target.slice(0, 40));
  }
});

test("validateEngineRequest rejects targets that are not bounded origin-form with TypeError", () => {
  for (
    const target of [
      "",
      "v1.51/_ping",
      "//evil.example/x",
      "http://docker/_ping",
      "/a b",
      "/a\tb",
      "/a\r\nHost: x",
      "/a\u0000",
      "/a\u007f",
      "/caf\u00e9",
      "/a\\b",
      "/a#fragment",
      "/" + "a".repeat(16_384),
    ]
  ) {
    assert.throws(
      () => validateEngineRequest(target, limits),
      (error: unknown) =>
        error instanceof TypeError &&
        /^Cannot send the Engine request: target must be an origin-form target/.test(error.message),
      JSON.stringify(target.slice(0, 40)),
    );
  }
});

test("validateEngineRequest accepts timer durations from 1 to 2^31 - 1 ms", () => {
  for (const timeoutMs of [1, 30_000, 2 ** 31 - 1]) {
    assert.doesNotThrow(() => validateEngineRequest("/", { ...limits, timeoutMs }));
  }
});

test("validateEngineRequest rejects other timeoutMs values with TypeError", () => {
  for (const timeoutMs of [0, -1, 1.5, 2 ** 31, Number.NaN, Infinity, "10" as unknown as number]) {
    assert.throws(
      () => validateEngineRequest("/", { ...limits, timeoutMs }),
      (error: unknown) =>
        error instanceof TypeError &&
        /timeoutMs must be a safe integer from 1 to 2147483647/.test(error.message),
      String(timeoutMs),
    );
  }
});

test("validateEngineRequest accepts non-negative safe integer response limits", () => {
  for (const maxResponseBytes of [0, 1, Number.MAX_SAFE_INTEGER]) {
    assert.doesNotThrow(() => validateEngineRequest("/", { ...limits, maxResponseBytes }));
  }
});

test("validateEngineRequest rejects other maxResponseBytes values with TypeError", () => {
  for (const maxResponseBytes of [-1, 0.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Infinity]) {
    assert.throws(
      () => validateEngineRequest("/", { ...limits, maxResponseBytes }),
      (error: unknown) =>
        error instanceof TypeError &&
        /maxResponseBytes must be a non-negative safe integer/.test(error.message),
      String(maxResponseBytes),
    );
  }
});
