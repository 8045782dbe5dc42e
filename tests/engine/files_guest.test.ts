// writeFile / readFile while compute runs, through the guest, on a real engine: exact binary
// round trips, guest symlinks that never reach the host, bounds, and an image without the
// tools the writer and reader need.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, realpath, rm, writeFile } from "node:fs/promises";
import { z } from "zod";
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxDeadlineError,
  SandboxEngineError,
  SandboxQuotaError,
  SandboxStoppedError,
  SandboxUnsupportedError,
} from "../../lib/sandbox/errors.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import { removeContainer } from "../../lib/engine/containers.ts";
import { writeTar } from "../../lib/tar/write_tar.ts";
import { endpoint, engineTest, eventually } from "./_engine.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { bytes, sha256 } from "./_files.ts";
import { readUntil, testPolicy, withSandbox } from "./_sandbox.ts";

const decoder = new TextDecoder();
const configuration = (fragment: string) => (error: unknown) =>
  error instanceof SandboxConfigurationError && error.code === "configuration" && error.message.includes(fragment);

engineTest("DockerSandbox writeFile / readFile round-trip binary data while a process runs", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const running = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    const data = bytes(3 * 1024 * 1024 + 5, 11);
    const progress: number[] = [];
    assert.deepEqual(await sandbox.writeFile("work/deep/new/data.bin", data, { mode: 0o640, onProgress: ({ bytes }) => progress.push(bytes) }), {
      files: 1,
      bytes: data.length,
    });
    assert.equal(progress.at(-1), data.length);
    assert.deepEqual(await sandbox.readFile("work/deep/new/data.bin", { maxBytes: data.length }), data);
    // The guest sees the same bytes, owned by the sandbox user, with the mode asked for.
    const inside = await sandbox.run("/bin/sh", ["-c", "cd deep/new && sha256sum data.bin | cut -d' ' -f1; stat -c '%a %u:%g' data.bin; ls -A"]);
    assert.equal(inside.stdoutText, `${sha256(data)}\n640 65534:65534\ndata.bin\n`, "no temporary file is left beside it");
    // A second write replaces the file; text is UTF-8; an empty file works.
    await sandbox.writeFile("work/deep/new/data.bin", "grüße\n");
    assert.equal(decoder.decode(await sandbox.readFile("work/deep/new/data.bin")), "grüße\n");
    await sandbox.writeFile("work/empty", new Uint8Array());
    assert.deepEqual(await sandbox.readFile("work/empty", { maxBytes: 0 }), new Uint8Array());
    assert.deepEqual(await sandbox.writeFile("work/blob.bin", new Blob([data.slice(0, 1000)])), { files: 1, bytes: 1000 });
    assert.deepEqual(await sandbox.readFile("work/blob.bin"), data.subarray(0, 1000));
    await running.kill();
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox writeFile through a guest symlink to /etc fails inside the guest; one to /tmp writes the guest's /tmp only", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const name = `agentcell-pwn-${crypto.randomUUID()}`;
    await sandbox.run("/bin/sh", ["-c", "ln -s /etc x && ln -s /tmp y"]);
    await assert.rejects(sandbox.writeFile(`work/x/${name}`, "owned\n"), configuration("Read-only file system"));
    assert.equal(existsSync(`/etc/${name}`), false, "nothing on the host");
    assert.equal((await sandbox.run("/bin/sh", ["-c", `test -e /etc/${name}; echo $?`])).stdoutText, "1\n", "nothing in the guest's /etc");
    await sandbox.writeFile(`work/y/${name}`, "guest tmp\n");
    assert.equal((await sandbox.run("/bin/cat", [`/tmp/${name}`])).stdoutText, "guest tmp\n");
    assert.equal(existsSync(`/tmp/${name}`), false, "the host's /tmp is untouched");
    // A final symlink is replaced, never followed.
    await sandbox.run("/bin/sh", ["-c", `echo keep > /tmp/${name}-target && ln -s /tmp/${name}-target link`]);
    await sandbox.writeFile("work/link", "replaced\n");
    assert.equal((await sandbox.run("/bin/sh", ["-c", `cat /tmp/${name}-target; test -L link; echo $?; cat link`])).stdoutText, "keep\n1\nreplaced\n");
  });
});

