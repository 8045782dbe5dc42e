// Child program of cli.test.ts: a backend with config.proxyImageDigest (the port relay's
// image) starts one sandbox recorded in RECORDS, then the program SIGKILLs itself, leaving the
// sandbox and its record for `agentcell reclaim`.
// Arguments: RECORDS NAMESPACE SPILL ENDPOINT IMAGE HELPER_IMAGE
import process from "node:process";
import { createDockerSandboxBackend, createFileRecoveryStore } from "../../mod.ts";

const [records, namespace, spillDirectory, endpoint, imageDigest, proxyImageDigest] = process.argv.slice(process.argv.length - 6);
const store = await createFileRecoveryStore(records);
const backend = createDockerSandboxBackend({ profile: "linux-x64-cgroupfs", endpoint, namespace, spillDirectory, imageDigest, user: { uid: 65534, gid: 65534 }, proxyImageDigest });
await backend.reserve({ policy: { resources: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 128 } } }, store).start();
process.kill(process.pid, "SIGKILL");
