// Processes on a terminal, driven as a person drives one: busybox programs through the PTY,
// the screen asserted through a headless terminal emulator of the same size.
import assert from "node:assert/strict";
import { SandboxConfigurationError, SandboxOutputLimitError, SandboxStateError } from "../../lib/sandbox/errors.ts";
import type { SandboxProcess } from "../../lib/sandbox/process.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { engineTest, eventually } from "./_engine.ts";
import { text, withSandbox } from "./_sandbox.ts";
import { Screen } from "./_screen.ts";

const encoder = new TextEncoder();
const PROMPT = "tty-prompt$ ";

/** A keyboard on `process`'s stdin: each call is one write, as a keystroke would be. */
function keyboard(process: SandboxProcess): (keys: string) => Promise<void> {
  const writer = process.stdin.getWriter();
  return (keys) => writer.write(encoder.encode(keys));
}

/** An interactive busybox shell on a `columns` × `rows` terminal, its screen, its keyboard. */
async function shell(sandbox: DockerSandbox, columns: number, rows: number) {
  const process = await sandbox.reserveProcess({
    executable: "/bin/sh",
    args: ["-i"],
    env: { PS1: PROMPT },
    tty: { columns, rows },
  }).start();
  const screen = new Screen(columns, rows).feed(process.stdout);
  await screen.waitForText(PROMPT.trim());
  return { process, screen, type: keyboard(process) };
}

/** How many visible lines start with the prompt. */
function prompts(lines: string[]): number {
  return lines.filter((line) => line.startsWith(PROMPT.trim())).length;
}

engineTest("DockerSandbox tty: stty size reports the terminal's size before and after resize; stderr is empty", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const { process, screen, type } = await shell(sandbox, 80, 24);
    assert.equal(await text(process.stderr), "");
    await type("stty size; echo TERM=$TERM\r");
    await screen.waitForText("24 80");
    await screen.waitForText("TERM=xterm-256color");
    await process.resize({ columns: 100, rows: 30 });
    screen.resize(100, 30);
    await type("stty size\r");
    await screen.waitForText("30 100");
    await type("exit\r");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    await screen.ended;
  });
});

engineTest("DockerSandbox tty: Ctrl-P and Ctrl-Q reach the guest at once (the Engine's detach keys do not take them)", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({
      executable: "/bin/sh",
      // One byte at a time, each shown as cat -v shows it (cat's own output waits for a newline).
      args: ["-c", 'stty raw -echo && echo ready && while IFS= read -r -n 1 key; do printf %s "$key" | cat -v; done'],
      tty: { columns: 40, rows: 5 },
    }).start();
    const screen = new Screen(40, 5).feed(process.stdout);
    const type = keyboard(process);
    await screen.waitForText("ready");
    // Each key alone, nothing after it: a key held back as a possible detach would not show.
    await type("\x10");
    await screen.waitForText("^P");
    await type("\x11");
    await screen.waitForText("^P^Q");
    await type("\x10\x11x");
    await screen.waitForText("^P^Q^P^Qx");
    await process.kill();
    assert.deepEqual(await process.exit, { kind: "killed", reason: "requested", code: 137 });
  });
});

engineTest("DockerSandbox tty: vi opens a file, Ctrl-P typed in insert mode reaches it, :wq writes it", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await sandbox.writeFile("work/note.txt", "alpha\nbeta\n");
    const process = await sandbox.reserveProcess({
      executable: "/bin/vi",
      args: ["/workspace/work/note.txt"],
      tty: { columns: 60, rows: 12 },
    }).start();
    const screen = new Screen(60, 12).feed(process.stdout);
    const type = keyboard(process);
    await screen.waitFor("vi showing the file", (lines) => lines[0] === "alpha" && lines[1] === "beta");
    await type("G");
    await type("o");
    await type("gamma");
    await screen.waitFor("the new line", (lines) => lines[2] === "gamma");
    // Ctrl-P alone, nothing after it: vi inserts it as a character and shows it as ^P.
    await type("\x10");
    await screen.waitFor("Ctrl-P in the new line", (lines) => lines[2] === "gamma^P");
    await type("\x1b");
    // vi waits briefly after Esc for the rest of a key sequence: the next key waits for the mode.
    await screen.waitFor("vi back in command mode", (lines) => lines.at(-1)!.startsWith("- "));
    await type("gg");
    await type("dd");
    await screen.waitFor("the first line deleted", (lines) => lines[0] === "beta");
    await type(":wq\r");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    await screen.ended;
    assert.equal(new TextDecoder().decode(await sandbox.readFile("work/note.txt")), "beta\ngamma\x10\n");
  });
});