engineTest("DockerSandbox readFile of a symlink to a file outside the workspace reads the guest's file, never the host's", async (engine) => {
  const name = `agentcell-view-${crypto.randomUUID()}`;
  const hostPath = `${await realpath("/tmp")}/${name}`;
  await writeFile(hostPath, "host view\n");
  try {
    await withSandbox(engine, async (sandbox) => {
      await sandbox.run("/bin/sh", ["-c", `echo 'guest view' > /tmp/${name} && ln -s /tmp/${name} ln`]);
      assert.equal(decoder.decode(await sandbox.readFile("work/ln")), "guest view\n");
      await sandbox.run("/bin/sh", ["-c", "ln -s /etc/passwd passwd"]);
      const guestPasswd = (await sandbox.run("/bin/cat", ["/etc/passwd"])).stdout;
      assert.deepEqual(await sandbox.readFile("work/passwd"), guestPasswd);
    });
    assert.equal(await readFile(hostPath, "utf8"), "host view\n");
  } finally {
    await rm(hostPath, { force: true });
  }
});

engineTest("DockerSandbox readFile and writeFile refuse, naming the path and the fix", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await sandbox.run("/bin/sh", ["-c", "mkdir dir && mkfifo fifo && head -c 101 /dev/zero > big"]);
    await assert.rejects(
      sandbox.readFile("work/missing"),
      (error) => error instanceof SandboxConfigurationError && error.message === "Cannot read file work/missing: it does not exist in the guest (paths are relative to /workspace: work/… for the work directory)",
    );
    await assert.rejects(sandbox.readFile("work/dir"), (error) => error instanceof SandboxConfigurationError && error.message === "Cannot read file work/dir: it is a directory in the guest; name a regular file");
    await assert.rejects(sandbox.readFile("work/fifo"), (error) => error instanceof SandboxConfigurationError && error.message === "Cannot read file work/fifo: it is not a regular file in the guest");
    await assert.rejects(sandbox.writeFile("work/dir", "x"), (error) => error instanceof SandboxConfigurationError && error.message === "Cannot write file work/dir: it is a directory in the guest; name a regular file");
    assert.equal((await sandbox.readFile("work/big", { maxBytes: 101 })).length, 101);
    await assert.rejects(
      sandbox.readFile("work/big", { maxBytes: 100 }),
      (error) =>
        error instanceof SandboxQuotaError && error.code === "quota" &&
        error.message === "Cannot read file work/big: it holds more than 100 bytes (options.maxBytes); raise options.maxBytes (up to 1 GiB) or export it with exportTree after stop()",
    );
    await assert.rejects(
      sandbox.writeFile("work/q", new Uint8Array(11), { quota: { bytes: 10 } }),
      (error) => error instanceof SandboxQuotaError && error.message === "Cannot write file: entry 'work/q' (11 bytes) would exceed the quota of 10 bytes (0 already admitted)",
    );
    await assert.rejects(sandbox.readFile("/etc/passwd"), configuration("Cannot read file: path must be relative (not start with /)"));
    await assert.rejects(sandbox.writeFile("work/../x", "x"), configuration("Cannot write file: path must not contain a '..' segment"));
    await assert.rejects(sandbox.writeFile("work/m", "x", { mode: 0o10000 }), configuration("Cannot write file: options.mode must be an integer from 0 to 0o7777 (permission bits)"));
    await assert.rejects(sandbox.readFile("work/big", { maxBytes: 2 ** 30 + 1 }), configuration("Cannot read file: options.maxBytes must be an integer from 0 to 1073741824 bytes"));
    await assert.rejects(sandbox.writeFile("work/late", "x", { deadlineAt: Date.now() - 1 }), (error) => error instanceof SandboxDeadlineError && error.code === "deadline");
    await assert.rejects(sandbox.readFile("work/big", { signal: AbortSignal.abort(new Error("no")) }), (error) => error instanceof SandboxAbortedError && error.code === "aborted");
    // A symlink to a FIFO is refused as well (the reader never opens a FIFO it was not given).
    await sandbox.run("/bin/sh", ["-c", "rm fifo && mkfifo fifo && ln -s fifo fifolink"]);
    await assert.rejects(sandbox.readFile("work/fifolink"), configuration("it is not a regular file in the guest"));
    assert.equal((await sandbox.run("/bin/sh", ["-c", "ls"])).stdoutText, "big\ndir\nfifo\nfifolink\n", "no write left a temporary file");
    await sandbox.stop();
    await assert.rejects(sandbox.readFile("work/big"), (error) => error instanceof SandboxStoppedError && error.code === "stopped");
    await assert.rejects(sandbox.writeFile("work/big", "x"), (error) => error instanceof SandboxStoppedError);
  });
});

