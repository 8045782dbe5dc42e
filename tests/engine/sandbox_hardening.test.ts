import assert from "node:assert/strict";
import { inspectContainer } from "../../lib/engine/containers.ts";
import type { DockerEngine } from "../../lib/engine/client.ts";
import type { DockerSandbox } from "../../lib/docker/sandbox.ts";
import { engineTest, eventually, nodeImage } from "./_engine.ts";
import { testPolicy, text, withSandbox } from "./_sandbox.ts";

/** The socket buffer caps (lib/docker/keeper/socket_buffers.ts) as sent, and as the kernel prints them. */
const SOCKET_SYSCTLS = { "net.ipv4.tcp_rmem": "4096 131072 1048576", "net.ipv4.tcp_wmem": "4096 16384 1048576" };

/** The keeper's socket buffer caps hold: read back from the Engine and from inside the guest. */
async function assertSocketBufferCaps(engine: DockerEngine, sandbox: DockerSandbox): Promise<void> {
  assert.deepEqual((await inspectContainer(engine, sandbox.resources.keeperId)).HostConfig.Sysctls, SOCKET_SYSCTLS);
  const inside = await sandbox.run("/bin/sh", ["-c", "cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem"]);
  assert.equal(inside.stdoutText, "4096\t131072\t1048576\n4096\t16384\t1048576\n");
}

// Everything here is observed from inside the guest by the sandbox's own process.
const probe = [
  "if touch /rootfs-write 2>/dev/null; then echo root=writable; else echo root=readonly; fi",
  "echo id=$(id -u):$(id -g)",
  "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | tr -d '\\t ' ",
  "echo net=$(ls /sys/class/net | tr '\\n' ' ')",
  "echo pids=$(ls /proc | grep -E '^[0-9]+$' | wc -l)",
  "echo pid1=$(cat /proc/1/cmdline | tr '\\0' ' ')",
  "touch \"$HOME/h\" && echo home=writable",
  "touch \"$TMPDIR/t\" && echo tmp=writable",
  "touch /workspace/work/w && echo work=writable",
  "echo cwd=$(pwd)",
  "echo env=$(env | grep -E '^(HOME|TMPDIR|PATH|EXTRA)=' | sort | tr '\\n' ' ')",
].join("; ");

engineTest("DockerSandbox hardening holds inside the guest (isolated), socket buffers capped", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", probe], env: { EXTRA: "literal value" } }).start();
    await process.stdin.close();
    const [out, err, exit] = await Promise.all([text(process.stdout), text(process.stderr), process.exit]);
    assert.equal(err, "");
    assert.deepEqual(exit, { kind: "exited", code: 0 });
    const lines = Object.fromEntries(out.trim().split("\n").map((line) => {
      const at = line.indexOf(line.includes("=") ? "=" : ":");
      return [line.slice(0, at), line.slice(at + 1).trim()];
    }));
    assert.equal(lines.root, "readonly");
    assert.equal(lines.id, "65534:65534");
    assert.equal(lines.CapEff, "0000000000000000");
    assert.equal(lines.NoNewPrivs, "1");
    assert.equal(lines.net, "lo");
    // keeper shell, its sleep, this shell and the few probes it forks: nothing from the host
    assert.ok(Number(lines.pids) <= 8, `guest sees ${lines.pids} processes`);
    assert.match(lines.pid1, /^\/bin\/sh -c trap/);
    assert.equal(lines.home, "writable");
    assert.equal(lines.tmp, "writable");
    assert.equal(lines.work, "writable");
    assert.equal(lines.cwd, "/workspace/work");
    assert.equal(
      lines.env,
      "EXTRA=literal value HOME=/home/sandbox PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp",
    );
    // Loopback sockets of network "none" are host kernel memory too: capped per socket.
    await assertSocketBufferCaps(engine, sandbox);
  });
});

engineTest("DockerSandbox outbound network adds exactly one interface besides lo, socket buffers capped", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    assert.ok(sandbox.resources.networkId);
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", "ls /sys/class/net | sort | tr '\\n' ' '"] }).start();
    await process.stdin.close();
    const [out, exit] = await Promise.all([text(process.stdout), process.exit]);
    assert.deepEqual(exit, { kind: "exited", code: 0 });
    assert.equal(out, "eth0 lo ");
    await assertSocketBufferCaps(engine, sandbox);
  }, { policy: { resources: { cpus: 0.5, memoryBytes: 64 * 1024 * 1024, pids: 32 }, network: "outbound" } });
});

/**
 * Guest program: a loopback peer that never reads, fed until Node's socket reports
 * backpressure; after a second to settle, prints the bytes the kernel queues on every TCP
 * socket of the namespace (`/proc/net/tcp` `tx_queue` + `rx_queue`).
 */
const UNREAD_PEER = String.raw`
const net = require("node:net");
const fs = require("node:fs");
const server = net.createServer((socket) => socket.pause());
server.listen(0, "127.0.0.1", () => {
  const client = net.connect(server.address().port, "127.0.0.1", () => {
    const chunk = Buffer.alloc(1 << 16, 1);
    while (client.write(chunk));
    setTimeout(() => {
      let queued = 0;
      for (const line of fs.readFileSync("/proc/net/tcp", "utf8").trim().split("\n").slice(1)) {
        for (const hex of line.trim().split(/\s+/)[4].split(":")) queued += parseInt(hex, 16);
      }
      console.log(queued);
      process.exit(0);
    }, 1000);
  });
});
`;

