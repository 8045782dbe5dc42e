// Doc examples of the public modules: `npm test` runs every one with `deno test --doc`
// (scripts/test.sh); the ones that cannot run there (they need a Docker Engine, a sandbox or
// one runtime) are `ts ignore` and say why on their first line.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

async function sources(directory: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) found.push(...await sources(path));
    else if (entry.name.endsWith(".ts")) found.push(path);
  }
  return found;
}

test("doc examples are runnable TypeScript, or ignored with a reason on their first line", async () => {
  const files = [join(root, "mod.ts"), ...await sources(join(root, "lib"))];
  let examples = 0;
  let ignored = 0;
  for (const file of files) {
    const lines = (await readFile(file, "utf8")).split("\n");
    lines.forEach((line, index) => {
      const fence = /^\s*\*\s*```(\S*)(.*)$/u.exec(line);
      if (!fence || (fence[1] === "" && fence[2] === "")) return; // a closing fence
      const where = `${relative(root, file)}:${index + 1}`;
      examples++;
      assert.equal(fence[1], "ts", `${where}: examples are \`ts\` blocks (deno test --doc runs them)`);
      if (fence[2].trim() === "") return;
      assert.equal(fence[2].trim(), "ignore", `${where}: the only attribute is ignore`);
      ignored++;
      assert.match(lines[index + 1] ?? "", /^\s*\*\s*\/\/ ignore: \S/u, `${where}: an ignored example says why on its first line ("// ignore: <reason>")`);
    });
  }
  assert.ok(examples > 100 && ignored < examples / 4, `${examples} examples, ${ignored} ignored`);
});
