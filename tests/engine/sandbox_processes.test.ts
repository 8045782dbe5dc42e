// Many processes in one sandbox on a real engine: concurrency and its bound, what ends one
// process and what ends them all, kill(), killDescendantsOnExit, imports between processes,
// and the guards staying one per sandbox.
import assert from "node:assert/strict";
import {
  SandboxAbandonedOutputError,
  SandboxEngineError,
  SandboxOutputLimitError,
  SandboxQuotaError,
  SandboxStateError,
  SandboxStoppedError,
} from "../../lib/sandbox/errors.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { endpoint, engineTest, eventually } from "./_engine.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { bytes } from "./_files.ts";
import { assertGone, readUntil, recordingPort, testPolicy, text, withBackend, withSandbox } from "./_sandbox.ts";

const encoder = new TextEncoder();

/** The rest of a stream already read from (`new Response` refuses a disturbed stream). */
async function rest(stream: ReadableStream<Uint8Array>): Promise<string> {
  let seen = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream) seen += decoder.decode(chunk, { stream: true });
  return seen;
}

/** Live guest processes whose command line is exactly `line` (counted by a process of its own). */
async function countProcesses(sandbox: DockerSandbox, line: string): Promise<number> {
  const script = `for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -cxF "$0" || true`;
  const result = await sandbox.run("/bin/sh", ["-c", script, `${line} `]);
  return Number(result.stdoutText.trim());
}

engineTest("DockerSandbox runs 8 concurrent processes, each with its own exact binary stdout and stderr", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const inputs = Array.from({ length: 8 }, (_, i) => bytes(256 * 1024 + i * 4099, i + 1));
    // Each process copies its stdin to stdout and to stderr (tee), so both streams carry the
    // same bytes, interleaved on one connection per process and eight connections at once.
    const processes = await Promise.all(inputs.map(() =>
      sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "tee /dev/stderr"] }).start()
    ));
    const outcomes = await Promise.all(processes.map(async (process, i) => {
      const writing = (async () => {
        const writer = process.stdin.getWriter();
        for (let offset = 0; offset < inputs[i].length; offset += 10_000) await writer.write(inputs[i].subarray(offset, offset + 10_000));
        await writer.close();
      })();
      const [out, err, exit] = await Promise.all([
        new Response(process.stdout).arrayBuffer(),
        new Response(process.stderr).arrayBuffer(),
        process.exit,
        writing,
      ]);
      return { out: new Uint8Array(out), err: new Uint8Array(err), exit };
    }));
    outcomes.forEach(({ out, err, exit }, i) => {
      assert.deepEqual(exit, { kind: "exited", code: 0 }, `process ${i}`);
      assert.deepEqual(out, inputs[i], `stdout of process ${i}`);
      assert.deepEqual(err, inputs[i], `stderr of process ${i}`);
    });
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox maxConcurrentProcesses refuses the next start with SandboxQuotaError; guards are not counted", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const message = "Cannot start process: 2 processes already run in this sandbox (policy.maxConcurrentProcesses 2); " +
      "wait for one to exit, or raise policy.maxConcurrentProcesses (up to 1024)";
    // The lease and the guest deadline run as execs too; two processes still start.
    const first = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    const second = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    const refused = (error: unknown) => error instanceof SandboxQuotaError && error.code === "quota" && error.message === message;
    await assert.rejects(sandbox.reserveProcess({ executable: "/bin/true" }).start(), refused);
    await assert.rejects(sandbox.run("/bin/true"), refused);
    await assert.rejects(
      sandbox.writeFile("work/x", "x"),
      (error) => error instanceof SandboxQuotaError && error.message === message.replace("start process", "write file"),
    );
    await first.kill();
    assert.deepEqual(await first.exit, { kind: "killed", reason: "requested", code: 137 });
    // The slot is free once the receipt was observed.
    assert.deepEqual((await sandbox.run("/bin/echo", ["third"])).stdoutText, "third\n");
    await second.kill();
    assert.deepEqual(await second.exit, { kind: "killed", reason: "requested", code: 137 });
    assert.equal(sandbox.state, "running");
  }, { policy: { ...testPolicy, maxConcurrentProcesses: 2, controllerLoss: "stop", execution: { kind: "deadline", timeoutMs: 600_000 } } });
});

