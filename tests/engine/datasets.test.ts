// Shared read-only datasets on the real Engine: image mounts at /datasets/<name> beside each
// sandbox's private workspace; refusals before any create; images borrowed, never deleted.
import assert from "node:assert/strict";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { containerInspectSchema } from "../../lib/engine/containers.ts";
import type { DockerSandboxBackend } from "../../lib/docker/backend.ts";
import type { DockerSandboxDataset } from "../../lib/docker/datasets/configuration.ts";
import { IMAGE_MOUNT_ADVISORY } from "../../lib/docker/datasets/warnings.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { SandboxConfigurationError, SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { datasetImages, imageExists, importDatasetImage, removeImage } from "./_datasets.ts";
import { busyboxImage, endpoint, engineTest } from "./_engine.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { readExport, runGuest } from "./_files.ts";
import { assertGone, assertNamesAbsent, readUntil, recordingPort, keepStarted, testPolicy, text, withBackend } from "./_sandbox.ts";

/** The lane's two dataset images: `reference` at its `corpus` directory, `foreign` whole. */
function laneDatasets(): DockerSandboxDataset[] {
  const images = datasetImages();
  return [
    { name: "reference", imageDigest: images.reference, subpath: "corpus" },
    { name: "foreign", imageDigest: images.foreign },
  ];
}

function withDatasets(datasets: readonly DockerSandboxDataset[], fn: (backend: DockerSandboxBackend) => Promise<void>, via?: string) {
  return withBackend(fn, busyboxImage, via ?? endpoint!, datasets);
}

/** The guest script: read both datasets, write this sandbox's own file, try to write a dataset. */
const READ_AND_WRITE = [
  "echo ls $(ls /datasets/reference) / $(ls /datasets/reference/docs)",
  "echo readme $(cat /datasets/reference/README.txt) a $(cat /datasets/reference/docs/a.txt) foreign $(cat /datasets/foreign/foreign.txt)",
  "echo notes $(test -e /datasets/reference/notes.txt && echo visible || echo absent)",
  'printf "%s" "$1" > /workspace/work/mine.txt && echo wrote $(cat /workspace/work/mine.txt)',
  "touch /datasets/reference/new.txt 2>&1 | sed 's/^touch: //'",
  "mkdir /datasets/foreign/dir 2>&1 | sed 's/^mkdir: //'",
  "echo mount $(awk '$5 == \"/datasets/reference\" { split($6, o, \",\"); print o[1] }' /proc/self/mountinfo)",
  "echo others $(ls /workspace/work)",
  "read line || true",
].join("\n");

async function inspect(engine: DockerEngine, id: string) {
  return (await engine.request("GET", `/containers/${id}/json`, { schema: containerInspectSchema })).value;
}

