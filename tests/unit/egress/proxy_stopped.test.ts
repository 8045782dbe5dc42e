// The stop cause of a proxy that stopped on its own, without an engine: OOM-killed, killed
// by a signal, exited, and an end whose state could not be read each say so, keeping the
// `SandboxStoppedError` class and its `stopped` code (the engine test kills a real proxy).
import assert from "node:assert/strict";
import { test } from "node:test";
import { proxyStoppedError } from "../../../lib/docker/egress/proxy_stopped.ts";
import { SandboxStoppedError } from "../../../lib/sandbox/errors.ts";

test("proxyStoppedError names an OOM kill, a signal, an exit code and an unreadable state", () => {
  const cases: [Parameters<typeof proxyStoppedError>[0], string][] = [
    [{ exitCode: 137, oomKilled: true }, "Cannot continue: the egress proxy container stopped on its own (it was OOM-killed at its 128 MiB memory limit, exit code 137: killed by signal 9 (SIGKILL); lower network.maxConnections to hold fewer busy tunnels), so the sandbox was stopped"],
    [{ exitCode: 137, oomKilled: false }, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 137: killed by signal 9 (SIGKILL)), so the sandbox was stopped"],
    [{ exitCode: 143, oomKilled: false }, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 143: killed by signal 15 (SIGTERM)), so the sandbox was stopped"],
    [{ exitCode: 162, oomKilled: false }, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 162: killed by signal 34), so the sandbox was stopped"],
    [{ exitCode: 1, oomKilled: false }, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 1), so the sandbox was stopped"],
    [{ exitCode: 255, oomKilled: false }, "Cannot continue: the egress proxy container stopped on its own (not OOM-killed, exit code 255), so the sandbox was stopped"],
    [{ exitCode: 137, oomKilled: undefined }, "Cannot continue: the egress proxy container stopped on its own (exit code 137: killed by signal 9 (SIGKILL); whether it was OOM-killed is unknown: its state could not be read), so the sandbox was stopped"],
  ];
  for (const [end, message] of cases) {
    const error = proxyStoppedError(end);
    assert.ok(error instanceof SandboxStoppedError);
    assert.equal(error.code, "stopped");
    assert.equal(error.message, message);
  }
});
