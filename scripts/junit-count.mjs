// Count the test cases of one JUnit XML report: prints "passed failed skipped".
// Deno (--junit-path), Bun (--reporter=junit) and Node (--test-reporter=junit) all write
// JUnit, so one counter reads all three. A missing or empty report counts as nothing run.
// Hand-written because it needs only <testcase> elements and their direct
// <failure>/<error>/<skipped> children, and it runs before any dependency is installed.
import { readFileSync } from "node:fs";

let xml = "";
try {
  xml = readFileSync(process.argv[2], "utf8");
} catch {
  // no report: nothing ran
}
let passed = 0, failed = 0, skipped = 0;
const testcase = /<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
for (const match of xml.matchAll(testcase)) {
  const inner = match[2] ?? "";
  if (/<(failure|error)\b/.test(inner)) failed++;
  else if (/<skipped\b/.test(inner)) skipped++;
  else passed++;
}
console.log(`${passed} ${failed} ${skipped}`);