engineTest("DockerSandbox one process's output overflow ends only itself; a sibling keeps running and finishes exactly", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const sibling = await sandbox.reserveProcess({ executable: "/bin/cat" }).start();
    const flood = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "exec cat /dev/zero"], maxBufferedOutputBytes: 1024 * 1024 }).start();
    const reader = flood.stdout.getReader();
    assert.equal((await reader.read()).done, false);
    // stop reading: the flood's staging bound trips and ends the flood
    assert.deepEqual(await flood.exit, { kind: "killed", reason: "output_limit", code: 137 });
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) break;
    }, (error) => error instanceof SandboxOutputLimitError && error.code === "output_limit");
    assert.equal(sandbox.state, "running");
    assert.equal(sandbox.stopCause, undefined);
    const input = bytes(300_000, 7);
    const writer = sibling.stdin.getWriter();
    await writer.write(input);
    await writer.close();
    const [out, exit] = await Promise.all([new Response(sibling.stdout).arrayBuffer(), sibling.exit]);
    assert.deepEqual(new Uint8Array(out), input);
    assert.deepEqual(exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox an abandoned output reader ends only that process", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "while :; do echo tick; sleep 0.05; done"] }).start();
    await process.stderr.cancel("not interested");
    assert.deepEqual(await process.exit, { kind: "killed", reason: "abandoned_output", code: 137 });
    await assert.rejects(text(process.stdout), (error) => error instanceof SandboxAbandonedOutputError);
    assert.equal(sandbox.state, "running");
    assert.equal((await sandbox.run("/bin/echo", ["still here"])).stdoutText, "still here\n");
  });
});

engineTest("DockerSandbox a process's timeoutMs kills it and its descendants, not the sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "sleep 6001 & sleep 6002 & echo started; wait"],
      timeoutMs: 1_000,
    }).start();
    await process.stdin.close();
    assert.equal(await readUntil(process.stdout, (seen) => seen.includes("started\n")), "started\n");
    assert.deepEqual(await process.exit, { kind: "killed", reason: "timeout", code: 137 });
    assert.equal(await rest(process.stdout), "", "the streams end normally after the kill");
    assert.equal(sandbox.state, "running");
    await eventually("the descendants to be gone", async () =>
      (await countProcesses(sandbox, "sleep 6001")) + (await countProcesses(sandbox, "sleep 6002")) === 0 ? true : undefined);
  });
});

engineTest("DockerSandbox a process is its exec's leader, marked for the kill; killDescendantsOnExit keeps its wrapper as the leader", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // ppid 0: the parent lies outside the guest's PID namespace (runc), so no wrapper shell
    // stands between the exec and the command. `ulimit -x` prints the mark the kill looks for.
    const report = 'read -r l < /proc/$$/stat; set -- ${l##*) }; echo "pid $$ ppid $2 pgrp $3 mark $(ulimit -x)"';
    const plain = /^pid (\d+) ppid (\d+) pgrp (\d+) mark (\S+)$/.exec((await sandbox.run("/bin/sh", ["-c", report])).stdoutText.trim());
    assert.ok(plain, "the guest's report");
    assert.equal(plain[2], "0", "the command is the exec's leader");
    assert.equal(plain[3], plain[1], "and leads its process group");
    assert.match(plain[4], /^\d{15}$/, "its soft RLIMIT_LOCKS is the 15-digit mark");
    const kept = /^pid (\d+) ppid (\d+) pgrp (\d+) mark (\S+)$/.exec(
      (await sandbox.run("/bin/sh", ["-c", report], { killDescendantsOnExit: true })).stdoutText.trim(),
    );
    assert.ok(kept, "the guest's report");
    assert.notEqual(kept[2], "0", "the wrapper is the command's parent");
    assert.equal(kept[3], kept[2], "and leads the process group");
    assert.equal(kept[4], "unlimited", "the forking wrapper is found by its name instead");
  });
});

