import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxEngineError, SandboxStateError, SandboxStoppedError } from "../../lib/sandbox/errors.ts";
import { runOutputOf } from "../../lib/sandbox/run.ts";
import { engineTest, eventually } from "./_engine.ts";
import { readUntil, testPolicy, text, withSandbox } from "./_sandbox.ts";

const encoder = new TextEncoder();

engineTest("DockerSandbox process stdin half-close: the guest sees EOF and later output arrives", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "cat; echo after-eof; echo err-after-eof >&2"],
    }).start();
    const writer = process.stdin.getWriter();
    await writer.write(encoder.encode("first line\n"));
    await writer.write(encoder.encode("second line\n"));
    await writer.close();
    const [out, err, exit] = await Promise.all([text(process.stdout), text(process.stderr), process.exit]);
    assert.equal(out, "first line\nsecond line\nafter-eof\n");
    assert.equal(err, "err-after-eof\n");
    assert.deepEqual(exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox process carries binary bytes both ways exactly", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const input = new Uint8Array(3 * 1024 * 1024 + 17);
    for (let i = 0; i < input.length; i++) input[i] = (i * 2654435761) >>> 24;
    const process = await sandbox.reserveProcess({ executable: "/bin/cat", maxBufferedOutputBytes: 8 * 1024 * 1024 }).start();
    const writing = (async () => {
      const writer = process.stdin.getWriter();
      for (let offset = 0; offset < input.length; offset += 100_000) await writer.write(input.subarray(offset, offset + 100_000));
      await writer.close();
    })();
    const out = new Uint8Array(await new Response(process.stdout).arrayBuffer());
    await writing;
    assert.equal(out.length, input.length);
    assert.ok(out.every((byte, i) => byte === input[i]), "bytes differ");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
  });
});

for (const [script, code] of [["exit 0", 0], ["exit 1", 1], ["kill -9 $$", 137]] as const) {
  engineTest(`DockerSandbox exit receipt reports code ${code}`, async (engine) => {
    await withSandbox(engine, async (sandbox) => {
      const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
      await process.stdin.close();
      await Promise.all([text(process.stdout), text(process.stderr)]);
      assert.deepEqual(await process.exit, { kind: "exited", code });
      assert.equal(sandbox.state, "running");
    });
  });
}

engineTest("DockerSandbox exit receipt is unavailable after stop() during a run; stop keeps the volume", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sleep", args: ["600"] }).start();
    const stdout = text(process.stdout).catch((error) => error);
    await sandbox.stop();
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
    const outcome = await stdout;
    assert.ok(outcome instanceof SandboxStoppedError || outcome === "", `stdout ended with ${outcome}`);
    assert.equal(sandbox.state, "stopped");
    assert.ok(sandbox.stopCause instanceof SandboxStoppedError);
    // the volume is still there until destroy
    await engine.request("GET", `/volumes/${sandbox.resources.volumeName}`);
    await assert.rejects(engine.request("GET", `/containers/${sandbox.resources.keeperId}/json`));
    // an observed receipt never changes
    assert.deepEqual(await process.exit, { kind: "unavailable", reason: "sandbox_stopped" });
  });
});

engineTest("DockerSandbox (processes \"one\") reserveProcess rejects a conflicting fixed variable and a second process", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.throws(
      () => sandbox.reserveProcess({ executable: "/bin/true", env: { HOME: "/root" } }),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /HOME/.test(error.message),
    );
    assert.throws(
      () => sandbox.reserveProcess({ executable: "bin/true" }),
      (error) => error instanceof SandboxConfigurationError && /executable/.test(error.message),
    );
    const reservation = sandbox.reserveProcess({ executable: "/bin/true", env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" } });
    assert.throws(
      () => sandbox.reserveProcess({ executable: "/bin/true" }),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message ===
          'Cannot reserve process: this sandbox already reserved its one process (policy.processes "one"); run several commands from that one process (say /bin/sh -c "a; b"), start another sandbox, or leave policy.processes at its default "many"',
    );
    const process = await reservation.start();
    await process.stdin.close();
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
  }, { policy: { ...testPolicy, processes: "one" } });
});

engineTest("DockerSandbox process start on a paused keeper wraps the Engine's 409 as one chain", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const keeper = sandbox.resources.keeperId;
    await engine.request("POST", `/containers/${keeper}/pause`, { expect: [204] });
    try {
      await assert.rejects(sandbox.reserveProcess({ executable: "/bin/true" }).start(), (error) => {
        assert.ok(error instanceof SandboxEngineError && error.code === "engine" && error.status === 409, String(error));
        assert.match(error.message, /^Cannot start process: create exec: the Engine answered 409 \(.*paused.*\)$/);
        assert.equal(error.message.match(/Cannot/g)?.length, 1, error.message);
        return true;
      });
    } finally {
      await engine.request("POST", `/containers/${keeper}/unpause`, { expect: [204] });
    }
  });
});

