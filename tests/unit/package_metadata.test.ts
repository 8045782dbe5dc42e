// The package's identity agrees wherever it is written: deno.json (what JSR publishes),
// package.json (what a checkout installs as) and CHANGELOG.md (what changed in it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

const read = (name: string) => readFile(new URL(`../../${name}`, import.meta.url), "utf8");

test("deno.json, package.json and CHANGELOG.md agree on the name, version and entry point", async () => {
  const deno = JSON.parse(await read("deno.json"));
  const npm = JSON.parse(await read("package.json"));
  const changelog = await read("CHANGELOG.md");
  assert.match(deno.version, /^\d+\.\d+\.\d+$/);
  assert.equal(npm.name, deno.name);
  assert.equal(npm.version, deno.version);
  assert.deepEqual(npm.exports, deno.exports, "package.json and deno.json export the same entry points");
  assert.equal(npm.private, true, "the checkout's package.json is never published to npm");
  assert.match(changelog, new RegExp(`^## ${deno.version.replaceAll(".", "\\.")}\\b`, "m"), `CHANGELOG.md has a section for ${deno.version}`);
  assert.ok(deno.publish.include.includes("CHANGELOG.md"), "the changelog is published with the package");
});
