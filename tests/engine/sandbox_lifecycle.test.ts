import assert from "node:assert/strict";
import { mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxConflictError,
  SandboxStoppedError,
  SandboxUnsupportedError,
} from "../../lib/sandbox/errors.ts";
import { createDockerSandboxBackend } from "../../lib/docker/backend.ts";
import { DockerEngineError } from "../../lib/engine/errors.ts";
import { busyboxImage, endpoint, engineTest, eventually } from "./_engine.ts";
import { assertGone, readUntil, recordingPort, testPolicy, withBackend } from "./_sandbox.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { TEST_NAMESPACE } from "./_lane.ts";

async function assertNameAbsent(engine: DockerEngine, kind: "containers" | "volumes" | "networks", name: string) {
  const path = kind === "containers" ? `/containers/${name}/json` : `/${kind}/${name}`;
  await assert.rejects(engine.request("GET", path), (error) => error instanceof DockerEngineError && error.code === "not_found");
}

engineTest("DockerSandbox start records every resource before creating it; destroy removes exactly those", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: { ...testPolicy, network: "outbound" } }, port);
    assert.equal(port.records.length, 0, "reserve is inert");
    let captured: DockerSandbox | undefined;
    {
      await using sandbox = await reservation.start();
      const states = port.records.map((record) => JSON.stringify((record.resources as Record<string, { state: string }>)));
      assert.ok(states.some((s) => s.includes('"volume":{"name"') && s.includes('"state":"creating"')));
      const last = port.records.at(-1)!.resources as Record<string, { name: string; state: string; id?: string }>;
      assert.equal(last.keeper.state, "created");
      assert.equal(last.keeper.id, sandbox.resources.keeperId);
      assert.equal(last.network.id, sandbox.resources.networkId);
      assert.equal(last.volume.name, reservation.names.volume);
      const keeper = await engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`, {
        schema: z.looseObject({ Name: z.string(), Config: z.looseObject({ Labels: z.record(z.string(), z.string()) }) }),
      });
      assert.equal(keeper.value.Name, `/${reservation.names.keeper}`);
      assert.equal(keeper.value.Config.Labels["dev.agentcell.reservation"], reservation.id);
      captured = sandbox;
    }
    const sandbox = captured!;
    await assertGone(engine, sandbox);
    const final = port.records.at(-1)!.resources as Record<string, { state: string }>;
    assert.deepEqual(Object.values(final).map((r) => r.state), ["removed", "removed", "removed"]);
    // destroy again is a no-op
    await sandbox.destroy();
  });
});

engineTest("DockerSandbox startup cancelled at each recorded step removes what it created", async (engine) => {
  await withBackend(async (backend) => {
    const policy = { ...testPolicy, network: "outbound" as const };
    const probe = recordingPort();
    const whole = await backend.reserve({ policy }, probe).start();
    const steps = probe.records.length;
    await whole.destroy();
    assert.ok(steps >= 6, `a start records each resource before and after its create (${steps} records)`);
    // The abort comes from inside the port at record `step` (an event of the startup, not a
    // moment in time), so every step is covered on every machine.
    for (let step = 1; step <= steps; step++) {
      const controller = new AbortController();
      const port = recordingPort();
      const reservation = backend.reserve({ policy }, {
        record: async (record) => {
          await port.record(record);
          if (port.records.length === step) controller.abort(new Error("caller gave up"));
        },
      });
      const outcome = await reservation.start({ signal: controller.signal }).then((sandbox) => sandbox, (error) => error);
      if (outcome instanceof Error) {
        assert.ok(outcome instanceof SandboxAbortedError && outcome.code === "aborted", `step ${step}: ${outcome}`);
        assert.equal((outcome.cause as Error)?.message, "caller gave up", `step ${step}: the cause is the caller's reason`);
      } else {
        assert.equal(step, steps, `only an abort at the last record may let the start finish (step ${step})`);
        await outcome.destroy();
      }
      await assertNameAbsent(engine, "containers", reservation.names.keeper);
      await assertNameAbsent(engine, "volumes", reservation.names.volume);
      await assertNameAbsent(engine, "networks", reservation.names.network);
    }
  });
});