engineTest("DockerSandbox exit receipt describes the leader while a descendant still runs", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "sleep 600 & echo leader-done; exit 3"] }).start();
    await process.stdin.close();
    const reader = process.stdout.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), "leader-done\n");
    assert.deepEqual(await process.exit, { kind: "exited", code: 3 });
    assert.equal(sandbox.state, "running", "descendants live until stop()");
    await sandbox.stop();
    // The Engine may end the attach stream once the leader exited (then it is done), or the
    // stop ends it (then it errors with the stop cause).
    const after = await reader.read().then((result) => result, (error) => error);
    assert.ok(after instanceof SandboxStoppedError || after.done === true, `stdout after stop: ${after}`);
    assert.deepEqual(await process.exit, { kind: "exited", code: 3 }, "an observed receipt never changes");
  });
});

engineTest("DockerSandbox a process's timeout and kill() also end the descendants that left its process group with setsid", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    /** The guest's `sleep 100000N` processes still alive (the Engine's own list: a zombie's command is not its arguments). */
    const left = async () => (await sandbox.processes()).filter((row) => /^sleep 100000\d$/u.test(row.command)).map((row) => row.command);
    const gone = () => eventually("the escaped descendants to be gone", async () => (await left()).length === 0 ? true : undefined);
    // Before the kill, the escaped ones run in sessions of their own (the group kill would miss them).
    const escaped = "setsid sh -c 'sleep 1000001 & exec sleep 1000002' & setsid sleep 1000003 & echo started; exec sleep 1000000";
    const timed = await sandbox.run("/bin/sh", ["-c", escaped], { timeoutMs: 3000 }).then(
      () => assert.fail("the command outlived its timeout"),
      (error) => runOutputOf(error),
    );
    assert.deepEqual(timed?.exit, { kind: "killed", reason: "timeout", code: 137 });
    assert.equal(new TextDecoder().decode(timed?.stdout), "started\n");
    await gone();

    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "setsid sleep 1000004 & sleep 0.2; echo ready; exec sleep 1000005"] }).start();
    await process.stdin.close();
    await readUntil(process.stdout, (seen) => seen.includes("ready\n"));
    assert.deepEqual((await left()).sort(), ["sleep 1000004", "sleep 1000005"], "the escaped one runs beside its leader");
    await process.kill();
    assert.deepEqual(await process.exit, { kind: "killed", reason: "requested", code: 137 });
    await gone();
    assert.equal(sandbox.state, "running", "only the process's own were ended");
  });
}, { timeout: 180_000 });

engineTest("DockerSandbox a timeout whose leader dropped its mark to another exec's leader stops the sandbox, not the other exec alone", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // The forger: another exec leader that takes the mark the timed one publishes (any
    // process of the same user reads /proc/<pid>/limits and sets its own).
    const forger = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "while [ ! -s /workspace/work/mark ]; do sleep 0.05; done; ulimit -x $(cat /workspace/work/mark); echo forged; exec sleep 1000"],
    }).start();
    await forger.stdin.close();
    const dropsItsMark = "while read -r a b c s r; do [ \"$a $b $c\" = 'Max file locks' ] && echo $s > /workspace/work/mark.new; done < /proc/self/limits; " +
      "ulimit -x 7; mv /workspace/work/mark.new /workspace/work/mark; exec sleep 60";
    const outcome = await sandbox.run("/bin/sh", ["-c", dropsItsMark], { timeoutMs: 3000 }).then(
      (result) => assert.fail(`the command outlived its timeout: ${JSON.stringify(result.exit)}`),
      (error) => error,
    );
    assert.ok(outcome instanceof SandboxEngineError, String(outcome));
    assert.match(outcome.message, /^Cannot end process: its leader still runs but no exec leader in the guest carries its mark \d{15} .*\(timeout\)$/u);
    assert.equal(sandbox.state, "stopped", "the sandbox stopped to end the command");
    assert.deepEqual(await forger.exit, { kind: "exited", code: 137 }, "the forger was killed by the forged match");
  });
}, { timeout: 120_000 });

engineTest("DockerSandbox a timeout whose leader dropped its mark, with a descendant posing as an exec leader by a newline in its name, stops the sandbox", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // The descendant keeps the mark and names itself so that the first line of its stat reads
    // as an exec leader's (ppid 0, state S, even once it is a zombie nobody reaps).
    const poses = "( printf 'x) S 0 1 \\n' > /proc/self/comm; echo posing; while :; do sleep 1; done ) & sleep 0.3; ulimit -x 7; exec sleep 60";
    const outcome = await sandbox.run("/bin/sh", ["-c", poses], { timeoutMs: 3000 }).then(
      (result) => assert.fail(`the command outlived its timeout: ${JSON.stringify(result.exit)}`),
      (error) => error,
    );
    assert.ok(outcome instanceof SandboxEngineError, String(outcome));
    assert.match(outcome.message, /^Cannot end process: its leader still runs but no exec leader in the guest carries its mark \d{15} .*\(timeout\)$/u);
    assert.equal(sandbox.state, "stopped", "the sandbox stopped to end the command");
  });
}, { timeout: 120_000 });