/**
 * An image whose only tools are the host's dash as `/bin/sh` and `sleep` (with the C library
 * they link against): what a sandbox needs to run, without cat, head or wc.
 */
async function bareImage(engine: DockerEngine): Promise<string> {
  const files: [string, string][] = [
    ["bin/sh", "/usr/bin/dash"],
    ["bin/sleep", "/usr/bin/sleep"],
    ["lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"],
    ["lib64/ld-linux-x86-64.so.2", await realpath("/lib64/ld-linux-x86-64.so.2")],
  ];
  const directories = ["bin", "lib", "lib/x86_64-linux-gnu", "lib64", "etc", "home", "home/sandbox", "workspace", "proc", "sys", "dev", "tmp"];
  const mtime = Math.floor(Date.now() / 1000);
  const entries = [
    ...directories.map((path) => ({ path, type: "directory" as const, mode: path === "tmp" ? 0o1777 : 0o755, mtime, size: 0 })),
    ...await Promise.all(files.map(async ([path, source]) => {
      const data = new Uint8Array(await readFile(source));
      return { path, type: "file" as const, mode: 0o755, mtime, size: data.length, body: new Blob([data]).stream() };
    })),
  ];
  const params = new URLSearchParams({ fromSrc: "-" });
  for (const env of ["HOME=/home/sandbox", "TMPDIR=/tmp", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]) params.append("changes", `ENV ${env}`);
  const archive = new Uint8Array(await new Response(writeTar(entries)).arrayBuffer());
  const created = await engine.stream("POST", `/images/create?${params}`, { body: archive, contentType: "application/x-tar" });
  const reply = await new Response(created.body).text();
  assert.equal(created.status, 200, reply);
  const id = /"status":"(sha256:[0-9a-f]{64})"/.exec(reply)?.[1];
  assert.ok(id, reply);
  return id;
}

engineTest("DockerSandbox writeFile and readFile on an image without cat, head and wc fail with SandboxUnsupportedError naming the tool", async (engine) => {
  const image = await bareImage(engine);
  try {
    await withSandbox(engine, async (sandbox) => {
      await assert.rejects(
        sandbox.writeFile("work/a", "x"),
        (error) =>
          error instanceof SandboxUnsupportedError && error.code === "unsupported" &&
          error.message === "Cannot write file work/a: the image has no cat on PATH; writeFile needs /bin/sh with cat, chmod, mkdir, mv, rm and wc (busybox provides them)",
      );
      await assert.rejects(
        sandbox.readFile("work/a"),
        (error) =>
          error instanceof SandboxUnsupportedError &&
          error.message === "Cannot read file work/a: the image has no head on PATH; readFile needs /bin/sh with head (busybox provides them)",
      );
      // Processes run all the same (the wrapper and the kill need only /bin/sh and /proc).
      const result = await sandbox.run("/bin/sh", ["-c", "echo from dash"]);
      assert.equal(result.stdoutText, "from dash\n");
      const sleeper = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
      await sleeper.kill();
      assert.deepEqual(await sleeper.exit, { kind: "killed", reason: "requested", code: 137 });
    }, { image });
  } finally {
    await engine.request("DELETE", `/images/${image}`, { query: { force: true }, expect: [200], schema: z.unknown() });
  }
});

/**
 * `call`'s outcome, or a failure naming `what` when it is still pending after `boundMs`: a
 * bound far above any machine's need that turns a hang into a failure (no timing is asserted).
 */
