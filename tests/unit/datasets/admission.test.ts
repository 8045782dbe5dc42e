// Dataset admission without an Engine: the API 1.48 floor, exact local images, the create
// warnings accepted (only Engine 28.5.2's exact image-mount advisory, once per dataset), and
// the start failure of a subpath missing from its image (Engine messages as recorded).
import assert from "node:assert/strict";
import { test } from "node:test";
import { admitDatasetEngine, admitDatasetImages } from "../../../lib/docker/datasets/admission.ts";
import { missingSubpathError } from "../../../lib/docker/datasets/missing_subpath.ts";
import { IPV4_FORWARDING_FIX } from "../../../lib/docker/admission/daemon.ts";
import { assertCreateWarnings, IMAGE_MOUNT_ADVISORY, unexpectedCreateWarnings } from "../../../lib/docker/datasets/warnings.ts";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import type { EngineVersion } from "../../../lib/engine/system.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../../lib/sandbox/errors.ts";

const ref = { name: "ref", imageDigest: `sha256:${"1".repeat(64)}`, subpath: "corpus/docs" };
const raw = { name: "raw", imageDigest: `sha256:${"2".repeat(64)}` };
const version = (ApiVersion: string, Version: string): EngineVersion => ({ ApiVersion, Version, Os: "linux", Arch: "amd64" });

test("admitDatasetEngine refuses datasets below API 1.48, naming both versions and the feature", () => {
  assert.throws(() => admitDatasetEngine([raw], version("1.45", "26.1.5+dfsg1")), (error) =>
    error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
    error.message ===
      "Cannot attach datasets: image mounts need Docker Engine API 1.48 or newer (Engine 28), and the daemon speaks API 1.45 (Engine 26.1.5+dfsg1): upgrade the Engine, or leave config.datasets empty");
  assert.throws(() => admitDatasetEngine([raw], version("1.47", "27.5.1")), SandboxUnsupportedError);
  assert.throws(() => admitDatasetEngine([raw], version("one", "?")), SandboxUnsupportedError);
  admitDatasetEngine([raw], version("1.48", "28.0.0"));
  admitDatasetEngine([raw], version("1.51", "28.5.2"));
  admitDatasetEngine([], version("1.45", "26.1.5"));
});

test("admitDatasetImages needs each image locally under its exact ID and checks nothing else", () => {
  const image = (Id: string, Architecture: string) => ({ Id, Architecture, Os: "linux", Config: { Env: ["DATASET=foreign"], Volumes: { "/data": {} } } });
  admitDatasetImages([raw, ref], [image(raw.imageDigest, "arm64"), image(ref.imageDigest, "riscv64")]);
  assert.throws(() => admitDatasetImages([raw, ref], [image(raw.imageDigest, "amd64"), undefined]), (error) =>
    error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
    error.message ===
      `Cannot attach dataset "ref": image ${ref.imageDigest} is not a local image (the backend never pulls or builds): set its imageDigest in config.datasets to the ID of a local image (list them with: docker image ls --no-trunc --format '{{.ID}} {{.Repository}}:{{.Tag}}')`);
  assert.throws(() => admitDatasetImages([raw], [image(ref.imageDigest, "amd64")]), (error) =>
    error instanceof SandboxUnsupportedError &&
    error.message === `Cannot attach dataset "raw": image ${raw.imageDigest} resolves to ${ref.imageDigest}: give the exact image ID`);
});

test("unexpectedCreateWarnings accepts none, or exactly one image-mount advisory per dataset", () => {
  assert.equal(IMAGE_MOUNT_ADVISORY, "Image mount is an experimental feature");
  assert.deepEqual(unexpectedCreateWarnings([], 0), []);
  assert.deepEqual(unexpectedCreateWarnings([], 2), []);
  assert.deepEqual(unexpectedCreateWarnings([IMAGE_MOUNT_ADVISORY, IMAGE_MOUNT_ADVISORY], 2), []);
  assert.deepEqual(unexpectedCreateWarnings([IMAGE_MOUNT_ADVISORY], 2), [IMAGE_MOUNT_ADVISORY]);
  assert.deepEqual(unexpectedCreateWarnings([IMAGE_MOUNT_ADVISORY], 0), [IMAGE_MOUNT_ADVISORY]);
  assert.deepEqual(unexpectedCreateWarnings([IMAGE_MOUNT_ADVISORY, "Memory swappiness discarded."], 1), ["Memory swappiness discarded."]);
  assert.deepEqual(unexpectedCreateWarnings(["image mount is an experimental feature"], 1), ["image mount is an experimental feature"]);
});

test("assertCreateWarnings names every unexpected warning and what is accepted", () => {
  assert.throws(() => assertCreateWarnings(["Published ports are discarded"], 0, "create export accessor"), (error) =>
    error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
    error.message ===
      'Cannot create export accessor: the Engine warned on create: "Published ports are discarded"; no warning is accepted for a container without datasets, so what was created is removed');
  assert.throws(() => assertCreateWarnings([IMAGE_MOUNT_ADVISORY, "odd"], 2, "start sandbox"), (error) =>
    error instanceof SandboxUnsupportedError &&
    error.message ===
      'Cannot start sandbox: the Engine warned on create: "odd"; only "Image mount is an experimental feature", once per dataset (2 here), is accepted, so what was created is removed');
  assertCreateWarnings([IMAGE_MOUNT_ADVISORY], 1, "start sandbox");
});

test("missingSubpathError names the dataset whose subpath the Engine could not find", () => {
  const said =
    "cannot access path /var/lib/agentcell-test-engine/data-sid/overlay2/2784/merged/corpus/docs: lstat /var/lib/agentcell-test-engine/data-sid/overlay2/2784/merged/corpus/docs: no such file or directory";
  const engineError = new DockerEngineError("not_found", `Cannot start container: ${said}`, { status: 404, engineMessage: said });
  const error = missingSubpathError(engineError, [raw, ref, { name: "other", imageDigest: `sha256:${"3".repeat(64)}`, subpath: "x" }]);
  assert.ok(error instanceof SandboxConfigurationError && error.code === "configuration");
  assert.equal(
    error.message,
    `Cannot start sandbox: the subpath "corpus/docs" of dataset "ref" (image ${ref.imageDigest}) does not exist in the image: set that subpath in config.datasets to a path inside the image, or leave it out to mount the image's root (the Engine said: ${said})`,
  );
  assert.equal(error.cause, engineError);
  // The archive write before the start meets it first, as 500.
  const archive = new DockerEngineError("server_error", `Cannot create /workspace/work: ${said}`, { status: 500, engineMessage: said });
  assert.match(missingSubpathError(archive, [ref])!.message, /^Cannot start sandbox: the subpath "corpus\/docs" of dataset "ref" /u);
  const gone = new DockerEngineError("not_found", "Cannot start container: No such container: x", { status: 404, engineMessage: "No such container: x" });
  assert.equal(missingSubpathError(gone, [ref]), undefined);
  assert.equal(missingSubpathError(engineError, [raw]), undefined, "no dataset has a subpath");
});

test("assertCreateWarnings names the fix for the Engine's forwarding warning", () => {
  assert.throws(() => assertCreateWarnings(["IPv4 forwarding is disabled. Networking will not work."], 0, "start sandbox: creating the egress proxy"), {
    name: "SandboxUnsupportedError",
    message:
      `Cannot start sandbox: creating the egress proxy: the Engine warned on create: "IPv4 forwarding is disabled. Networking will not work."; no warning is accepted for a container without datasets, so what was created is removed: ${IPV4_FORWARDING_FIX}`,
  });
});
