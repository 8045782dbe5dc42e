// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per source file and per
// function, top entries first. Usage: node bench/_cpuprofile_top.ts <file.cpuprofile> [top]
import { readFileSync } from "node:fs";
import process from "node:process";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const file = process.argv[2];
if (!file) throw new Error("Cannot summarise: pass a .cpuprofile path");
const top = Number(process.argv[3] ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const shortUrl = (url: string) => url.replace(/^file:\/\/.*?\/(lib|bench|node_modules)\//u, "$1/").replace(/^node:/u, "node:") || "(native/VM)";
const perFile = new Map<string, number>();
const perFunction = new Map<string, number>();
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id)!;
  const where = shortUrl(callFrame.url);
  perFile.set(where, (perFile.get(where) ?? 0) + us);
  const name = `${callFrame.functionName || "(anonymous)"} ${where}:${callFrame.lineNumber + 1}`;
  perFunction.set(name, (perFunction.get(name) ?? 0) + us);
}
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const names = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const { callFrame } = byId.get(at)!;
    const where = shortUrl(callFrame.url);
    if (where.startsWith("lib/") || where.startsWith("node_modules/") || where.startsWith("bench/")) {
      names.add(`${callFrame.functionName || "(anonymous)"} ${where}:${callFrame.lineNumber + 1}`);
    }
  }
  for (const name of names) inclusive.set(name, (inclusive.get(name) ?? 0) + us);
}
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(us / 1000).toFixed(0).padStart(7)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${key}`);
  }
};
console.log(`total sampled: ${(total / 1000).toFixed(0)} ms`);
print("self time by file", perFile);
print("self time by function", perFunction);
print("inclusive time by project/package function (synchronous stack only)", inclusive);
