// processesOf: the Engine's `top` reply made with TOP_PS_ARGS to rows; what ps would never
// write is refused; topReplyBytes bounds a reply of `pids` rows at their widest.
import assert from "node:assert/strict";
import { test } from "node:test";
import { processesOf, TOP_PS_ARGS, topReplyBytes } from "../../../lib/docker/processes.ts";
import { MAX_PROCESS_COMMAND_CHARS } from "../../../lib/sandbox/processes.ts";

const TITLES = ["PID", "PPID", "UID", "RSS", "ELAPSED", "COMMAND"];

test("processesOf reads each row, marks the keeper's uid as guard, cuts long commands, sorts by PID", () => {
  const long = "y".repeat(MAX_PROCESS_COMMAND_CHARS + 1);
  const rows = processesOf({
    Titles: TITLES,
    Processes: [["30", "20", "65534", "1384", "7", long], ["20", "10", "1001", "900", "9", "/bin/sleep 60"]],
  }, 1001);
  assert.deepEqual(rows, [
    { pid: 20, ppid: 10, uid: 1001, rssBytes: 900 * 1024, elapsedSeconds: 9, command: "/bin/sleep 60", commandCut: false, guard: true },
    { pid: 30, ppid: 20, uid: 65534, rssBytes: 1384 * 1024, elapsedSeconds: 7, command: long.slice(0, MAX_PROCESS_COMMAND_CHARS), commandCut: true, guard: false },
  ]);
  assert.deepEqual(processesOf({ Titles: TITLES, Processes: null }, 1001), []);
});

test("processesOf refuses other columns, short rows and cells that are not whole numbers", () => {
  assert.throws(() => processesOf({ Titles: ["UID", "PID"], Processes: [] }, 1), /the columns are UID, PID, not PID, PPID, UID, RSS, ELAPSED, COMMAND/);
  assert.throws(() => processesOf({ Titles: TITLES, Processes: [["1", "0"]] }, 1), /a row has 2 cells, not 6/);
  assert.throws(() => processesOf({ Titles: TITLES, Processes: [["1", "0", "0", "-5", "1", "x"]] }, 1), /RSS is "-5", not a whole number/);
  assert.throws(() => processesOf({ Processes: [] }, 1));
});

test("TOP_PS_ARGS bounds each line; topReplyBytes holds every row at that width", () => {
  assert.equal(TOP_PS_ARGS, `-o pid,ppid,uid,rss,etimes,args --cols ${MAX_PROCESS_COMMAND_CHARS + 100}`);
  const widest = JSON.stringify({ Titles: TITLES, Processes: Array.from({ length: 128 }, () => ["4194304", "4194304", "4294967294", "99999999", "99999999", "\"".repeat(MAX_PROCESS_COMMAND_CHARS + 60)]) });
  assert.ok(new TextEncoder().encode(widest).byteLength <= topReplyBytes(128), `${widest.length} > ${topReplyBytes(128)}`);
});