engineTest("DockerSandbox datasets: two sandboxes read the same datasets at once, each writes only its own workspace; destroy and recovery keep the images", async (engine) => {
  const datasets = laneDatasets();
  await withDatasets(datasets, async (backend) => {
    const sandboxes: DockerSandbox[] = [];
    const ports = [recordingPort(), recordingPort()];
    try {
      await keepStarted(ports.map((port) => backend.reserve({ policy: testPolicy }, port).start()), sandboxes);
      // Both processes are running at once: each waits on stdin after its output.
      const processes = await Promise.all(sandboxes.map((sandbox, index) =>
        sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", READ_AND_WRITE, "guest", `sandbox-${index}`] }).start()
      ));
      const outputs = await Promise.all(processes.map((process) => readUntil(process.stdout, (seen) => /^others .*\n/mu.test(seen))));
      outputs.forEach((output, index) => {
        assert.equal(
          output,
          [
            "ls README.txt docs empty / a.txt b.txt",
            "readme reference corpus a alpha foreign foreign",
            "notes absent",
            `wrote sandbox-${index}`,
            "/datasets/reference/new.txt: Read-only file system",
            "can't create directory '/datasets/foreign/dir': Read-only file system",
            "mount ro",
            "others mine.txt",
            "",
          ].join("\n"),
        );
      });
      for (const process of processes) await process.stdin.close();
      assert.deepEqual(await Promise.all(processes.map((process) => process.exit)), [{ kind: "exited", code: 0 }, { kind: "exited", code: 0 }]);

      for (const [index, sandbox] of sandboxes.entries()) {
        await sandbox.stop();
        const files = await readExport(await sandbox.exportTree({ kind: "workspace" }));
        assert.deepEqual(files.map((file) => [file.path, file.size]), [["work", 0], ["work/mine.txt", `sandbox-${index}`.length]]);
        // The export accessor mounts only the workspace, read-only: no dataset.
        const accessor = await inspect(engine, sandbox.resources.accessorId!);
        assert.deepEqual(accessor.HostConfig.Mounts, [
          { Type: "volume", Source: sandbox.resources.volumeName, Target: "/workspace", ReadOnly: true, VolumeOptions: { NoCopy: true } },
        ]);
        assert.deepEqual(accessor.Mounts.map((mount) => [mount.Type, mount.Destination, mount.RW]), [["volume", "/workspace", false]]);
      }
      // The second one's cleanup goes through recovery, as a fresh controller's would.
      const recovery = await backend.recover(ports[1].records.at(-1)!, ports[1]);
      assert.deepEqual(recovery.owned.map((resource) => resource.role), ["accessor", "volume"]);
      assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
    } finally {
      for (const sandbox of sandboxes) {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
    }
    // Borrowed: destroy and recovery removed the sandboxes, never a dataset image.
    for (const dataset of datasets) assert.equal(await imageExists(engine, dataset.imageDigest), true, dataset.name);
  });
});

engineTest("DockerSandbox datasets: the keeper reads back each image mount as requested, read-only", async (engine) => {
  const datasets = laneDatasets();
  await withDatasets(datasets, async (backend) => {
    await using sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    const keeper = await inspect(engine, sandbox.resources.keeperId);
    assert.deepEqual(keeper.HostConfig.Mounts, [
      { Type: "volume", Source: sandbox.resources.volumeName, Target: "/workspace", VolumeOptions: { NoCopy: true } },
      { Type: "image", Source: datasets[1].imageDigest, Target: "/datasets/foreign", ReadOnly: true },
      { Type: "image", Source: datasets[0].imageDigest, Target: "/datasets/reference", ReadOnly: true, ImageOptions: { Subpath: "corpus" } },
    ]);
    // Mounts[] comes in no fixed order (the Engine keeps it in a map).
    assert.deepEqual(
      keeper.Mounts.map(({ Type, Name, Destination, RW }) => ({ Type, Name, Destination, RW }))
        .sort((a, b) => a.Destination < b.Destination ? -1 : 1),
      [
        { Type: "image", Name: datasets[1].imageDigest, Destination: "/datasets/foreign", RW: false },
        { Type: "image", Name: datasets[0].imageDigest, Destination: "/datasets/reference", RW: false },
        { Type: "volume", Name: sandbox.resources.volumeName, Destination: "/workspace", RW: true },
      ],
    );
  });
});

engineTest("DockerSandbox datasets: a subpath missing from its image fails startup, naming it, and leaves nothing behind", async (engine) => {
  const { reference } = datasetImages();
  await withDatasets([{ name: "reference", imageDigest: reference, subpath: "corpus/missing" }], async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: testPolicy }, port);
    await assert.rejects(reservation.start(), (error) => {
      assert.ok(error instanceof SandboxConfigurationError, String(error));
      assert.equal(error.code, "configuration");
      assert.match(
        error.message,
        new RegExp(
          `^Cannot start sandbox: the subpath "corpus/missing" of dataset "reference" \\(image ${reference}\\) does not exist in the image: set that subpath in config\\.datasets to a path inside the image, or leave it out to mount the image's root \\(the Engine said: cannot access path /.*/corpus/missing: .*no such file or directory\\)$`,
          "u",
        ),
      );
      return true;
    });
    await assertNamesAbsent(engine, reservation.names);
    const last = port.records.at(-1)!.resources as Record<string, { state: string }>;
    assert.deepEqual(Object.values(last).map((resource) => resource.state), ["removed", "removed"]);
  });
});

engineTest("DockerSandbox datasets: a missing dataset image rejects before anything is recorded or created", async (engine) => {
  const absent = `sha256:${"0d".repeat(32)}`;
  await withDatasets([...laneDatasets(), { name: "absent", imageDigest: absent }], async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: testPolicy }, port);
    await assert.rejects(reservation.start(), (error) =>
      error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
      error.message ===
        `Cannot attach dataset "absent": image ${absent} is not a local image (the backend never pulls or builds): set its imageDigest in config.datasets to the ID of a local image (list them with: docker image ls --no-trunc --format '{{.ID}} {{.Repository}}:{{.Tag}}')`);
    assert.equal(port.records.length, 0, "nothing was recorded, so nothing was created");
    await assertNamesAbsent(engine, reservation.names);
  });
});

