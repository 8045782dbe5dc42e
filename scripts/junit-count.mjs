// Count the test cases of one JUnit XML report: prints "passed failed skipped" on stdout and,
// with a second argument, writes the name and first message line of each failed case to that
// file (one per line) so the suite's summary — the part of a CI log that is always kept —
// names what failed. Deno (--junit-path), Bun (--reporter=junit) and Node
// (--test-reporter=junit) all write JUnit, so one counter reads all three. A missing or empty
// report counts as nothing run.
// Hand-written because it needs only <testcase> elements and their direct
// <failure>/<error>/<skipped> children, and it runs before any dependency is installed.
import { readFileSync, writeFileSync } from "node:fs";

let xml = "";
try {
  xml = readFileSync(process.argv[2], "utf8");
} catch {
  // no report: nothing ran
}
const unescape = (s) =>
  s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n))).replace(/&amp;/g, "&");
let passed = 0, failed = 0, skipped = 0;
const names = [];
// Attribute values may hold a bare ">" (Node writes name="a &lt;b> c"), so an element's
// attributes are read as quoted strings or other characters.
const ATTRIBUTES = String.raw`((?:[^>"]|"[^"]*")*?)`;
const testcase = new RegExp(String.raw`<testcase\b${ATTRIBUTES}(\/>|>([\s\S]*?)<\/testcase>)`, "g");
const failureElement = new RegExp(String.raw`<(failure|error)\b${ATTRIBUTES}(\/>|>([\s\S]*?)<\/\1>)`);
for (const match of xml.matchAll(testcase)) {
  const inner = match[3] ?? "";
  const failure = failureElement.exec(inner);
  if (failure) {
    failed++;
    const name = unescape(/\bname="([^"]*)"/.exec(match[1])?.[1] ?? "(unnamed)");
    const message = unescape(/\bmessage="([^"]*)"/.exec(failure[2])?.[1] ?? failure[4] ?? "")
      .split("\n").map((line) => line.trim()).find((line) => line !== "") ?? "";
    names.push(`${name}${message ? ` — ${message.slice(0, 300)}` : ""}`);
  } else if (/<skipped\b/.test(inner)) skipped++;
  else passed++;
}
if (process.argv[3]) writeFileSync(process.argv[3], names.map((n) => `${n}\n`).join(""));
console.log(`${passed} ${failed} ${skipped}`);
