// Quotas, deadlines and cancellation of transfers on a real Engine. A failed import tells
// exactly what may have landed: the workspace holds nothing beyond the first `entriesSent`
// entries.
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import {
  SandboxAbortedError,
  SandboxDeadlineError,
  SandboxQuotaError,
} from "../../lib/sandbox/errors.ts";
import { partialImportOf, type SandboxExportEntry, type SandboxImportEntry } from "../../lib/sandbox/transfer.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { engineTest } from "./_engine.ts";
import { bytes, type Exported, importEntries, type Planned, readExport, runGuest } from "./_files.ts";
import { withSandbox } from "./_sandbox.ts";

function files(directory: string, count: number, size: number): Planned[] {
  return [
    { path: directory, type: "directory", mode: 0o755, mtime: 1_600_000_000, data: new Uint8Array(0) },
    ...Array.from({ length: count }, (_, i) => ({
      path: `${directory}/f${i}`,
      type: "file" as const,
      mode: 0o644,
      mtime: 1_600_000_000,
      data: bytes(size, i + 1),
    })),
  ];
}

/**
 * A file body that delivers `first` bytes, then never more (until cancelled). `stalled`
 * resolves (with the time) when the importer asks for more after the first bytes: by then
 * it has counted them and the entry's header as sent.
 */
function stalling(first: number): { entry: SandboxImportEntry; cancelled: Promise<void>; stalled: Promise<number> } {
  let sent = false;
  let onCancel!: () => void;
  let onStall!: (at: number) => void;
  const cancelled = new Promise<void>((resolve) => (onCancel = resolve));
  const stalled = new Promise<number>((resolve) => (onStall = resolve));
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(bytes(first, 99));
        return;
      }
      onStall(Date.now());
      return new Promise(() => {});
    },
    cancel() {
      onCancel();
    },
  });
  return { entry: { path: "slow/stalls.bin", type: "file", mode: 0o644, mtime: 1_600_000_000, size: 4 * 1024 * 1024, body }, cancelled, stalled };
}

async function workspace(sandbox: DockerSandbox): Promise<Map<string, Exported>> {
  const entries = await readExport(await sandbox.exportTree({ kind: "workspace" }));
  return new Map(entries.map((entry) => [entry.path, entry]));
}

engineTest("DockerSandbox importTree quotas trip before the entry and the error says exactly what landed", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const byFiles = files("by-files", 6, 1000);
    const filesError = await sandbox.importTree(importEntries(byFiles), { quota: { files: 4 } }).catch((error) => error);
    assert.ok(filesError instanceof SandboxQuotaError && filesError.code === "quota", String(filesError));
    assert.deepEqual(partialImportOf(filesError), { entriesSent: 4, bytesSent: 3000, lastPathSent: "by-files/f2" });

    const byBytes = files("by-bytes", 6, 1000);
    const bytesError = await sandbox.importTree(importEntries(byBytes), { quota: { bytes: 2500 } }).catch((error) => error);
    assert.ok(bytesError instanceof SandboxQuotaError, String(bytesError));
    assert.deepEqual(partialImportOf(bytesError), { entriesSent: 3, bytesSent: 2000, lastPathSent: "by-bytes/f1" });

    // An import within its quotas still works afterwards.
    assert.deepEqual(await sandbox.importTree(importEntries(files("fits", 2, 10)), { quota: { files: 3, bytes: 20 } }), { files: 3, bytes: 20 });
    await sandbox.stop();
    const landed = await workspace(sandbox);
    const expected = ["work", ...byFiles.slice(0, 4), ...byBytes.slice(0, 3), ...files("fits", 2, 10)].map((item) =>
      typeof item === "string" ? item : `work/${item.path}`
    );
    assert.deepEqual([...landed.keys()].sort(), expected.sort());
    for (const path of expected.filter((path) => path.includes("/f"))) assert.equal(landed.get(path)!.uid, 65534, path);
  });
});

