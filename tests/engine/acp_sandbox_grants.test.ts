// fileSystem: "sandbox" and terminal: "sandbox" on a real engine: the agent's fs/* requests
// are served by the sandbox's guest files (confined to the workspace) and its terminal/*
// requests by sandbox processes (cwd, literal args, kill, bounded output, a bounded number
// held), never with host authority.
import assert from "node:assert/strict";
import { ACP_MAX_TERMINALS, ACP_TERMINAL_OUTPUT_MAX_BYTES, startAcpSession } from "../../lib/acp/mod.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { withSandbox } from "./_sandbox.ts";
import { acpPolicy, agentRequest, collect, exportedFile, importAgent, messageText } from "./_acp.ts";

engineTest('startAcpSession fileSystem "sandbox" and terminal "sandbox" serve fs/* and terminal/* inside the sandbox', async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    await importAgent(sandbox, { "notes.txt": "one\ntwo\nthree\nfour\n" });
    const maxMessageBytes = 2 * 1024 * 1024;
    const session = await startAcpSession(sandbox, agentRequest(), { fileSystem: "sandbox", terminal: "sandbox", maxMessageBytes });
    const ask = async (prompt: string): Promise<string> => {
      const turn = session.prompt(prompt);
      const text = messageText(await collect(turn.updates));
      assert.equal(await turn.stopReason, "end_turn", prompt);
      return text;
    };
    assert.deepEqual(JSON.parse(await ask("grants")).clientCapabilities, {
      fs: { readTextFile: true, writeTextFile: true },
      terminal: true,
      auth: { terminal: false },
    });

    // Files: absolute guest paths inside /workspace, through the guest.
    assert.equal(await ask("write /workspace/work/out/hello.txt hello from the agent"), "{}");
    assert.equal(await ask("read /workspace/work/out/hello.txt"), '{"content":"hello from the agent"}');
    assert.equal(await ask("lines /workspace/work/notes.txt 2 2"), '{"content":"two\\nthree\\n"}');
    assert.equal(
      await ask("read /etc/passwd"),
      'error -32602 Invalid params: Cannot read text file: path "/etc/passwd" must be inside /workspace (the sandbox\'s workspace); ' +
        "give an absolute guest path below /workspace/, such as /workspace/work/notes.txt",
    );
    assert.match(await ask("read /workspace/work/../../etc/passwd"), /^error -32602 Invalid params: Cannot read text file: path "\/workspace\/work\/\.\.\/\.\.\/etc\/passwd" must not contain a '\.\.' segment; /);
    assert.equal(await ask("read /workspace/work/missing.txt"), "error -32002 Resource not found: /workspace/work/missing.txt");
    assert.match(await ask("write /workspace/outside.txt x"), /^error -32602 Invalid params: Cannot write file outside\.txt: the guest refused it \(.*Permission denied\); the file is unchanged$/);

    // Terminals: sandbox processes, in the session's cwd unless told.
    const term = async (prompt: string) => JSON.parse(await ask(prompt));
    assert.deepEqual(await term("term - pwd; echo err >&2; exit 3"), {
      exit: { exitCode: 3, signal: null },
      output: { output: "/workspace/work\nerr\n", truncated: false, exitStatus: { exitCode: 3, signal: null } },
    });
    assert.equal((await term("term /tmp pwd")).output.output, "/tmp\n");
    assert.match(await ask("term /etc pwd"), /^error -32602 Invalid params: Cannot reserve process: request\.cwd "\/etc" must be \/workspace, \/home\/sandbox, \/tmp or a directory below one of them; /);
    assert.equal((await term("term-args printf %s| a b;c $HOME")).output.output, "a|b;c|$HOME|");
    assert.deepEqual((await term("term-kill exec sleep 600")).exit, { exitCode: null, signal: "SIGKILL" });
    assert.deepEqual((await term("term-limit 10 printf 0123456789abcdefghij")).output, {
      output: "abcdefghij",
      truncated: true,
      exitStatus: { exitCode: 0, signal: null },
    });
    // An outputByteLimit past the bridge's own is held to ACP_TERMINAL_OUTPUT_MAX_BYTES.
    const flood = (await term(`term-limit ${4 * ACP_TERMINAL_OUTPUT_MAX_BYTES} head -c ${ACP_TERMINAL_OUTPUT_MAX_BYTES + 100} /dev/zero | tr '\\0' a`)).output;
    assert.equal(flood.output, "a".repeat(ACP_TERMINAL_OUTPUT_MAX_BYTES));
    assert.equal(flood.truncated, true);
    // A file past maxMessageBytes is not read into the answer.
    assert.equal((await term(`term - head -c ${maxMessageBytes + 1} /dev/zero > big.bin`)).exit.exitCode, 0);
    assert.match(await ask("read /workspace/work/big.bin"), /^error -32603 Internal error: Cannot read file work\/big\.bin: .*2097152/);
    // Five bytes of "ééé" start inside a character: the cut is moved to the next one.
    assert.equal((await term("term-limit 5 printf ééé")).output.output, "éé");
    assert.equal(
      await ask(`term-hold ${ACP_MAX_TERMINALS + 1}`),
      `error -32603 Internal error: Cannot create terminal: ${ACP_MAX_TERMINALS} terminals are held (the most the bridge keeps); send terminal/release for one first`,
    );
    await session.close();
    assert.equal(new TextDecoder().decode(await exportedFile(sandbox, "work/out/hello.txt")), "hello from the agent");
  }, { image: nodeImage, policy: acpPolicy });
}, { timeout: 300_000 });
