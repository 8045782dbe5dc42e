import assert from "node:assert/strict";
import { test } from "node:test";
import { createDockerSandboxBackend } from "../../../lib/docker/backend.ts";
import type { DockerSandboxBackendConfig } from "../../../lib/docker/config.ts";
import { type DockerSandboxDataset, MAX_DATASETS } from "../../../lib/docker/datasets/configuration.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const valid: DockerSandboxBackendConfig = {
  endpoint: "unix:///var/run/docker.sock",
  namespace: "app-1",
  spillDirectory: "/var/lib/app/spill",
  imageDigest: `sha256:${"a".repeat(64)}`,
  user: { uid: 65534, gid: 65534 },
};

function rejects(config: unknown, field: RegExp): void {
  assert.throws(
    () => createDockerSandboxBackend(config as DockerSandboxBackendConfig),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && field.test(error.message),
  );
}

test("createDockerSandboxBackend is inert and defaults the profile to linux-x64", () => {
  const backend = createDockerSandboxBackend(valid);
  assert.equal(backend.settings.profile.name, "linux-x64");
  assert.ok(Object.isFrozen(backend.settings));
});

test("createDockerSandboxBackend rejects bad endpoints, naming config.endpoint", () => {
  for (const endpoint of ["tcp://127.0.0.1:2375", "unix://relative.sock", "unix:////double", "unix:///a\nb", "/var/run/docker.sock", `unix:///${"x".repeat(120)}`]) {
    rejects({ ...valid, endpoint }, /^Cannot create Docker sandbox backend: config\.endpoint /);
  }
});

test("createDockerSandboxBackend shows the corrected endpoint when it is clear", () => {
  const cases: [string, string][] = [
    ["/var/run/docker.sock", 'config.endpoint must be unix:// followed by the absolute socket path ("/var/run/docker.sock" is not): use "unix:///var/run/docker.sock"'],
    ["unix:/run/engine.sock", 'config.endpoint must be unix:// followed by the absolute socket path ("unix:/run/engine.sock" is not): use "unix:///run/engine.sock"'],
    ["unix://var/run/docker.sock", 'config.endpoint must name an absolute socket path after unix:// (three slashes): did you mean "unix:///var/run/docker.sock"?'],
    ["unix:////var/run/docker.sock", 'config.endpoint must not start the socket path with "//": use "unix:///var/run/docker.sock"'],
    [
      "tcp://127.0.0.1:2375",
      'config.endpoint must be unix:// followed by the absolute socket path ("tcp://127.0.0.1:2375" is not; tcp, ssh, npipe and http endpoints are not supported): a local daemon\'s socket is usually "unix:///var/run/docker.sock"',
    ],
  ];
  for (const [endpoint, reason] of cases) {
    assert.throws(
      () => createDockerSandboxBackend({ ...valid, endpoint }),
      (error) =>
        error instanceof SandboxConfigurationError && error.message === `Cannot create Docker sandbox backend: ${reason}`,
      endpoint,
    );
  }
});

test("createDockerSandboxBackend says a uid or gid of 0 must be non-root, and lists the profiles", () => {
  for (const field of ["uid", "gid"] as const) {
    assert.throws(
      () => createDockerSandboxBackend({ ...valid, user: { uid: 1, gid: 1, [field]: 0 } }),
      (error) =>
        error instanceof SandboxConfigurationError &&
        error.message ===
          `Cannot create Docker sandbox backend: config.user.${field} must be a non-root ID from 1 to 262143 (0 is root): use an unprivileged ID such as 65534`,
    );
  }
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, profile: "linux" as never }),
    (error) =>
      error instanceof SandboxConfigurationError &&
      error.message ===
        'Cannot create Docker sandbox backend: config.profile must be one of "linux-x64", "linux-x64-cgroupfs", "linux-x64-gvisor", "desktop-apple-virtualization-native-arm64", "desktop-apple-virtualization-rosetta-amd64" (see the README\'s Profiles)',
  );
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, imageDigest: "busybox:latest" }),
    (error) => error instanceof SandboxConfigurationError && /config\.imageDigest .*names and tags are not accepted; list IDs with docker image ls --no-trunc\)$/.test(error.message),
  );
});