engineTest("DockerSandbox datasets: stop, destroy and recovery cleanup work after the dataset image was removed", async (engine) => {
  const image = await importDatasetImage(engine, { "data/value.txt": "disposable\n" });
  try {
    await withDatasets([{ name: "scratch", imageDigest: image, subpath: "data" }], async (backend) => {
      const first = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
      const port = recordingPort();
      const second = await backend.reserve({ policy: testPolicy }, port).start();
      try {
        assert.equal(await runGuest(first, "cat /datasets/scratch/value.txt"), "disposable\n");
        // Image mounts do not hold the image on Engine 28.5: it can be removed under them.
        await removeImage(engine, image);
        await first.stop();
        await first.destroy();
        await assertGone(engine, first);
        // A fresh controller's cleanup of the second sandbox's record (recover = cleanup only).
        const recovery = await backend.recover(port.records.at(-1)!, port);
        assert.deepEqual(recovery.owned.map((resource) => resource.role), ["keeper", "volume"]);
        assert.deepEqual(await recovery.cleanup(), { complete: true, uncertain: [], squatted: [] });
        await assertNamesAbsent(engine, second.names);
      } finally {
        await first.destroy();
        await second.destroy().catch(() => {});
      }
    });
  } finally {
    await removeImage(engine, image);
  }
});

engineTest("DockerSandbox datasets: a create warning other than the image-mount advisory fails startup and removes what was created", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  const rewrite = proxy.inject({
    method: "POST",
    path: "/containers/create",
    fault: {
      kind: "rewrite",
      body: (text) => {
        const reply = JSON.parse(text) as { Warnings: string[] | null };
        assert.deepEqual(reply.Warnings, [IMAGE_MOUNT_ADVISORY, IMAGE_MOUNT_ADVISORY], "Engine 28.5 warns once per image mount");
        return JSON.stringify({ ...reply, Warnings: [...reply.Warnings!, "Your kernel does not support swap limit capabilities"] });
      },
    },
  });
  await withDatasets(laneDatasets(), async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: testPolicy }, port);
    await assert.rejects(reservation.start(), (error) =>
      error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
      error.message ===
        'Cannot start sandbox: the Engine warned on create: "Your kernel does not support swap limit capabilities"; only "Image mount is an experimental feature", once per dataset (2 here), is accepted, so what was created is removed');
    assert.equal((await rewrite.applied).status, 201, "the Engine created the keeper");
    await assertNamesAbsent(engine, reservation.names);
    const last = port.records.at(-1)!.resources as Record<string, { state: string }>;
    assert.deepEqual(Object.values(last).map((resource) => resource.state), ["removed", "removed"]);
  }, proxy.endpoint);
});

engineTest("DockerSandbox datasets: the guest can neither remount a dataset writable nor create a file in one", async () => {
  await withDatasets(laneDatasets(), async (backend) => {
    await using sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    const process = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "mount -o remount,rw /datasets/reference 2>&1; echo rc=$?; { cat /datasets/foreign/foreign.txt > /datasets/foreign/copy; } 2>&1; echo rc=$?"],
    }).start();
    await process.stdin.close();
    const [out, exit] = await Promise.all([text(process.stdout), process.exit]);
    assert.deepEqual(exit, { kind: "exited", code: 0 });
    assert.match(out, /^mount: .*\nrc=[1-9][0-9]*\n.*Read-only file system\nrc=[1-9][0-9]*\n$/su);
  });
});

engineTest("DockerSandbox export: an accessor create with any warning fails the export and removes the accessor; the next export works", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  // The first create is the keeper's (two image-mount advisories, accepted); the second the accessor's.
  const rewrite = proxy.inject({
    method: "POST",
    path: "/containers/create",
    occurrence: 2,
    fault: { kind: "rewrite", body: (text) => JSON.stringify({ ...JSON.parse(text), Warnings: ["Published ports are discarded"] }) },
  });
  await withDatasets(laneDatasets(), async (backend) => {
    await using sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    await sandbox.stop();
    await assert.rejects(sandbox.exportTree({ kind: "workspace" }), (error) =>
      error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
      error.message ===
        'Cannot create export accessor: the Engine warned on create: "Published ports are discarded"; no warning is accepted for a container without datasets, so what was created is removed');
    assert.equal((await rewrite.applied).status, 201, "the Engine created the accessor");
    await assert.rejects(engine.request("GET", `/containers/${sandbox.names.accessor}/json`), /No such container/u);
    const files = await readExport(await sandbox.exportTree({ kind: "workspace" }));
    assert.deepEqual(files.map((file) => file.path), ["work"]);
  }, proxy.endpoint);
});
