// A real browser through a port forward: Debian's headless Chromium (provisioned by
// scripts/test-browser.sh, AGENTCELL_TEST_BROWSER) loads the forwarded URL of busybox httpd
// in an isolated sandbox, runs the page's script, and its DOM (`--dump-dom`) shows the page.
// Also: a recovery after the controller died with a relay removes the relay.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import process from "node:process";
import type { SandboxForwardEvent } from "../../lib/sandbox/ports.ts";
import { engineTest, nodeImage } from "./_engine.ts";
import { startHttpd, withPortSandbox } from "./_ports.ts";
import { assertNothingLeft, onlyRecord, runChild, withWorld } from "./_recovery.ts";

const PAGE = `<!doctype html><html><head><title>agent preview</title></head><body><h1 id="title">served from the sandbox</h1>
<script>document.getElementById("title").textContent += " and scripted";</script></body></html>`;

function browser(): string {
  const path = process.env.AGENTCELL_TEST_BROWSER;
  if (!path) throw new Error("Cannot run the browser test: AGENTCELL_TEST_BROWSER is not set (scripts/test.sh sets it from scripts/test-browser.sh)");
  return path;
}

function dumpDom(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // As root Chromium needs --no-sandbox; nothing else of the host is shared with the page.
    execFile(browser(), ["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url], { timeout: 90_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`chromium failed: ${error.message}: ${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

engineTest("DockerSandbox.forwardPort: headless Chromium loads the forwarded page of busybox httpd in an isolated sandbox", async (engine) => {
  await withPortSandbox(engine, async (sandbox) => {
    await sandbox.run("/bin/mkdir", ["-p", "www"]);
    await sandbox.writeFile("work/www/index.html", PAGE);
    await startHttpd(sandbox, 8080);
    await using forward = await sandbox.forwardPort(8080, { maxConnections: 8 });
    const dom = await dumpDom(forward.url);
    assert.match(dom, /<h1 id="title">served from the sandbox and scripted<\/h1>/);
    assert.match(dom, /<title>agent preview<\/title>/);
    await forward.close();
    const events: SandboxForwardEvent[] = [];
    for await (const event of forward.events) events.push(event);
    assert.ok(events.some((event) => event.event === "opened"), "the browser's connection was opened");
    assert.ok(events.every((event) => event.event !== "refused"), JSON.stringify(events));
  });
}, { timeout: 180_000 });

engineTest("DockerSandboxBackend.recover after the host died with a relay open removes the relay with everything else", async (engine) => {
  await withWorld(async (world) => {
    await runChild(world, "connected", { resources: { cpus: 0.5, memoryBytes: 128 * 1024 * 1024, pids: 64 } }, { AGENTCELL_CHILD_PROXY_IMAGE: nodeImage });
    const record = await onlyRecord(world.store);
    assert.equal(record.resources.relay?.state, "created", "the relay was recorded before the crash");
    const relay = await engine.request("GET", `/containers/${record.resources.relay!.id}/json`);
    assert.equal(relay.status, 200, "the relay outlived its controller");
    const recovery = await world.backend.recover(record, world.store);
    const report = await recovery.cleanup();
    assert.equal(report.complete, true);
    await assertNothingLeft(engine, record);
    await assert.rejects(engine.request("GET", `/containers/${record.resources.relay!.id}/json`), (error: unknown) => (error as { code?: string }).code === "not_found");
  }, undefined, nodeImage);
});