test("createDockerSandboxBackend rejects bad namespace, image, user and profile, naming the field", () => {
  rejects({ ...valid, namespace: "Upper" }, /config\.namespace/);
  rejects({ ...valid, namespace: "a".repeat(33) }, /config\.namespace/);
  rejects({ ...valid, imageDigest: "sha256:ABC" }, /config\.imageDigest/);
  rejects({ ...valid, imageDigest: `sha256:${"A".repeat(64)}` }, /config\.imageDigest/);
  rejects({ ...valid, user: { uid: 0, gid: 1 } }, /config\.user\.uid/);
  rejects({ ...valid, user: { uid: 1, gid: 262_144 } }, /config\.user\.gid/);
  rejects({ ...valid, user: { uid: 1.5, gid: 1 } }, /config\.user\.uid/);
  rejects({ ...valid, profile: "linux-arm64" }, /config\.profile/);
  rejects({ ...valid, extra: true }, /config\.extra/);
});

test("createDockerSandboxBackend requires an absolute canonical spill directory", () => {
  for (const spillDirectory of ["relative/dir", "/", "/a/", "/a//b", "/a/./b", "/a/../b"]) {
    rejects({ ...valid, spillDirectory }, /config\.spillDirectory/);
  }
});

test("DockerSandboxBackend.reserve is inert, derives every name, and rejects a required disk quota", () => {
  const backend = createDockerSandboxBackend(valid);
  let recorded = 0;
  const port = { record: () => Promise.resolve(void recorded++) };
  const reservation = backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 16 } } }, port);
  assert.match(reservation.id, /^[0-9a-f]{32}$/);
  assert.equal(reservation.names.volume, `agentcell-app-1-${reservation.id}-volume`);
  assert.equal(reservation.names.keeper, `agentcell-app-1-${reservation.id}-keeper`);
  assert.equal(recorded, 0);
  assert.throws(
    () =>
      backend.reserve({
        policy: {
          resources: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 16 },
          workspaceDiskQuota: { kind: "required", bytes: 1024, accounting: "allocated_blocks" },
        },
      }, port),
    (error) => error instanceof SandboxUnsupportedError && /quota/.test(error.message),
  );
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 1024, pids: 16 } } }, port),
    (error) => error instanceof SandboxConfigurationError && /policy\.resources\.memoryBytes/.test(error.message),
  );
});

test("DockerSandboxBackend.reserve rejects tmpfs sizes without memory headroom and a ulimit past its maximum, before any record", () => {
  const backend = createDockerSandboxBackend(valid);
  let recorded = 0;
  const port = { record: () => Promise.resolve(void recorded++) };
  const MIB = 1024 * 1024;
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 96 * MIB, pids: 64 }, tmpfs: { homeBytes: 64 * MIB, tmpBytes: 64 * MIB } } }, port),
    (error) =>
      error instanceof SandboxConfigurationError && error.code === "configuration" &&
      error.message ===
        "Cannot reserve sandbox: policy.tmpfs.homeBytes (67108864) + tmpBytes (67108864) + shmBytes (6291456) = 140509184 bytes " +
          "leave too little of policy.resources.memoryBytes (100663296 bytes) to the processes: tmpfs pages count against the " +
          "memory limit, so the three must total at most half of it (50331648 bytes); lower the tmpfs sizes or raise memoryBytes",
  );
  assert.throws(
    () => backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 96 * MIB, pids: 64 }, ulimits: { nofile: 2_000_000 } } }, port),
    (error) =>
      error instanceof SandboxConfigurationError && error.code === "configuration" &&
      error.message === "Cannot reserve sandbox: policy.ulimits.nofile must be an integer from 16 to 1048576 files",
  );
  assert.equal(recorded, 0);
});

test("createDockerSandboxBackend takes config.defaultExportQuota.bytes, naming the field for anything else", () => {
  assert.equal(createDockerSandboxBackend(valid).settings.defaultExportQuota, undefined);
  const settings = createDockerSandboxBackend({ ...valid, defaultExportQuota: { bytes: 0 } }).settings;
  assert.deepEqual(settings.defaultExportQuota, { bytes: 0 });
  assert.ok(Object.isFrozen(settings.defaultExportQuota));
  for (const [quota, reason] of [
    [{ bytes: -1 }, "config.defaultExportQuota.bytes must be an integer from 0 to 9007199254740991 bytes"],
    [{ bytes: 1.5 }, "config.defaultExportQuota.bytes must be an integer from 0 to 9007199254740991 bytes"],
    [{}, "config.defaultExportQuota.bytes is required"],
    [{ bytes: 1, files: 2 }, "config.defaultExportQuota.files is not a known field"],
  ] as const) {
    assert.throws(
      () => createDockerSandboxBackend({ ...valid, defaultExportQuota: quota as never }),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === `Cannot create Docker sandbox backend: ${reason}`,
      JSON.stringify(quota),
    );
  }
});