engineTest("DockerSandbox never adopts an existing volume of its name", async (engine) => {
  await withBackend(async (backend) => {
    const reservation = backend.reserve({ policy: testPolicy }, recordingPort());
    await engine.request("POST", "/volumes/create", { json: { Name: reservation.names.volume, Labels: { foreign: "yes" } }, expect: [201] });
    try {
      await assert.rejects(reservation.start(), (error) => error instanceof SandboxConflictError && error.code === "conflict");
      const volume = await engine.request("GET", `/volumes/${reservation.names.volume}`, {
        schema: z.looseObject({ Labels: z.record(z.string(), z.string()) }),
      });
      assert.deepEqual(volume.value.Labels, { foreign: "yes" }, "the foreign volume is left alone");
      await assertNameAbsent(engine, "containers", reservation.names.keeper);
    } finally {
      await engine.request("DELETE", `/volumes/${reservation.names.volume}`, { expect: [204] });
    }
  });
});

engineTest("DockerSandbox daemon admission lists every unmet requirement of the linux-x64 profile", async (engine) => {
  const info = await engine.info();
  const spill = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    const backend = createDockerSandboxBackend({
      endpoint: endpoint!,
      namespace: TEST_NAMESPACE,
      spillDirectory: spill,
      imageDigest: busyboxImage,
      user: { uid: 65534, gid: 65534 },
    });
    const reservation = backend.reserve({ policy: testPolicy }, recordingPort());
    if (info.CgroupVersion === "2" && info.CgroupDriver === "systemd" && info.SecurityOptions?.some((o) => o.includes("apparmor"))) {
      const sandbox = await reservation.start();
      await sandbox.destroy();
      return;
    }
    await assert.rejects(reservation.start(), (error) => {
      assert.ok(error instanceof SandboxUnsupportedError);
      assert.match(error.message, /^Cannot admit the Docker daemon for profile linux-x64: it needs /);
      if (info.CgroupVersion !== "2") assert.match(error.message, /cgroup v2/);
      if (info.CgroupDriver !== "systemd") assert.match(error.message, /systemd cgroup driver/);
      // The lane's engine is admitted by linux-x64-cgroupfs, so the message names that fix.
      assert.match(error.message, /; profile linux-x64-cgroupfs admits this daemon: set config\.profile to "linux-x64-cgroupfs"$/);
      return true;
    });
    await assertNameAbsent(engine, "volumes", reservation.names.volume);
  } finally {
    await rm(spill, { recursive: true, force: true });
  }
});

engineTest("DockerSandbox desktop profile rejects on Linux before touching spill directory or Engine", async () => {
  const backend = createDockerSandboxBackend({
    profile: "desktop-apple-virtualization-native-arm64",
    endpoint: "unix:///nonexistent/agentcell/docker.sock",
    namespace: TEST_NAMESPACE,
    spillDirectory: "/nonexistent/agentcell-spill",
    imageDigest: busyboxImage,
    user: { uid: 65534, gid: 65534 },
  });
  await assert.rejects(
    backend.reserve({ policy: testPolicy }, recordingPort()).start(),
    (error) => error instanceof SandboxUnsupportedError && /needs a darwin arm64 controller host/.test(error.message),
  );
});

