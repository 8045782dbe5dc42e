// exportTree selections on a real Engine: subtree and file, hard links, symlinks made by the
// guest, state rules and the accessor container.
import assert from "node:assert/strict";
import { z } from "zod";
import {
  SandboxConfigurationError,
  SandboxStateError,
  SandboxUnsupportedError,
} from "../../lib/sandbox/errors.ts";
import { partialImportOf } from "../../lib/sandbox/transfer.ts";
import { LABELS } from "../../lib/docker/names.ts";
import { engineTest } from "./_engine.ts";
import { readExport, runGuest } from "./_files.ts";
import { assertGone, recordingPort, testPolicy, withBackend, withSandbox } from "./_sandbox.ts";

const configuration = (fragment: RegExp) => (error: unknown) =>
  error instanceof SandboxConfigurationError && error.code === "configuration" && fragment.test(error.message);

engineTest("DockerSandbox exportTree selects a subtree or one file with workspace-relative paths; a hard-linked file exports as bytes", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await runGuest(sandbox, [
      "mkdir -p artifacts/logs other",
      "printf report > artifacts/report.txt",
      "printf log > artifacts/logs/run.log",
      "printf unrelated > other/x",
      "ln artifacts/report.txt alias.txt",
    ].join(" && "));
    await sandbox.stop();

    const subtree = await readExport(await sandbox.exportTree({ kind: "subtree", path: "work/artifacts/logs" }));
    assert.deepEqual(subtree.map((e) => `${e.type} ${e.path} ${e.size}`), ["directory work/artifacts/logs 0", "file work/artifacts/logs/run.log 3"]);

    const file = await readExport(await sandbox.exportTree({ kind: "file", path: "work/alias.txt" }));
    assert.deepEqual(file.map((e) => `${e.type} ${e.path} ${e.size}`), ["file work/alias.txt 6"]);

    // Inside a tree the Engine writes the second name of a hard link as a link record.
    const withLink = await sandbox.exportTree({ kind: "workspace" });
    await assert.rejects(
      readExport(withLink),
      (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /neither a regular file nor a directory/.test(error.message),
    );

    await assert.rejects(sandbox.exportTree({ kind: "file", path: "work/artifacts" }), configuration(/'work\/artifacts' is a directory, not a regular file/));
    await assert.rejects(sandbox.exportTree({ kind: "subtree", path: "work/alias.txt" }), configuration(/is a regular file, not a directory/));
    await assert.rejects(sandbox.exportTree({ kind: "subtree", path: "work/missing/deeper" }), configuration(/ancestor 'work\/missing' does not exist/));
    await assert.rejects(sandbox.exportTree({ kind: "file", path: "work/other/nope" }), configuration(/selected path 'work\/other\/nope' does not exist/));
    await assert.rejects(sandbox.exportTree({ kind: "subtree", path: "work/../etc" }), configuration(/selection\.path must not contain a '\.\.' segment/));
    // A path relative to the process's working directory where /workspace was meant.
    await assert.rejects(
      sandbox.exportTree({ kind: "subtree", path: "artifacts/logs" }),
      configuration(
        /^Cannot export files: ancestor 'artifacts' does not exist in the workspace; did you mean 'work\/artifacts\/logs'\? \(export paths are relative to \/workspace; the process works in \/workspace\/work\)$/,
      ),
    );
    await assert.rejects(sandbox.exportTree({ kind: "file", path: "nothing-here" }), configuration(/^Cannot export files: the selected path 'nothing-here' does not exist in the workspace$/));
  });
});

engineTest("DockerSandbox exportTree rejects a symlinked ancestor, a symlinked root and a symlink inside a subtree", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await runGuest(sandbox, [
      "mkdir -p real/inner && printf secret > real/inner/f",
      "ln -s real link",
      "ln -s /etc etc",
      "mkdir tree && printf a > tree/a && ln -s ../real tree/escape",
    ].join(" && "));
    await sandbox.stop();
    await assert.rejects(
      sandbox.exportTree({ kind: "file", path: "work/link/inner/f" }),
      configuration(/ancestor 'work\/link' is a symbolic link to '[^']*real', not a directory; selections never follow links/),
    );
    await assert.rejects(sandbox.exportTree({ kind: "file", path: "work/etc/passwd" }), configuration(/'work\/etc' is a symbolic link to '\/etc'/));
    await assert.rejects(sandbox.exportTree({ kind: "subtree", path: "work/link" }), configuration(/selected path 'work\/link' is a symbolic link/));
    await assert.rejects(
      readExport(await sandbox.exportTree({ kind: "subtree", path: "work/tree" })),
      (error) => error instanceof SandboxUnsupportedError && /at 'work\/tree\/escape'/.test(error.message),
    );
    // the real path still exports
    const real = await readExport(await sandbox.exportTree({ kind: "file", path: "work/real/inner/f" }));
    assert.equal(real[0].size, 6);
  });
});