engineTest("DockerSandbox tty: Ctrl-C stops sleep 100 and the shell prompt returns", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const { process, screen, type } = await shell(sandbox, 80, 24);
    await type("sleep 100\r");
    const sleeping = async () => (await sandbox.run("/bin/sh", ["-c", "ps -o args | grep -qx 'sleep 100'"])).exit.code === 0;
    await eventually("sleep running", async () => await sleeping() ? true : undefined);
    const before = prompts(await screen.lines());
    await type("\x03");
    await screen.waitFor("the prompt after Ctrl-C", (lines) => prompts(lines) > before);
    assert.equal(await sleeping(), false);
    await type("echo back-$((40 + 2))\r");
    await screen.waitForText("back-42");
    await type("exit\r");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox tty: a 10 MiB cat through the terminal arrives whole within a 1 MiB output bound while read", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const size = 10 * 1024 * 1024;
    const line = "abcdefghijklmnopqrstuvwxyz012345678\n"; // 36 bytes
    const made = await sandbox.run("/bin/sh", ["-c", `yes ${line.trim()} | head -c ${size} > /workspace/work/big.txt`]);
    assert.deepEqual(made.exit, { kind: "exited", code: 0 });
    const process = await sandbox.reserveProcess({
      executable: "/bin/cat",
      args: ["/workspace/work/big.txt"],
      tty: { columns: 80, rows: 10 },
      maxBufferedOutputBytes: 1024 * 1024,
    }).start();
    const screen = new Screen(80, 10).feed(process.stdout);
    await screen.ended;
    // The terminal turns each "\n" into "\r\n" (onlcr).
    const newlines = Math.floor(size / line.length);
    assert.equal(screen.bytes, size + newlines);
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    const lines = await screen.lines();
    const tail = line.slice(0, size % line.length);
    assert.equal(lines.filter((row) => row !== "").at(-1), tail);
    assert.equal(sandbox.state, "running");
  });
}, { timeout: 300_000 });

engineTest("DockerSandbox tty: output past the bound while nobody reads ends only that process", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const { process: sibling, screen, type } = await shell(sandbox, 80, 24);
    const flood = await sandbox.reserveProcess({
      executable: "/bin/cat",
      args: ["/dev/zero"],
      tty: { columns: 80, rows: 24 },
      maxBufferedOutputBytes: 1024 * 1024,
    }).start();
    // The kill's 137, or the 126 the Engine reports for a TTY exec whose connection it saw
    // break first (the fault drops the connection; the kill ends the process either way).
    const receipt = await flood.exit;
    assert.ok(receipt.kind === "killed" && receipt.reason === "output_limit" && [126, 137].includes(receipt.code), JSON.stringify(receipt));
    await eventually("the flood gone from the guest", async () =>
      (await sandbox.run("/bin/sh", ["-c", "ps -o args | grep -qx 'cat /dev/zero'"])).exit.code === 1 ? true : undefined);
    await assert.rejects(text(flood.stdout), (error) => error instanceof SandboxOutputLimitError && error.code === "output_limit");
    assert.equal(sandbox.state, "running");
    await type("echo sibling-$((6 * 7))\r");
    await screen.waitForText("sibling-42");
    await type("exit\r");
    assert.deepEqual(await sibling.exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox tty: resize of a finished process or one without a terminal is invalid_state; a bad size is refused", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const done = await sandbox.reserveProcess({ executable: "/bin/true", tty: { columns: 80, rows: 24 } }).start();
    await text(done.stdout);
    assert.deepEqual(await done.exit, { kind: "exited", code: 0 });
    await assert.rejects(
      done.resize({ columns: 100, rows: 30 }),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message === "Cannot resize process: it has exited; resize a process only while it runs",
    );
    const piped = await sandbox.reserveProcess({ executable: "/bin/cat" }).start();
    await assert.rejects(
      piped.resize({ columns: 100, rows: 30 }),
      (error) =>
        error instanceof SandboxStateError && error.code === "invalid_state" &&
        error.message === "Cannot resize process: it was started without a terminal; reserve it with tty: { columns, rows }",
    );
    await assert.rejects(
      piped.resize({ columns: 0, rows: 30 }),
      (error) => error instanceof SandboxConfigurationError && error.code === "configuration" && /size\.columns must be an integer from 1 to 65535/.test(error.message),
    );
    await piped.stdin.close();
    assert.deepEqual(await piped.exit, { kind: "exited", code: 0 });
  });
});

engineTest("DockerSandbox tty: closing stdin keeps the terminal's output flowing until the process exits", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({
      executable: "/bin/sh",
      args: ["-c", "read line; sleep 1; echo got-$line"],
      tty: { columns: 40, rows: 5 },
    }).start();
    const screen = new Screen(40, 5).feed(process.stdout);
    const writer = process.stdin.getWriter();
    await writer.write(encoder.encode("abc\r"));
    // The Engine ends a terminal's whole attach when its input ends: close must not end it.
    await writer.close();
    await screen.waitForText("got-abc");
    assert.deepEqual(await process.exit, { kind: "exited", code: 0 });
    await screen.ended;
  });
});