engineTest("DockerSandbox a descendant that leaves the process group (setsid) escapes the per-process kill; stop() still ends it", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "setsid sleep 6005 & sleep 6006 & wait"] }).start();
    // busybox setsid calls setsid() before it execs sleep: a "sleep 6005" command line is
    // already in a session of its own.
    await eventually("both children to run", async () =>
      (await countProcesses(sandbox, "sleep 6005")) === 1 && (await countProcesses(sandbox, "sleep 6006")) === 1 ? true : undefined);
    await process.kill();
    assert.deepEqual(await process.exit, { kind: "killed", reason: "requested", code: 137 });
    await eventually("the group's child to be gone", async () => (await countProcesses(sandbox, "sleep 6006")) === 0 ? true : undefined);
    assert.equal(await countProcesses(sandbox, "sleep 6005"), 1, "the child that left the group escaped the kill");
    assert.equal(sandbox.state, "running");
    await sandbox.stop();
    // stop() removes the keeper container, and with it every guest process, the escaped one too.
    await assert.rejects(
      engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`),
      (error: unknown) => error instanceof Error && "code" in error && error.code === "not_found",
    );
  });
});

/** A leader that raised its RLIMIT_LOCKS soft limit back to unlimited: its kill finds no mark. */
const UNMARKED = ["-c", "ulimit -S -x unlimited; echo unmarked; exec sleep 600"];

/** Starts an {@linkcode UNMARKED} process and kills it: the sandbox stops; returns the stop cause. */
async function killUnmarked(sandbox: DockerSandbox): Promise<SandboxEngineError> {
  const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: UNMARKED }).start();
  assert.equal(await readUntil(process.stdout, (seen) => seen.includes("unmarked\n")), "unmarked\n");
  await process.kill();
  assert.equal(sandbox.state, "stopped");
  assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
  const cause = sandbox.stopCause;
  assert.ok(cause instanceof SandboxEngineError && cause.code === "engine", String(cause));
  return cause;
}

engineTest("DockerSandbox a leader that removes its mark makes its kill miss, so the sandbox stops instead", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.match(
      (await killUnmarked(sandbox)).message,
      /^Cannot end process: its leader still runs but no exec leader in the guest carries its mark \d{15} \(did it change its RLIMIT_LOCKS or rename itself\?\), so the sandbox was stopped to end it \(requested\)$/,
    );
  });
});

engineTest("DockerSandbox a kill exec the Engine reports as not started is retried 8 times, then the sandbox stops", async (engine) => {
  // A real Engine fails to start an exec only now and then (a fork bomb holding every PID):
  // the proxy makes each kill exec's receipt say 126, the code of an exec the runtime could
  // not start. The leader removed its mark, so the real kill finds nothing and ends nothing.
  await using proxy = await startFaultProxy({ upstream: endpoint! });
  let rewritten = 0;
  proxy.inject({
    method: "GET",
    path: /^\/exec\/[0-9a-f]{64}\/json$/,
    occurrence: "every",
    fault: {
      kind: "rewrite",
      body: (text) => {
        const reply = JSON.parse(text) as { ExitCode: number | null };
        if (!text.includes("Max file locks") || reply.ExitCode === null) return text;
        rewritten += 1;
        return JSON.stringify({ ...reply, ExitCode: 126 });
      },
    },
  });
  await withBackend(async (backend) => {
    const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
    try {
      assert.equal(
        (await killUnmarked(sandbox)).message,
        "Cannot end process: the kill inside the guest did not run (the Engine reported its exec with code 126 8 times), so the sandbox was stopped to end it (requested)",
      );
      assert.equal(rewritten, 8, "one kill exec per attempt");
    } finally {
      await sandbox.destroy();
      await assertGone(engine, sandbox);
    }
  }, undefined, proxy.endpoint);
});

engineTest("DockerSandbox killDescendantsOnExit ends a command's background children when it exits; without it they live on", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const kept = await sandbox.run("/bin/sh", ["-c", "sleep 6003 & exit 4"]);
    assert.deepEqual(kept.exit, { kind: "exited", code: 4 });
    assert.equal(await countProcesses(sandbox, "sleep 6003"), 1, "without the option the child lives until stop()");
    const ended = await sandbox.run("/bin/sh", ["-c", "sleep 6004 & sleep 6004 & exit 5"], { killDescendantsOnExit: true });
    assert.deepEqual(ended.exit, { kind: "exited", code: 5 }, "the receipt is the command's own exit");
    await eventually("the children to be gone", async () => (await countProcesses(sandbox, "sleep 6004")) === 0 ? true : undefined);
    assert.equal(await countProcesses(sandbox, "sleep 6003"), 1, "another command's children are not touched");
  });
});

engineTest("DockerSandbox kill() ends one process with reason requested; the sandbox runs on", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    await process.kill();
    assert.deepEqual(await process.exit, { kind: "killed", reason: "requested", code: 137 });
    // After the exit, kill() ends nothing and the receipt never changes.
    await process.kill();
    assert.deepEqual(await process.exit, { kind: "killed", reason: "requested", code: 137 });
    // A kill right after the start (the Engine answers the start before the process exists)
    // and a deadline of 1 ms still end their processes.
    const early = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    await early.kill();
    assert.deepEqual(await early.exit, { kind: "killed", reason: "requested", code: 137 });
    const quick = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"], timeoutMs: 1 }).start();
    assert.deepEqual(await quick.exit, { kind: "killed", reason: "timeout", code: 137 });
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox stop() with 3 processes running gives each the unavailable receipt", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const processes = await Promise.all([1, 2, 3].map((i) =>
      sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", `echo up ${i}; exec sleep 600`] }).start()
    ));
    for (const [i, process] of processes.entries()) await readUntil(process.stdout, (seen) => seen === `up ${i + 1}\n`);
    await sandbox.stop();
    for (const process of processes) {
      assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
      const outcome = await rest(process.stdout).catch((error) => error);
      assert.ok(outcome instanceof SandboxStoppedError || outcome === "", `stdout ended with ${outcome}`);
    }
    await assert.rejects(sandbox.run("/bin/true"), (error) => error instanceof SandboxStoppedError && error.code === "stopped");
  });
});

engineTest("DockerSandbox imports run between processes: refused while one runs, and a start is refused while one imports", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.equal((await sandbox.run("/bin/echo", ["before"])).stdoutText, "before\n");
    const file = encoder.encode("imported\n");
    await sandbox.importTree([{ path: "in.txt", type: "file", mode: 0o644, size: file.length, body: new Blob([file]).stream() }]);
    assert.equal((await sandbox.run("/bin/cat", ["in.txt"])).stdoutText, "imported\n");
    const running = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    await assert.rejects(
      sandbox.importTree([]),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message === "Cannot import files: 1 process runs; imports run between processes (wait for their exit receipts), or use writeFile while they run",
    );
    await running.kill();
    await running.exit;
    // A start while an import streams is refused.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await held;
        controller.enqueue(file);
        controller.close();
      },
    });
    const importing = sandbox.importTree([{ path: "slow.txt", type: "file", mode: 0o644, size: file.length, body }]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    await assert.rejects(
      sandbox.run("/bin/true"),
      (error) =>
        error instanceof SandboxStateError &&
        error.message === "Cannot start process: an import is running; start processes once importTree settled",
    );
    release();
    assert.deepEqual(await importing, { files: 1, bytes: file.length });
    assert.equal((await sandbox.run("/bin/cat", ["slow.txt"])).stdoutText, "imported\n");
  });
});

engineTest("DockerSandbox keeps one execution-deadline guard however many processes start", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // The guard is `/bin/sh -c "sleep <s>; kill -TERM 1"`: one per sandbox. (The Engine
    // answers an exec start before the process exists, so the first count may come early.)
    const guards = async () => {
      const script = `n=0; for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); case "$c" in "/bin/sh -c sleep "*"; kill -TERM 1 ") n=$((n + 1));; esac; done; echo $n`;
      return Number((await sandbox.run("/bin/sh", ["-c", script])).stdoutText);
    };
    const processes = await Promise.all([1, 2, 3].map(() => sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start()));
    await eventually("the guard to run", async () => (await guards()) > 0 ? true : undefined);
    processes.push(...await Promise.all([4, 5].map(() => sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start())));
    assert.equal(await guards(), 1);
    for (const process of processes) await process.kill();
    assert.equal(sandbox.state, "running");
  }, { policy: { ...testPolicy, execution: { kind: "deadline", timeoutMs: 600_000 } } });
});

engineTest("DockerSandbox stdin of a process that exited without reading it fails at once with SandboxStateError", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/true" }).start();
    const writer = process.stdin.getWriter();
    // More than the socket buffers hold: the write can finish only by failing.
    const writing = writer.write(new Uint8Array(4 * 1024 * 1024));
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    await assert.rejects(writing, (error) => error instanceof SandboxStateError || (error as { code?: string }).code === "engine");
    await assert.rejects(
      writer.write(new Uint8Array(1)),
      (error) => error instanceof SandboxStateError && error.code === "invalid_state" && error.message === "Cannot write stdin: the process has exited",
    );
  });
});