engineTest("DockerSandbox exportTree refuses a directory deeper than 3072 bytes instead of exporting it incompletely", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // 16 levels of 200-byte names: 3,216 bytes below work/deep, files at the bottom.
    const level = "d".repeat(200);
    await runGuest(sandbox, `p=deep; for i in $(seq 16); do p=$p/${level}; done; mkdir -p $p && printf x > $p/f && printf y > deep/top`);
    await sandbox.stop();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const entry of await sandbox.exportTree({ kind: "subtree", path: "work/deep" })) {
          seen.push(entry.path);
          await entry.body.cancel();
        }
      })(),
      (error) => error instanceof SandboxUnsupportedError && error.code === "unsupported" && /bytes deep, above 3072/.test(error.message),
    );
    assert.ok(seen.length > 1 && seen.every((path) => path.length <= 3072), "entries up to the limit were handed out first");
    // A file selection below the limit still works.
    assert.equal((await readExport(await sandbox.exportTree({ kind: "file", path: "work/deep/top" })))[0].size, 1);
  });
});

engineTest("DockerSandbox (processes \"one\") importTree and exportTree enforce their states", async (engine) => {
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: { ...testPolicy, processes: "one" } }, recordingPort()).start();
    try {
      const state = (fragment: RegExp) => (error: unknown) =>
        error instanceof SandboxStateError && error.code === "invalid_state" && fragment.test(error.message);
      await assert.rejects(sandbox.exportTree({ kind: "workspace" }), state(/compute is running; call stop\(\) first/));
      await sandbox.importTree([{ path: "a", type: "directory", mode: 0o755, size: 0 }]);
      sandbox.reserveProcess({ executable: "/bin/true" });
      const afterReserve = await sandbox.importTree([]).catch((error) => error);
      assert.ok(state(/already reserved/)(afterReserve));
      assert.deepEqual(partialImportOf(afterReserve), { entriesSent: 0, bytesSent: 0, lastPathSent: undefined });
      await sandbox.stop();
      await assert.rejects(sandbox.importTree([]), state(/the sandbox is stopped/));
      const entries = await readExport(await sandbox.exportTree({ kind: "workspace" }));
      assert.deepEqual(entries.map((e) => e.path), ["work", "work/a"]);
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
    await assert.rejects(sandbox.exportTree({ kind: "workspace" }), (error) => error instanceof SandboxStateError && /destroyed/.test(error.message));
  });
});

engineTest("DockerSandbox export accessor is recorded first, never started, read-only, without network, reused and removed", async (engine) => {
  await withBackend(async (backend) => {
    const port = recordingPort();
    const reservation = backend.reserve({ policy: { ...testPolicy, network: "outbound" } }, port);
    const sandbox = await reservation.start();
    try {
      await sandbox.stop();
      assert.equal(sandbox.resources.accessorId, undefined);
      const before = port.records.length;
      await readExport(await sandbox.exportTree({ kind: "workspace" }));
      const accessorId = sandbox.resources.accessorId!;
      const states = port.records.slice(before).map((record) => (record.resources as Record<string, { state: string; id?: string }>).accessor);
      assert.deepEqual(states.map((s) => s?.state), ["creating", "created"], "recorded before creation, then with its ID");
      assert.equal(states[1]!.id, accessorId);

      const inspect = await engine.request("GET", `/containers/${accessorId}/json`, {
        schema: z.looseObject({
          Name: z.string(),
          State: z.looseObject({ Status: z.string(), Running: z.boolean() }),
          Config: z.looseObject({ Labels: z.record(z.string(), z.string()), User: z.string(), Image: z.string() }),
          HostConfig: z.looseObject({ NetworkMode: z.string(), ReadonlyRootfs: z.boolean(), CapDrop: z.array(z.string()), SecurityOpt: z.array(z.string()) }),
          Mounts: z.array(z.looseObject({ Name: z.string().optional(), Destination: z.string(), RW: z.boolean() })),
        }),
      });
      const accessor = inspect.value;
      assert.equal(accessor.Name, `/${reservation.names.accessor}`);
      assert.equal(accessor.Config.Labels[LABELS.role], "accessor");
      assert.equal(accessor.Config.Labels[LABELS.reservation], reservation.id);
      assert.equal(accessor.State.Status, "created");
      assert.equal(accessor.HostConfig.NetworkMode, "none");
      assert.equal(accessor.HostConfig.ReadonlyRootfs, true);
      assert.deepEqual(accessor.HostConfig.CapDrop, ["ALL"]);
      assert.deepEqual(accessor.HostConfig.SecurityOpt, ["no-new-privileges"]);
      assert.equal(accessor.Config.User, "65533:65533", "the keeper's identity (the default keeperUser)");
      assert.deepEqual(accessor.Mounts.map((m) => [m.Name, m.Destination, m.RW]), [[reservation.names.volume, "/workspace", false]]);

      await readExport(await sandbox.exportTree({ kind: "subtree", path: "work" }));
      assert.equal(sandbox.resources.accessorId, accessorId, "reused");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
    const last = port.records.at(-1)!.resources as Record<string, { state: string }>;
    assert.equal(last.accessor.state, "removed");
  });
});
