// The lane's namespace: every sandbox a test makes on the shared test engine carries it.
// scripts/test.sh runs the runtimes' engine lanes side by side, each with its own
// (AGENTCELL_TEST_NAMESPACE=test-<runtime>), so no lane lists, recovers or counts another's
// resources; run alone, a lane uses "test".
import process from "node:process";

/** The namespace of this lane's sandboxes: `AGENTCELL_TEST_NAMESPACE`, default `"test"`. */
export const TEST_NAMESPACE: string = process.env.AGENTCELL_TEST_NAMESPACE ?? "test";