engineTest("DockerSandbox importTree deadlineAt and signal fail it and name the entry that may be partial", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const before = files("before", 2, 5000);
    const slow = stalling(100_000);
    const deadlineAt = Date.now() + 800;
    let stalledAt = Infinity;
    slow.stalled.then((at) => (stalledAt = at));
    const error = await sandbox.importTree([...importEntries(before), slow.entry], { deadlineAt }).catch((error) => error);
    // Nothing but the deadline can end an import whose source stalls: the error is the event.
    assert.ok(error instanceof SandboxDeadlineError && error.code === "deadline", String(error));
    const exact = { entriesSent: 5, bytesSent: 110_000, lastPathSent: "slow/stalls.bin" };
    if (stalledAt < deadlineAt) {
      assert.deepEqual(partialImportOf(error), exact);
    } else {
      // A machine too slow to reach the stall before the deadline: the report is a prefix.
      const prefixes = [
        { entriesSent: 0, bytesSent: 0, lastPathSent: undefined },
        { entriesSent: 1, bytesSent: 0, lastPathSent: "before" },
        { entriesSent: 2, bytesSent: 0, lastPathSent: "before/f0" },
        { entriesSent: 2, bytesSent: 5000, lastPathSent: "before/f0" },
        { entriesSent: 3, bytesSent: 5000, lastPathSent: "before/f1" },
        { entriesSent: 3, bytesSent: 10_000, lastPathSent: "before/f1" },
        { entriesSent: 4, bytesSent: 10_000, lastPathSent: "slow" },
        { entriesSent: 5, bytesSent: 10_000, lastPathSent: "slow/stalls.bin" },
        exact,
      ];
      assert.ok(prefixes.some((prefix) => isDeepStrictEqual(prefix, partialImportOf(error))), JSON.stringify(partialImportOf(error)));
    }
    await slow.cancelled;

    const past = await sandbox.importTree(importEntries(files("never", 1, 1)), { deadlineAt: Date.now() - 1 }).catch((error) => error);
    assert.ok(past instanceof SandboxDeadlineError);
    assert.deepEqual(partialImportOf(past), { entriesSent: 0, bytesSent: 0, lastPathSent: undefined });

    // Aborted once the importer waits on the stalled body: its header has been sent.
    const controller = new AbortController();
    const stalled = stalling(10);
    stalled.stalled.then(() => controller.abort(new Error("user cancelled")));
    const aborted = await sandbox.importTree([stalled.entry], { signal: controller.signal }).catch((error) => error);
    assert.ok(aborted instanceof SandboxAbortedError && aborted.code === "aborted", String(aborted));
    assert.equal((aborted.cause as Error).message, "user cancelled");
    assert.deepEqual(partialImportOf(aborted), { entriesSent: 2, bytesSent: 10, lastPathSent: "slow/stalls.bin" });

    await sandbox.stop();
    const landed = await workspace(sandbox);
    const told = new Set(["work", "work/before", "work/before/f0", "work/before/f1", "work/slow", "work/slow/stalls.bin"]);
    for (const path of landed.keys()) assert.ok(told.has(path), `${path} landed without being reported`);
    assert.equal(landed.get("work/before/f1")?.size, 5000);
    const partial = landed.get("work/slow/stalls.bin");
    if (partial) assert.ok(partial.size <= 4 * 1024 * 1024, "the entry in flight may be truncated");
  });
});

engineTest("DockerSandbox exportTree quotas, deadlineAt and signal arrive as stream errors", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await runGuest(sandbox, "mkdir out && for i in 1 2 3 4 5; do head -c 1000 /dev/zero > out/f$i; done && head -c 8388608 /dev/zero > out/large");
    await sandbox.stop();

    // `work/out` and two files fit the file quota; the fourth entry trips it.
    const byFiles = await sandbox.exportTree({ kind: "subtree", path: "work/out" }, { quota: { files: 3 } });
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const entry of byFiles) {
          seen.push(entry.path);
          await entry.body.cancel();
        }
      })(),
      (error) => error instanceof SandboxQuotaError && error.code === "quota",
    );
    assert.equal(seen.length, 3);

    await assert.rejects(
      readExport(await sandbox.exportTree({ kind: "subtree", path: "work/out" }, { quota: { bytes: 4500 } })),
      (error) => error instanceof SandboxQuotaError && /4500 bytes/.test(error.message),
    );
    assert.equal((await readExport(await sandbox.exportTree({ kind: "file", path: "work/out/large" }, { quota: { bytes: 8388608, files: 1 } })))[0].size, 8388608);

    // An onProgress that throws while a body is read fails the body and the entry stream and
    // frees the export slot: the next export works without the caller cancelling anything.
    const throwing = await sandbox.exportTree({ kind: "file", path: "work/out/large" }, {
      onProgress: ({ bytes }) => {
        if (bytes > 0) throw new Error("enough");
      },
    });
    const throwingReader = throwing.getReader();
    const { value: large } = await throwingReader.read();
    await assert.rejects(new Response(large!.body).arrayBuffer(), (error) => error instanceof SandboxAbortedError && (error.cause as Error).message === "enough");
    assert.equal((await readExport(await sandbox.exportTree({ kind: "file", path: "work/out/f1" })))[0].size, 1000);
    await assert.rejects(throwingReader.read(), SandboxAbortedError);

    // A slow reader past its deadline: the body and the entry stream fail with the deadline.
    // The deadline must fall after the opening and the first chunk; a machine that needs
    // longer than the window gets a wider one (the opening then fails with the deadline).
    let body: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let reader: ReadableStreamDefaultReader<SandboxExportEntry> | undefined;
    let deadlineAt = 0;
    for (const windowMs of [500, 4_000, 30_000]) {
      deadlineAt = Date.now() + windowMs;
      try {
        reader = (await sandbox.exportTree({ kind: "file", path: "work/out/large" }, { deadlineAt })).getReader();
        const { value: entry } = await reader.read();
        body = entry!.body.getReader();
        await body.read();
        break;
      } catch (error) {
        assert.ok(error instanceof SandboxDeadlineError, `opening before the deadline: ${error}`);
        await reader?.cancel().catch(() => {});
        reader = body = undefined;
      }
    }
    assert.ok(body && reader, "the export opened before its deadline");
    // Wait until the deadline has passed (the event), then read on.
    while (Date.now() <= deadlineAt + 50) await new Promise((resolve) => setTimeout(resolve, deadlineAt + 60 - Date.now()));
    await assert.rejects(
      (async () => {
        for (;;) if ((await body.read()).done) break;
      })(),
      (error) => error instanceof SandboxDeadlineError && error.code === "deadline",
    );
    await assert.rejects(reader.read(), SandboxDeadlineError);

    await assert.rejects(
      sandbox.exportTree({ kind: "workspace" }, { deadlineAt: Date.now() - 1 }),
      (error) => error instanceof SandboxDeadlineError,
    );

    const controller = new AbortController();
    const aborted = await sandbox.exportTree({ kind: "subtree", path: "work/out" }, { signal: controller.signal });
    controller.abort(new Error("stop reading"));
    await assert.rejects(readExport(aborted), (error) => error instanceof SandboxAbortedError && (error.cause as Error).message === "stop reading");
  });
});