engineTest("DockerSandbox socket buffers: a loopback peer that never reads pins at most the caps (1 MiB each way), not the host's 4 MiB send maximum", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    const result = await sandbox.run("/usr/local/bin/node", ["-e", UNREAD_PEER]);
    assert.equal(result.exit.code, 0, result.stderrText);
    const queued = Number(result.stdoutText.trim());
    // The sender's send buffer (≤ 1 MiB) plus the receiver's receive buffer (≤ 1 MiB): measured
    // 1,032,128 bytes here, 3,845,120 with the host's own tcp_wmem maximum of 4 MiB.
    assert.ok(queued > 64 * 1024 && queued <= 2 * 1024 * 1024, `the kernel queues ${queued} bytes`);
  }, { image: nodeImage, policy: { resources: { cpus: 0.5, memoryBytes: 128 * 1024 * 1024, pids: 32 } } });
});

engineTest("DockerSandbox reaps orphaned descendants (no zombies)", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // Five orphans (their parent subshell exits at once) each leave a mark and exit. Once
    // every mark is there they have all exited (events), so any of them not reaped by the
    // keeper would stay a zombie; the guest waits (bounded) for the zombies to go.
    const script = [
      "for i in 1 2 3 4 5; do (sh -c \"touch /tmp/orphan-$i\" &); done",
      "n=0; while [ $(ls /tmp | grep -c '^orphan-') -lt 5 ] && [ $n -lt 300 ]; do n=$((n + 1)); sleep 0.1; done",
      "echo marks $(ls /tmp | grep -c '^orphan-')",
      "n=0; while ps -o stat,comm | grep -q '^Z' && [ $n -lt 300 ]; do n=$((n + 1)); sleep 0.1; done",
      "echo zombies $(ps -o stat,comm | grep -c '^Z')",
    ].join("\n");
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
    await process.stdin.close();
    const [out, exit] = await Promise.all([text(process.stdout), process.exit]);
    assert.deepEqual(exit, { kind: "exited", code: 0 });
    assert.equal(out, "marks 5\nzombies 0\n");
  });
});

engineTest("DockerSandbox keeper and guards run as their own uid: the agent cannot signal, ptrace, or open their memory, descriptors or OOM score", async (engine) => {
  await withSandbox(engine, async (sandbox) => {
    // The lease and the guest deadline are execs of their own: wait until both have left
    // `runc init` (the event), so the probe below sees their own command lines.
    await eventually("the lease and the guest deadline running", async () => {
      // Only other uids' command lines: this probe's own contains the words it looks for.
      const listed = await sandbox.run("/bin/sh", [
        "-c",
        "me=$(id -u); for p in /proc/[0-9]*; do [ \"$(stat -c %u $p)\" = \"$me\" ] || tr '\\0' ' ' < $p/cmdline; echo; done",
      ]);
      const seen = new TextDecoder().decode(listed.stdout);
      return seen.includes("while read -r") && seen.includes("sleep") ? true : undefined;
    });
    // For every process that is not the agent's own uid, try what a hostile agent would.
    const script = [
      "me=$(id -u)",
      "for p in /proc/[0-9]*; do n=${p#/proc/}; u=$(stat -c %u $p); [ \"$u\" = \"$me\" ] && continue",
      "  printf '%s uid=%s' \"$(tr '\\0' ' ' < $p/cmdline | cut -c1-48)\" \"$u\"",
      "  kill -0 $n 2>/dev/null && printf ' signal=yes' || printf ' signal=no'",
      "  kill -STOP $n 2>/dev/null && printf ' stop=yes' || printf ' stop=no'",
      "  ls $p/fd >/dev/null 2>&1 && printf ' fd=yes' || printf ' fd=no'",
      "  head -c 1 $p/mem >/dev/null 2>&1 && printf ' mem=yes' || printf ' mem=no'",
      "  (echo 1000 > $p/oom_score_adj) 2>/dev/null && printf ' oom=yes\\n' || printf ' oom=no\\n'",
      "done",
    ].join("\n");
    const process = await sandbox.reserveProcess({ executable: "/bin/sh", args: ["-c", script] }).start();
    await process.stdin.close();
    const [out, exit] = await Promise.all([text(process.stdout), process.exit]);
    assert.deepEqual(exit, { kind: "exited", code: 0 });
    const lines = out.trim().split("\n");
    assert.ok(lines.some((line) => line.startsWith("/bin/sh -c trap")), `the keeper is listed: ${out}`);
    assert.ok(lines.some((line) => line.includes("while read -r")), `the lease is listed: ${out}`);
    assert.ok(lines.some((line) => line.includes("sleep")), `the guest deadline is listed: ${out}`);
    for (const line of lines) {
      assert.match(line, / uid=65533 signal=no stop=no fd=no mem=no oom=no$/, line);
    }
  }, { policy: { ...testPolicy, controllerLoss: "stop", execution: { kind: "deadline", timeoutMs: 600_000 } } });
});