async function settledWithin<T>(what: string, call: Promise<T>, boundMs = 60_000): Promise<PromiseSettledResult<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} was still pending after ${boundMs} ms (it hangs)`)), boundMs);
  });
  try {
    return await Promise.race([Promise.allSettled([call]).then(([outcome]) => outcome), pending]);
  } finally {
    clearTimeout(timer);
  }
}

engineTest("DockerSandbox readFile of a path the guest keeps swapping between a file and a FIFO never hangs: 300 calls read the file or refuse a non-regular file", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // mv is atomic: the path is always either the whole file or a FIFO no one writes to.
    const swapper = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "echo content > f.tmp; mv f.tmp p; echo started; while :; do echo content > f.tmp; mv f.tmp p; mkfifo q.tmp; mv q.tmp p; done"],
    }).start();
    try {
      // From here on the path always exists (the reads start after the first mv).
      await readUntil(swapper.stdout, (seen) => seen.includes("started\n"));
      const seen = { file: 0, refused: 0 };
      for (let round = 0; round < 30; round++) {
        const calls = Array.from({ length: 10 }, (_, n) => settledWithin(`readFile #${round * 10 + n}`, sandbox.readFile("work/p")));
        for (const outcome of await Promise.all(calls)) {
          if (outcome.status === "fulfilled") {
            assert.equal(decoder.decode(outcome.value), "content\n");
            seen.file += 1;
          } else {
            const error = outcome.reason;
            assert.ok(
              error instanceof SandboxConfigurationError && error.message === "Cannot read file work/p: it is not a regular file in the guest",
              `neither the file nor the refusal of a FIFO: ${error}`,
            );
            seen.refused += 1;
          }
        }
      }
      assert.equal(seen.file + seen.refused, 300);
    } finally {
      await swapper.kill();
    }
  });
}, { timeout: 600_000 });

engineTest("DockerSandbox writeFile and readFile without deadlineAt end at policy.deadlines.guestFileMs, naming the option; their slots are free again", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withSandbox(engine, async (sandbox) => {
    await sandbox.writeFile("work/a", "a\n");
    // Every exec start is held at the proxy: the call blocks with no deadline of its own.
    let release!: () => void;
    const held = proxy.inject({
      method: "POST",
      path: /^\/exec\/[0-9a-f]{64}\/start$/,
      occurrence: "every",
      fault: { kind: "delay", until: new Promise<void>((resolve) => (release = resolve)) },
    });
    const deadline = (action: string) => (outcome: PromiseSettledResult<unknown>) => {
      assert.equal(outcome.status, "rejected", `${action} did not fail`);
      const error = (outcome as PromiseRejectedResult).reason;
      assert.ok(error instanceof SandboxDeadlineError && error.code === "deadline", String(error));
      assert.equal(
        error.message,
        `Cannot ${action}: it did not finish within 2000 ms (policy.deadlines.guestFileMs, which applies when options.deadlineAt is not set); ` +
          "pass options.deadlineAt or raise policy.deadlines.guestFileMs",
      );
    };
    // Three calls on two slots: each ends at its default deadline and gives its slot back.
    deadline("read file")(await settledWithin("readFile", sandbox.readFile("work/a")));
    deadline("write file")(await settledWithin("writeFile", sandbox.writeFile("work/b", "b\n")));
    deadline("read file")(await settledWithin("readFile", sandbox.readFile("work/a")));
    held.remove();
    release();
    // The held starts reached the Engine all the same (only their answers were held): each
    // such command is found by its mark and ended, and only then gives its slot back. A
    // caller's own deadline still wins over the default.
    const read = await eventually("the slots given back", () =>
      sandbox.readFile("work/a", { deadlineAt: Date.now() + 60_000 }).catch((error) => {
        if (error instanceof SandboxQuotaError) return undefined;
        throw error;
      }));
    assert.equal(decoder.decode(read), "a\n");
    await eventually("both slots given back", () =>
      Promise.all([sandbox.readFile("work/a"), sandbox.writeFile("work/b", "b\n")]).then(() => true, (error) => {
        if (error instanceof SandboxQuotaError) return undefined;
        throw error;
      }));
  }, { via: proxy.endpoint, policy: { ...testPolicy, maxConcurrentProcesses: 2, deadlines: { guestFileMs: 2_000 } } });
});

/**
 * A guest process that keeps sending SIGSTOP to every other process of the sandbox user
 * (`kill -1`; the keeper and its guards run as another uid) and prints, whenever it changes,
 * how many exec leaders (parent 0 in the guest) are stopped, with shell builtins only: every
 * writer and reader started meanwhile stays in flight until compute goes away.
 */
