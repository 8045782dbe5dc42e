// sandbox.run(), the short path, and lines() on a real engine: exact results over many
// calls, stdin, stderr routing, and the errors that carry what was captured.
import assert from "node:assert/strict";
import {
  SandboxAbortedError,
  SandboxConfigurationError,
  SandboxDeadlineError,
  SandboxOutputLimitError,
  SandboxStateError,
} from "../../lib/sandbox/errors.ts";
import { lines } from "../../lib/sandbox/lines.ts";
import { runOutputOf } from "../../lib/sandbox/run.ts";
import { engineTest } from "./_engine.ts";
import { bytes } from "./_files.ts";
import { testPolicy, withSandbox } from "./_sandbox.ts";

const decoder = new TextDecoder();

engineTest("DockerSandbox run() 100 times in a row in one sandbox, each result exact", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    for (let i = 0; i < 100; i++) {
      const result = await sandbox.run("/bin/sh", ["-c", 'printf "out %s" "$0"; printf "err %s" "$0" >&2; exit $(($0 % 7))', String(i)]);
      assert.deepEqual(result.exit, { kind: "exited", code: i % 7 }, `run ${i}`);
      assert.equal(result.stdoutText, `out ${i}`, `stdout of run ${i}`);
      assert.equal(result.stderrText, `err ${i}`, `stderr of run ${i}`);
    }
    assert.equal(sandbox.state, "running");
  });
}, { timeout: 300_000 });

engineTest("DockerSandbox run() feeds stdin as text, bytes, a Blob or a stream and half-closes it", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const data = new Uint8Array(bytes(200_000, 3));
    assert.equal((await sandbox.run("/bin/cat", [], { stdin: "text in\n" })).stdoutText, "text in\n");
    assert.deepEqual((await sandbox.run("/bin/cat", [], { stdin: data })).stdout, data);
    assert.deepEqual((await sandbox.run("/bin/cat", [], { stdin: new Blob([data]) })).stdout, data);
    assert.deepEqual((await sandbox.run("/bin/cat", [], { stdin: new Blob([data]).stream() })).stdout, data);
    // A command that exits without reading its input is not an error.
    assert.deepEqual((await sandbox.run("/bin/true", [], { stdin: new Uint8Array(1024 * 1024) })).exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox run() stderr \"discard\" and \"stdout\" route the guest's fd 2 and stop nothing", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const script = "echo one; echo two >&2; echo three";
    const discarded = await sandbox.run("/bin/sh", ["-c", script], { stderr: "discard" });
    assert.equal(discarded.stdoutText, "one\nthree\n");
    assert.equal(discarded.stderr.length, 0);
    const merged = await sandbox.run("/bin/sh", ["-c", script], { stderr: "stdout" });
    assert.equal(merged.stdoutText, "one\ntwo\nthree\n", "in the order the guest wrote");
    assert.equal(merged.stderr.length, 0);
    // A flood on a discarded stderr never trips the output bound.
    const flood = await sandbox.run("/bin/sh", ["-c", "head -c 20000000 /dev/zero >&2; echo done"], { stderr: "discard", maxOutputBytes: 1024 });
    assert.equal(flood.stdoutText, "done\n");
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox run() past maxOutputBytes kills the command and the error carries the first maxOutputBytes bytes", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const error = await sandbox.run("/bin/sh", ["-c", "echo start; exec cat /dev/zero"], { maxOutputBytes: 100_000 }).catch((error) => error);
    assert.ok(error instanceof SandboxOutputLimitError && error.code === "output_limit", String(error));
    assert.equal(
      error.message,
      "Cannot run /bin/sh: its stdout and stderr reached 100000 bytes (maxOutputBytes), so it was killed; " +
        "raise options.maxOutputBytes (up to 1 GiB), or read a large output as a stream from reserveProcess().start()",
    );
    const output = runOutputOf(error)!;
    assert.equal(output.stdout.length + output.stderr.length, 100_000);
    assert.equal(decoder.decode(output.stdout.subarray(0, 6)), "start\n");
    assert.ok(output.stdout.subarray(6).every((byte) => byte === 0));
    assert.deepEqual(output.exit, { kind: "killed", reason: "output_limit", code: 137 });
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox run() timeoutMs kills the command; the bytes read before it are on the error", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const error = await sandbox.run("/bin/sh", ["-c", "echo partial; echo also >&2; exec sleep 600"], { timeoutMs: 1_000 }).catch((error) => error);
    assert.ok(error instanceof SandboxDeadlineError && error.code === "deadline", String(error));
    assert.equal(error.message, "Cannot run /bin/sh: its timeoutMs of 1000 ms elapsed, so it was killed; raise options.timeoutMs if it needs longer");
    const output = runOutputOf(error)!;
    assert.equal(decoder.decode(output.stdout), "partial\n");
    assert.equal(decoder.decode(output.stderr), "also\n");
    assert.deepEqual(output.exit, { kind: "killed", reason: "timeout", code: 137 });
    assert.equal(sandbox.state, "running");
  });
});

