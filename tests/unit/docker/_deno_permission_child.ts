// Child program of deno_permissions.test.ts, run by `deno run` with restricted permissions:
// performs one library operation and prints its failure as one JSON line
// ({ name, code, message }) on stdout.
import process from "node:process";
import { backendOn, policy } from "./_start_engine.ts";
import { createFileRecoveryStore, exportToDirectory, importDirectory } from "../../../mod.ts";
import { forwardRelayed } from "../../../lib/docker/ports/forward.ts";

const [operation, first, second] = process.argv.slice(2);

async function run(): Promise<unknown> {
  if (operation === "start") {
    // first: socket path, second: spill directory
    await backendOn(first, second).reserve({ policy }, { record: () => Promise.resolve() }).start();
  } else if (operation === "import") {
    for await (const _ of importDirectory(first)) { /* the walk is what is denied */ }
  } else if (operation === "store") {
    await createFileRecoveryStore(first);
  } else if (operation === "export") {
    await exportToDirectory(new ReadableStream({ start: (controller) => controller.close() }), first);
  } else if (operation === "forward") {
    // A forward's listener alone (no sandbox: nothing is connected).
    const forward = await forwardRelayed(() => Promise.reject(new Error("unused")), 80, {}, () => {});
    await forward.close();
  } else {
    throw new Error(`unknown operation ${operation}`);
  }
  return undefined;
}

const error = await run().then(() => undefined, (caught) => caught as Error & { code?: string });
console.log(JSON.stringify(error === undefined ? { name: "none" } : { name: error.name, code: error.code, message: error.message }));