engineTest("DockerSandbox spill directory must exist, be a directory and be canonical on disk", async () => {
  const base = await realpath(await mkdtemp(join(tmpdir(), "agentcell-spill-")));
  try {
    await writeFile(join(base, "file"), "x");
    await symlink(base, join(base, "link"));
    for (const [path, reason] of [
      [join(base, "missing"), /does not exist/],
      [join(base, "file"), /not a directory/],
      [join(base, "link"), /not a directory|not canonical/],
    ] as const) {
      const backend = createDockerSandboxBackend({
        profile: "linux-x64-cgroupfs",
        endpoint: endpoint!,
        namespace: TEST_NAMESPACE,
        spillDirectory: path,
        imageDigest: busyboxImage,
        user: { uid: 65534, gid: 65534 },
      });
      await assert.rejects(
        backend.reserve({ policy: testPolicy }, recordingPort()).start(),
        (error) => error instanceof SandboxConfigurationError && reason.test(error.message),
      );
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

async function importImage(engine: DockerEngine, changes: string[]): Promise<string> {
  // an image from the busybox guest's files with extra metadata
  const container = await engine.request("POST", "/containers/create", {
    json: { Image: busyboxImage, Cmd: ["/bin/true"] },
    schema: z.looseObject({ Id: z.string() }),
    expect: [201],
  });
  try {
    const rootfs = await engine.stream("GET", `/containers/${container.value.Id}/export`);
    const params = new URLSearchParams({ fromSrc: "-" });
    for (const change of changes) params.append("changes", change);
    const bytes = new Uint8Array(await new Response(rootfs.body).arrayBuffer());
    const created = await engine.stream("POST", `/images/create?${params}`, { body: bytes, contentType: "application/x-tar" });
    const reply = await new Response(created.body).text();
    assert.equal(created.status, 200, reply);
    const id = /"status":"(sha256:[0-9a-f]{64})"/.exec(reply)?.[1];
    assert.ok(id, reply);
    return id;
  } finally {
    await engine.request("DELETE", `/containers/${container.value.Id}`, { query: { force: true }, expect: [204] });
  }
}

engineTest("DockerSandbox image admission rejects extra Env and declared volumes, naming them", async (engine) => {
  for (const [changes, reason] of [
    [["ENV NODE_VERSION=26"], /declares NODE_VERSION; only HOME, TMPDIR and PATH with the fixed values are admitted: flatten the image with agentcell prepare-image SOURCE TAG/],
    [["ENV HOME=/root"], /sets HOME=\/root, the fixed value is \/home\/sandbox: flatten the image with agentcell prepare-image SOURCE TAG/],
    [["VOLUME /data"], /declares volumes \(\/data\): flatten the image with agentcell prepare-image SOURCE TAG/],
  ] as const) {
    const image = await importImage(engine, [...changes]);
    try {
      await withBackend(async (backend) => {
        const reservation = backend.reserve({ policy: testPolicy }, recordingPort());
        await assert.rejects(
          reservation.start(),
          (error) => error instanceof SandboxUnsupportedError && reason.test(error.message),
        );
        await assertNameAbsent(engine, "volumes", reservation.names.volume);
      }, image);
    } finally {
      await engine.request("DELETE", `/images/${image}`, { query: { force: true }, expect: [200] });
    }
  }
});

engineTest("DockerSandbox rejects an image that does not exist locally", async (engine) => {
  await withBackend(async (backend) => {
    const reservation = backend.reserve({ policy: testPolicy }, recordingPort());
    await assert.rejects(reservation.start(), (error) => {
      assert.ok(error instanceof SandboxUnsupportedError);
      assert.equal(
        error.message,
        `Cannot admit image sha256:${"ab".repeat(32)}: no such local image (the backend never pulls or builds): set config.imageDigest to the ID of a local image ` +
          "(list them with: docker image ls --no-trunc --format '{{.ID}} {{.Repository}}:{{.Tag}}') or make one from a local image with agentcell prepare-image SOURCE TAG (prepareImage() in @agentcell/docker)",
      );
      return true;
    });
    await assertNameAbsent(engine, "volumes", reservation.names.volume);
  }, `sha256:${"ab".repeat(32)}`);
});

engineTest("DockerSandbox notices a keeper that stops on its own, reports stopped and cleans up compute", async (engine) => {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    try {
      const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "echo up; exec /bin/sleep 60"] }).start();
      await process.stdin.close();
      // The exec's start can answer before runc has launched the process; a keeper killed in
      // between makes the Engine report the exec's own failure (exit 127), not a killed
      // leader. Wait until the leader runs.
      await readUntil(process.stdout, (seen) => seen.includes("up\n"));
      // The agent cannot signal its keeper (another uid); someone outside stops it.
      await engine.request("POST", `/containers/${sandbox.resources.keeperId}/kill`, { query: { signal: "TERM" }, expect: [204] });
      // the leader dies with the keeper: observed as killed, or unobservable once compute is gone
      const receipt = await process.exit;
      assert.ok(receipt.kind === "unavailable" || (receipt.kind === "exited" && receipt.code >= 128), JSON.stringify(receipt));
      await eventually("the sandbox noticing its keeper stopped", () => sandbox.state === "running" ? undefined : true);
      assert.equal(sandbox.state, "stopped");
      assert.ok(sandbox.stopCause instanceof SandboxStoppedError && /keeper container stopped on its own/.test(sandbox.stopCause.message));
      await sandbox.stop();
      await assert.rejects(
        engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`),
        (error) => error instanceof DockerEngineError && error.code === "not_found",
      );
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  });
});