engineTest("DockerSandbox run() signal kills the command; the error carries the output so far", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const controller = new AbortController();
    const running = sandbox.run("/bin/sh", ["-c", "echo ready; exec sleep 600"], { signal: controller.signal }).catch((error) => error);
    // The abort comes once the command has written (an event, not a moment).
    await sandbox.run("/bin/sh", ["-c", "n=0; until ps -o args | grep -q '^sleep 600'; do n=$((n + 1)); [ $n -gt 600 ] && exit 1; sleep 0.05; done"]);
    controller.abort(new Error("caller gave up"));
    const error = await running;
    assert.ok(error instanceof SandboxAbortedError && error.code === "aborted", String(error));
    assert.equal((error.cause as Error).message, "caller gave up");
    assert.equal(decoder.decode(runOutputOf(error)!.stdout), "ready\n");
    assert.deepEqual(runOutputOf(error)!.exit, { kind: "killed", reason: "aborted", code: 137 });
  });
});

engineTest("DockerSandbox run() names the argument it refuses", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const refused = (message: string) => (error: unknown) => error instanceof SandboxConfigurationError && error.code === "configuration" && error.message === message;
    await assert.rejects(sandbox.run("true"), refused("Cannot run process: executable must be absolute (start with /)"));
    await assert.rejects(sandbox.run("/bin/echo", ["a\0b"]), refused("Cannot run process: args.0 must be a string without NUL"));
    await assert.rejects(
      sandbox.run("/bin/true", [], { env: { HOME: "/root" } }),
      refused('Cannot run process: options.env.HOME must equal the fixed guest value "/home/sandbox"'),
    );
    await assert.rejects(
      sandbox.run("/bin/true", [], { maxOutputBytes: 2 ** 30 + 1 }),
      refused("Cannot run process: options.maxOutputBytes must be an integer from 0 to 1073741824 bytes"),
    );
    await assert.rejects(sandbox.run("/bin/true", [], { timeoutMs: 0 }), refused("Cannot run process: options.timeoutMs must be an integer from 1 to 9007199254740991 milliseconds"));
    await assert.rejects(sandbox.run("/bin/true", [], { shell: true } as never), refused("Cannot run process: options.shell is not a known field"));
  });
});

engineTest("DockerSandbox (processes \"one\") run() is the sandbox's one process", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.equal((await sandbox.run("/bin/echo", ["only"])).stdoutText, "only\n");
    await assert.rejects(sandbox.run("/bin/true"), (error) => error instanceof SandboxStateError && /already reserved its one process/.test(error.message));
  }, { policy: { ...testPolicy, processes: "one" } });
});

engineTest("lines() reads a process's stdout live, line by line", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "read go; for i in 1 2 3; do echo \"line $i\"; done; printf 'crlf\\r\\nlast'"] }).start();
    const seen: string[] = [];
    const writer = process.stdin.getWriter();
    const reading = (async () => {
      for await (const line of lines(process.stdout)) seen.push(line);
    })();
    await writer.write(new TextEncoder().encode("go\n"));
    await writer.close();
    await reading;
    assert.deepEqual(seen, ["line 1", "line 2", "line 3", "crlf", "last"]);
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox run() and processes start in cwd; a cwd outside the guest roots is refused, a missing one exits 127", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.equal((await sandbox.run("/bin/pwd")).stdoutText, "/workspace/work\n", "the default");
    assert.equal((await sandbox.run("/bin/mkdir", ["-p", "/workspace/work/sub dir"])).exit.code, 0);
    assert.equal((await sandbox.run("/bin/pwd", [], { cwd: "/workspace/work/sub dir" })).stdoutText, "/workspace/work/sub dir\n");
    assert.equal((await sandbox.run("/bin/sh", ["-c", "pwd; ls"], { cwd: "/workspace" })).stdoutText, "/workspace\nwork\n");
    const process = await sandbox.reserveProcess({ executable: "/bin/pwd", cwd: "/tmp" }).start();
    const [out] = await Promise.all([new Response(process.stdout).text(), process.stderr.pipeTo(new WritableStream())]);
    assert.equal(out, "/tmp\n");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });

    const outside = await sandbox.run("/bin/pwd", [], { cwd: "/etc" }).catch((error) => error);
    assert.ok(outside instanceof SandboxConfigurationError && outside.code === "configuration", String(outside));
    assert.match(outside.message, /^Cannot run process: options\.cwd "\/etc" must be \/workspace, \/home\/sandbox, \/tmp or a directory below one of them; /);
    assert.throws(() => sandbox.reserveProcess({ executable: "/bin/pwd", cwd: "/workspace/../etc" }), /^SandboxConfigurationError: Cannot reserve process: request\.cwd must not contain a '\.\.' segment$/);

    const missing = await sandbox.run("/bin/pwd", [], { cwd: "/workspace/work/missing" });
    assert.deepEqual(missing.exit, { kind: "exited", code: 127 });
    assert.match(missing.stdoutText, /chdir to cwd \("\/workspace\/work\/missing"\).*no such file or directory/);
    assert.equal(sandbox.state, "running");
  });
});
