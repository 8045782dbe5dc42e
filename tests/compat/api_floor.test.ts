// The compat lane: a second, older Engine (Debian 13's docker.io 26.1.5, API 1.45) started
// beside the main one by scripts/test.sh (Node only). The client negotiates down to the
// daemon's version, the core lifecycle runs, datasets are refused with the API-floor error
// before anything is created, and an `outbound` sandbox on each engine works at once.
//
// Environment: AGENTCELL_TEST_ENGINE (the compat engine), AGENTCELL_TEST_BUSYBOX_IMAGE,
// AGENTCELL_TEST_NODE_IMAGE and AGENTCELL_TEST_DATASET_IMAGE (made on it), and
// AGENTCELL_TEST_MAIN_ENGINE (the main engine) with AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import process from "node:process";
import { compareApiVersions } from "../../lib/engine/api_version.ts";
import { DockerEngine } from "../../lib/engine/client.ts";
import { IMAGE_MOUNT_API_VERSION } from "../../lib/docker/datasets/admission.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { busyboxImage, endpoint, engineTest, eventually } from "../engine/_engine.ts";
import { startFaultProxy } from "../engine/_fault_proxy.ts";
import { readExport } from "../engine/_files.ts";
import { assertGone, assertNamesAbsent, readUntil, recordingPort, keepStarted, testPolicy, text, withBackend } from "../engine/_sandbox.ts";

/** The API version the compat lane's engine speaks. */
const COMPAT_API = "1.45";

engineTest("DockerEngine on the API 1.45 engine negotiates 1.45 and sends every request under /v1.45/", async (engine) => {
  const version = await engine.version();
  assert.equal(version.ApiVersion, COMPAT_API, `the compat lane runs Engine ${version.Version}`);
  assert.ok(compareApiVersions(version.ApiVersion, IMAGE_MOUNT_API_VERSION) < 0);
  assert.equal(await engine.apiVersion(), COMPAT_API);
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  const through = new DockerEngine(proxy.endpoint);
  await through.info();
  await through.request("GET", `/images/${busyboxImage}/json`);
  const targets = proxy.requests.map((request) => request.target);
  assert.deepEqual(targets.map((target) => target.replace(/\?.*$/u, "")), ["/version", "/v1.45/info", `/v1.45/images/${busyboxImage}/json`]);
});

engineTest("DockerSandbox on the API 1.45 engine starts, takes files, runs its process, gives its receipt, exports and is destroyed", async (engine) => {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    try {
      const input = new TextEncoder().encode("alpha\n");
      assert.deepEqual(
        await sandbox.importTree([{ path: "in.txt", type: "file", mode: 0o644, size: input.byteLength, body: new Blob([input]).stream() }]),
        { files: 1, bytes: input.byteLength },
      );
      const guest = await sandbox.reserveProcess({
        executable: "/bin/sh",
        args: ["-c", "tr a-z A-Z < in.txt > out.txt; cat out.txt; echo err >&2; exit 3"],
      }).start();
      await guest.stdin.close();
      const [out, err, exit] = await Promise.all([text(guest.stdout), text(guest.stderr), guest.exit]);
      assert.deepEqual([out, err, exit], ["ALPHA\n", "err\n", { kind: "exited", code: 3 }]);
      await sandbox.stop();
      const files = await readExport(await sandbox.exportTree({ kind: "subtree", path: "work" }));
      assert.deepEqual(files.map((file) => [file.path, file.type, file.size]), [
        ["work", "directory", 0],
        ["work/in.txt", "file", 6],
        ["work/out.txt", "file", 6],
      ]);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  });
});

engineTest("DockerSandbox on the API 1.45 engine refuses datasets with the API-floor error before anything is recorded or created", async (engine) => {
  const dataset = process.env.AGENTCELL_TEST_DATASET_IMAGE ?? "";
  assert.match(dataset, /^sha256:[0-9a-f]{64}$/u, "set AGENTCELL_TEST_DATASET_IMAGE (scripts/guest-images.sh dataset on the compat engine)");
  const { Version } = await engine.version();
  await withBackend(async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: testPolicy }, port);
    await assert.rejects(reservation.start(), (error) =>
      error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
      error.message ===
        `Cannot attach datasets: image mounts need Docker Engine API 1.48 or newer (Engine 28), and the daemon speaks API 1.45 (Engine ${Version}): upgrade the Engine, or leave config.datasets empty`);
    assert.equal(port.records.length, 0, "nothing was recorded, so nothing was created");
    await assertNamesAbsent(engine, reservation.names);
  }, busyboxImage, endpoint!, [{ name: "reference", imageDigest: dataset, subpath: "corpus" }]);
});

engineTest("DockerSandbox outbound on the API 1.45 engine and on the main engine at once: each reaches a host listener through its own gateway", async (engine) => {
  const main = process.env.AGENTCELL_TEST_MAIN_ENGINE ?? "";
  const mainImage = process.env.AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE ?? "";
  assert.ok(main && mainImage, "set AGENTCELL_TEST_MAIN_ENGINE and AGENTCELL_TEST_MAIN_BUSYBOX_IMAGE (npm test does)");
  const heard: string[] = [];
  const server = createServer((socket) => {
    socket.setEncoding("utf8");
    socket.on("data", (line) => heard.push(String(line).trim()));
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  const port = (server.address() as { port: number }).port;
  const script = `gw=$(ip route | awk '/^default/ { print $3 }'); echo "hello from $1" | nc -w 5 "$gw" ${port} && echo sent via "$gw"; read line || true`;
  const policy = { ...testPolicy, network: "outbound" as const };
  const run = (sandbox: DockerSandbox, who: string) =>
    sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script, "guest", who] }).start();
  try {
    await withBackend(async (compat) => {
      await withBackend(async (primary) => {
        const sandboxes: DockerSandbox[] = [];
        try {
          await keepStarted([compat, primary].map((backend) => backend.reserve({ policy }, recordingPort()).start()), sandboxes);
          const processes = await Promise.all([run(sandboxes[0], "compat"), run(sandboxes[1], "main")]);
          const said = await Promise.all(processes.map((guest) => readUntil(guest.stdout, (seen) => seen.includes("\n"))));
          for (const line of said) assert.match(line, /^sent via ([0-9]+\.){3}[0-9]+\n$/u);
          assert.notEqual(said[0], said[1], "each sandbox has its own gateway");
          for (const guest of processes) await guest.stdin.close();
          assert.deepEqual(await Promise.all(processes.map((guest) => guest.exit)), [{ kind: "exited", code: 0 }, { kind: "exited", code: 0 }]);
          await eventually("the host listener hearing both guests", () => heard.length >= 2 ? true : undefined);
          assert.deepEqual(heard.sort(), ["hello from compat", "hello from main"]);
        } finally {
          for (const sandbox of sandboxes) await sandbox.destroy();
          // (With one start refused the test has failed already; the other was destroyed.)
          if (sandboxes.length === 2) {
            await assertGone(engine, sandboxes[0]);
            await assertGone(new DockerEngine(main), sandboxes[1]);
          }
        }
      }, mainImage, main);
    });
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
