// A daemon that started with IPv4 forwarding off (the state of a just-booted host): a private
// engine in a network namespace of its own with net.ipv4.ip_forward 0, never the lane's engine.
import assert from "node:assert/strict";
import { SandboxUnsupportedError } from "../../lib/sandbox/errors.ts";
import { engineTest } from "./_engine.ts";
import { withPrivateEngine } from "./_private_engine.ts";
import { assertGone, assertNamesAbsent, recordingPort, testPolicy, text, withBackend } from "./_sandbox.ts";

const FIX = "turn IPv4 forwarding on where the daemon runs (sysctl -w net.ipv4.ip_forward=1, and net.ipv4.ip_forward=1 in /etc/sysctl.d/ to keep it after a reboot), then restart the daemon: it reads the setting only when it starts";

engineTest("DockerSandbox on a daemon started with IPv4 forwarding off: outbound and allowlist refused before any create, naming the fix; isolated runs", async () => {
  await withPrivateEngine({ forwardingOff: true }, async ({ engine, endpoint, busyboxImage }) => {
    const info = await engine.info();
    assert.equal(info.IPv4Forwarding, false);
    await withBackend(async (backend) => {
      for (const [network, named] of [["outbound", 'policy.network "outbound"'], [{ kind: "allowlist", hosts: ["example.com"] }, "a policy.network allowlist"]] as const) {
        const port = recordingPort();
        const reservation = backend.reserve({ policy: { ...testPolicy, network } }, port);
        await assert.rejects(reservation.start(), (error) => {
          assert.ok(error instanceof SandboxUnsupportedError, String(error));
          assert.equal(error.code, "unsupported");
          assert.equal(
            error.message,
            `Cannot start sandbox: ${named} needs a bridge network, and the Docker daemon started with IPv4 forwarding off (GET /info IPv4Forwarding: false), so networking would not work: ${FIX}; network "isolated" needs no forwarding`,
          );
          return true;
        });
        // Refused before anything: no record, no resource by any of its names.
        assert.deepEqual(port.records, []);
        await assertNamesAbsent(engine, reservation.names);
      }
      const sandbox = await backend.reserve({ policy: testPolicy }, recordingPort()).start();
      try {
        const guest = await sandbox.reserveProcess({ executable: "/bin/echo", args: ["isolated works"] }).start();
        await guest.stdin.close();
        assert.equal(await text(guest.stdout), "isolated works\n");
        assert.deepEqual(await guest.exit, { kind: "exited", code: 0 });
      } finally {
        await sandbox.destroy();
        await assertGone(engine, sandbox);
      }
    }, busyboxImage, endpoint, [], busyboxImage);
  });
}, { timeout: 300_000 });