const STOPPER = 'o=; while :; do kill -STOP -1 2>/dev/null; n=0; for d in /proc/[0-9]*; do read -r l 2>/dev/null < "$d/stat" || continue; ' +
  'set -f; set -- ${l##*) }; set +f; [ "$1 $2" = "T 0" ] && n=$((n + 1)); done; [ "$n" = "$o" ] || { echo "$n"; o=$n; }; done';

for (const way of ["the keeper is removed through the Engine API", "stop() is called"] as const) {
  engineTest(`DockerSandbox writeFile and readFile in flight when ${way} reject with the stop cause, all 24`, async (engine) => {
    await withSandbox(engine, async (sandbox) => {
      await sandbox.writeFile("work/big", bytes(8 * 1024 * 1024, 3));
      const stopper = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", STOPPER] }).start();
      let stopped = 0;
      const counting = (async () => {
        let seen = "";
        for await (const chunk of stopper.stdout) {
          seen += decoder.decode(chunk);
          const lines = seen.split("\n");
          if (lines.length > 1) stopped = Number(lines.at(-2));
        }
      })().catch(() => {});
      const data = new Blob([bytes(8 * 1024 * 1024, 4).slice().buffer]);
      let settled = 0;
      const calls = Array.from({ length: 24 }, (_, n) => {
        const call: Promise<unknown> = n % 2 === 0 ? sandbox.readFile("work/big") : sandbox.writeFile(`work/w${n}`, data);
        return settledWithin(`call #${n}`, call.finally(() => void (settled += 1)));
      });
      await eventually("all 24 helpers to be held in the guest", () => stopped + settled >= 24 ? true : undefined);
      if (way === "stop() is called") await sandbox.stop();
      else assert.equal(await removeContainer(engine, sandbox.resources.keeperId), true);
      const outcomes = await Promise.all(calls);
      const rejected = outcomes.filter((outcome) => outcome.status === "rejected").map((outcome) => (outcome as PromiseRejectedResult).reason);
      for (const error of rejected) {
        assert.ok(error instanceof SandboxStoppedError && error.code === "stopped", `not the stop cause: ${error}`);
        assert.equal(error, sandbox.stopCause, "the sandbox's own stop cause");
      }
      assert.equal(rejected.length, 24, "every call was in flight");
      assert.equal(sandbox.state, "stopped");
      await counting;
    }, { policy: { ...testPolicy, resources: { ...testPolicy.resources, pids: 1024 }, maxConcurrentProcesses: 32 } });
  }, { timeout: 300_000 });
}

engineTest("DockerSandbox writeFile and readFile cut by an Engine connection fault reject with a real message and a cause; the file keeps its old bytes", async (engine) => {
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  await withSandbox(engine, async (sandbox) => {
    await sandbox.writeFile("work/target", "old\n");
    await sandbox.writeFile("work/big", bytes(8 * 1024 * 1024, 6));
    const engineFault = (action: string) => (error: unknown) => {
      assert.ok(error instanceof SandboxEngineError && error.code === "engine", String(error));
      assert.match(error.message, new RegExp(`^Cannot ${action} work/(target|big): `));
      assert.doesNotMatch(error.message, /undefined/);
      assert.ok(error.cause !== undefined, `no cause: ${error.message}`);
      return true;
    };
    const execStart = { method: "POST", path: /^\/exec\/[0-9a-f]{64}\/start$/ } as const;
    // The writer's connection is cut after 1 MiB of its 8 MiB went out.
    const cutWrite = proxy.inject({ ...execStart, fault: { kind: "cut", afterRequestBytes: 1024 * 1024 } });
    await assert.rejects(sandbox.writeFile("work/target", bytes(8 * 1024 * 1024, 7)), engineFault("write file"));
    await cutWrite.applied;
    // The reader's connection is cut after 100,000 bytes of its output came back.
    const cutRead = proxy.inject({ ...execStart, fault: { kind: "cut", afterBodyBytes: 100_000 } });
    await assert.rejects(sandbox.readFile("work/big"), engineFault("read file"));
    await cutRead.applied;
    assert.equal(sandbox.state, "running");
    assert.equal(decoder.decode(await sandbox.readFile("work/target")), "old\n");
  }, { via: proxy.endpoint });
});
