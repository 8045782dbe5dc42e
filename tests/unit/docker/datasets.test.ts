// config.datasets: every bound rejects at construction (createDockerSandboxBackend does no I/O)
// with the field and the entry index as given; the list is sorted by name and frozen.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../../lib/docker/config.ts";
import { type DockerSandboxDataset, MAX_DATASETS } from "../../../lib/docker/datasets/configuration.ts";
import { SandboxConfigurationError } from "../../../lib/sandbox/errors.ts";

const valid: DockerSandboxBackendConfig = {
  endpoint: "unix:///var/run/docker.sock",
  namespace: "app-1",
  spillDirectory: "/var/lib/app/spill",
  imageDigest: `sha256:${"a".repeat(64)}`,
  user: { uid: 65534, gid: 65534 },
};

/** A distinct image ID per number. */
const imageOf = (n: number) => `sha256:${n.toString(16).padStart(64, "0")}`;

function rejects(datasets: unknown, message: string): void {
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, datasets } as DockerSandboxBackendConfig),
    (error) => {
      assert.ok(error instanceof SandboxConfigurationError, String(error));
      assert.equal(error.code, "configuration");
      assert.equal(error.message, `Cannot create Docker sandbox backend: ${message}`);
      return true;
    },
  );
}

test("config.datasets defaults to an empty frozen list", () => {
  const { settings } = createDockerSandboxBackend(valid);
  assert.deepEqual(settings.datasets, []);
  assert.ok(Object.isFrozen(settings.datasets));
  assert.deepEqual(createDockerSandboxBackend({ ...valid, datasets: [] }).settings.datasets, []);
});

test("config.datasets is sorted by name and frozen, entry by entry", () => {
  const given: DockerSandboxDataset[] = [
    { name: "zeta", imageDigest: imageOf(1) },
    { name: "alpha", imageDigest: imageOf(2), subpath: "corpus/docs" },
    { name: "m-1", imageDigest: imageOf(3) },
  ];
  const { datasets } = createDockerSandboxBackend({ ...valid, datasets: given }).settings;
  assert.deepEqual(datasets, [
    { name: "alpha", imageDigest: imageOf(2), subpath: "corpus/docs" },
    { name: "m-1", imageDigest: imageOf(3) },
    { name: "zeta", imageDigest: imageOf(1) },
  ]);
  assert.ok(Object.isFrozen(datasets) && datasets.every((entry) => Object.isFrozen(entry)));
  assert.equal("subpath" in datasets[1], false, "no subpath key when none was given");
  assert.equal(given[0].name, "zeta", "the caller's array is not reordered");
});

test(`config.datasets admits ${MAX_DATASETS} entries and rejects ${MAX_DATASETS + 1}`, () => {
  const many = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `d${i}`, imageDigest: imageOf(i + 1) }));
  assert.equal(createDockerSandboxBackend({ ...valid, datasets: many(MAX_DATASETS) }).settings.datasets.length, 32);
  rejects(many(33), "config.datasets must have at most 32 entries, it has 33: attach fewer images (one image can hold many directories)");
  rejects("corpus", "config.datasets must be an array of { name, imageDigest, subpath? }");
});

test("config.datasets rejects a repeated name, naming both indexes", () => {
  rejects(
    [{ name: "ref", imageDigest: imageOf(1) }, { name: "other", imageDigest: imageOf(2) }, { name: "ref", imageDigest: imageOf(3) }],
    'config.datasets[2].name "ref" repeats config.datasets[0].name: give each dataset its own name',
  );
});

test("config.datasets rejects a repeated image (the Engine mounts an image once per container)", () => {
  rejects(
    [{ name: "a", imageDigest: imageOf(1) }, { name: "b", imageDigest: imageOf(1), subpath: "docs" }],
    'config.datasets[1].imageDigest repeats the image of config.datasets[0] ("a"): the Engine mounts an image at most once per container, so attach it once (without subpath, every directory of it is under /datasets/<name>)',
  );
});

test("config.datasets rejects '..', absolute and other non-canonical subpaths, naming the entry", () => {
  const hint = 'give a canonical path relative to the image root, such as "corpus/docs"';
  const cases: [string, string][] = [
    ["..", "must not contain a '..' segment"],
    ["corpus/../etc", "must not contain a '..' segment"],
    ["/corpus", "must be relative (not start with /)"],
    ["corpus/", "must not end with /"],
    ["corpus//docs", "must not contain an empty segment (//)"],
    ["./corpus", "must not contain a '.' segment"],
    ["", "must not be empty"],
    ["a\\b", "must not contain a backslash"],
    ["a\nb", "must not contain control characters"],
  ];
  for (const [subpath, defect] of cases) {
    rejects(
      [{ name: "ok", imageDigest: imageOf(1) }, { name: "bad", imageDigest: imageOf(2), subpath }],
      `config.datasets[1].subpath ${defect}: ${hint}`,
    );
  }
});

test("config.datasets subpath is at most 1,024 characters", () => {
  const at = (length: number) => Array.from({ length: Math.ceil(length / 8) }, () => "abcdefg/").join("").slice(0, length).replace(/\/$/u, "x");
  assert.equal(at(1024).length, 1024);
  const ok = createDockerSandboxBackend({ ...valid, datasets: [{ name: "a", imageDigest: imageOf(1), subpath: at(1024) }] });
  assert.equal(ok.settings.datasets[0].subpath, at(1024));
  rejects([{ name: "a", imageDigest: imageOf(1), subpath: at(1025) }], "config.datasets[0].subpath must be at most 1024 characters");
});

test("config.datasets names the entry and field of a bad name, image ID or unknown field", () => {
  const nameRule = "must be 1-63 characters of a-z, 0-9 and '-', starting with a letter (it becomes /datasets/<name>)";
  for (const name of ["", "Ref", "1ref", "-ref", "re_f", "a".repeat(64), "ref/x"]) {
    rejects([{ name, imageDigest: imageOf(1) }], `config.datasets[0].name ${nameRule}`);
  }
  assert.equal(createDockerSandboxBackend({ ...valid, datasets: [{ name: `a${"-".repeat(62)}`, imageDigest: imageOf(1) }] }).settings.datasets.length, 1);
  const digestRule =
    "must be sha256: followed by 64 lowercase hexadecimal digits, the exact ID of a local image (names and tags are not accepted; list IDs with docker image ls --no-trunc)";
  for (const imageDigest of ["agentcell-test/dataset:1", `sha256:${"A".repeat(64)}`, `sha256:${"a".repeat(63)}`]) {
    rejects([{ name: "ref", imageDigest }], `config.datasets[0].imageDigest ${digestRule}`);
  }
  rejects([{ name: "ref" }], "config.datasets[0].imageDigest is required");
  rejects([{ name: "ref", imageDigest: imageOf(1), target: "/etc" }], "config.datasets[0].target is not a known field");
  rejects([{ name: "ref", imageDigest: imageOf(1), subpath: 7 }], "config.datasets[0].subpath must be a string");
  rejects(["ref"], "config.datasets[0] must be an object");
});