// config.datasets: every bound rejects at construction (no I/O) with the field and the entry
// index as given; the list is sorted by name and frozen.

/** A distinct image ID per number. */
const imageOf = (n: number) => `sha256:${n.toString(16).padStart(64, "0")}`;

function rejectsDatasets(datasets: unknown, message: string): void {
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
  rejectsDatasets(many(33), "config.datasets must have at most 32 entries, it has 33: attach fewer images (one image can hold many directories)");
  rejectsDatasets("corpus", "config.datasets must be an array of { name, imageDigest, subpath? }");
});

test("config.datasets rejects a repeated name, naming both indexes", () => {
  rejectsDatasets(
    [{ name: "ref", imageDigest: imageOf(1) }, { name: "other", imageDigest: imageOf(2) }, { name: "ref", imageDigest: imageOf(3) }],
    'config.datasets[2].name "ref" repeats config.datasets[0].name: give each dataset its own name',
  );
});

test("config.datasets rejects a repeated image (the Engine mounts an image once per container)", () => {
  rejectsDatasets(
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
    rejectsDatasets(
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
  rejectsDatasets([{ name: "a", imageDigest: imageOf(1), subpath: at(1025) }], "config.datasets[0].subpath must be at most 1024 characters");
});

test("config.datasets names the entry and field of a bad name, image ID or unknown field", () => {
  const nameRule = "must be 1-63 characters of a-z, 0-9 and '-', starting with a letter (it becomes /datasets/<name>)";
  for (const name of ["", "Ref", "1ref", "-ref", "re_f", "a".repeat(64), "ref/x"]) {
    rejectsDatasets([{ name, imageDigest: imageOf(1) }], `config.datasets[0].name ${nameRule}`);
  }
  assert.equal(createDockerSandboxBackend({ ...valid, datasets: [{ name: `a${"-".repeat(62)}`, imageDigest: imageOf(1) }] }).settings.datasets.length, 1);
  const digestRule =
    "must be sha256: followed by 64 lowercase hexadecimal digits, the exact ID of a local image (names and tags are not accepted; list IDs with docker image ls --no-trunc)";
  for (const imageDigest of ["agentcell-test/dataset:1", `sha256:${"A".repeat(64)}`, `sha256:${"a".repeat(63)}`]) {
    rejectsDatasets([{ name: "ref", imageDigest }], `config.datasets[0].imageDigest ${digestRule}`);
  }
  rejectsDatasets([{ name: "ref" }], "config.datasets[0].imageDigest is required");
  rejectsDatasets([{ name: "ref", imageDigest: imageOf(1), target: "/etc" }], "config.datasets[0].target is not a known field");
  rejectsDatasets([{ name: "ref", imageDigest: imageOf(1), subpath: 7 }], "config.datasets[0].subpath must be a string");
  rejectsDatasets(["ref"], "config.datasets[0] must be an object");
});

test("createDockerSandboxBackend gives the keeper its own non-root uid, and refuses one shared with the agent", () => {
  assert.deepEqual(createDockerSandboxBackend(valid).settings.keeperUser, { uid: 65533, gid: 65533 });
  assert.deepEqual(createDockerSandboxBackend({ ...valid, user: { uid: 65533, gid: 65533 } }).settings.keeperUser, { uid: 65532, gid: 65532 });
  assert.deepEqual(createDockerSandboxBackend({ ...valid, keeperUser: { uid: 4000, gid: 4000 } }).settings.keeperUser, { uid: 4000, gid: 4000 });
  assert.throws(
    () => createDockerSandboxBackend({ ...valid, keeperUser: { uid: 65534, gid: 1 } }),
    (error) => error instanceof SandboxConfigurationError && error.code === "configuration" &&
      error.message === "Cannot create Docker sandbox backend: config.keeperUser.uid must differ from config.user.uid (65534): the agent must not share a uid with its keeper; choose another unprivileged uid",
  );
  rejects({ ...valid, keeperUser: { uid: 0, gid: 1 } }, /^Cannot create Docker sandbox backend: config\.keeperUser\.uid must be a non-root ID/);
  rejects({ ...valid, keeperUser: { uid: 5 } }, /config\.keeperUser\.gid is required/);
});
