#!/usr/bin/env node
/**
 * The `agentcell` command: `doctor`, `run`, `shell`, `reclaim`, `mcp`, `prepare-image`.
 * From a checkout: `node lib/cli/main.ts …`, `bun lib/cli/main.ts …`, or
 * `deno run -A --config=deno.json lib/cli/main.ts …`; installed, `agentcell …` (the
 * package's `bin`). A failure prints the library's typed message in one line
 * (`Name [code]: Cannot …`) and exits 1; a usage mistake prints it and the command's help
 * and exits 2.
 *
 * @module
 */
import process from "node:process";
import { doctor, DOCTOR_HELP } from "./_doctor.ts";
import { UsageError } from "./_options.ts";
import { prepareImageCommand, PREPARE_IMAGE_HELP } from "./_prepare_image.ts";
import { reclaim, RECLAIM_HELP } from "./_reclaim.ts";
import { run, RUN_HELP, shell, SHELL_HELP } from "./_run.ts";
import { mcp, MCP_HELP } from "./_mcp.ts";

const COMMANDS: Record<string, { run: (args: readonly string[], out: (line: string) => void) => Promise<number>; help: string; summary: string }> = {
  doctor: { run: doctor, help: DOCTOR_HELP, summary: "check the Docker Engine and say which profile admits it" },
  run: { run, help: RUN_HELP, summary: "run one command in a fresh sandbox: agentcell run [--image ID] -- CMD…" },
  shell: { run: shell, help: SHELL_HELP, summary: "an interactive shell in a fresh sandbox (a terminal)" },
  reclaim: { run: reclaim, help: RECLAIM_HELP, summary: "remove what a crashed program's records name: agentcell reclaim RECORDS_DIR" },
  mcp: { run: mcp, help: MCP_HELP, summary: "serve sandboxes to an agent over MCP (stdio): agentcell mcp --config FILE" },
  "prepare-image": { run: prepareImageCommand, help: PREPARE_IMAGE_HELP, summary: "make an admissible image from a local one: agentcell prepare-image SOURCE [TAG]" },
};

const HELP = `agentcell: hardened Docker sandboxes for agents, from a shell

usage: agentcell COMMAND [options]   (agentcell COMMAND --help for its options)

${Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(14)} ${command.summary}`).join("\n")}`;

const out = (line: string) => void process.stdout.write(`${line}\n`);

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(HELP);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    process.stderr.write(`agentcell: unknown command ${JSON.stringify(name)}\n\n${HELP}\n`);
    return 2;
  }
  const options = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
  if (options.includes("--help") || options.includes("-h")) {
    out(command.help);
    return 0;
  }
  try {
    return await command.run(args, out);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`agentcell ${name}: ${error.message}\n\n${command.help}\n`);
      return 2;
    }
    const code = (error as { code?: unknown }).code;
    const text = (error as Error).message ?? String(error);
    // The mcp and reclaim commands take their fields from a file, not from flags.
    const message = name === "mcp" || name === "reclaim" ? text : cliTerms(text);
    process.stderr.write(`${(error as Error).name ?? "Error"}${typeof code === "string" ? ` [${code}]` : ""}: ${message}\n`);
    return 1;
  }
}

/**
 * The library's messages name its configuration fields and policy; on the command line they
 * are flags. Each field a flag of run, shell, doctor or prepare-image sets is named as the
 * flag, with the field after it.
 */
function cliTerms(message: string): string {
  return message
    .replaceAll(/\bconfig\.endpoint\b/gu, "--endpoint (config.endpoint)")
    .replaceAll(/\bconfig\.imageDigest\b/gu, "--image (config.imageDigest)")
    .replaceAll(/\bconfig\.profile\b/gu, "--profile (config.profile)")
    .replaceAll(/\bconfig\.namespace\b/gu, "--namespace (config.namespace)")
    .replaceAll(/\bconfig\.spillDirectory\b/gu, "--spill (config.spillDirectory)")
    .replaceAll(/\boptions\.recordsDirectory\b/gu, "--records (options.recordsDirectory)")
    .replaceAll(/\bpolicy\.resources\.cpus\b/gu, "--cpus (policy.resources.cpus)")
    .replaceAll(/\bpolicy\.resources\.memoryBytes\b/gu, "--memory (policy.resources.memoryBytes)")
    .replaceAll(/\bpolicy\.resources\.pids\b/gu, "--pids (policy.resources.pids)")
    .replaceAll(/\bpolicy\.network\b/gu, "--network (policy.network)");
}

process.exitCode = await main(process.argv.slice(2));
// The MCP server and the sandbox commands leave no work behind; end even if a socket lingers.
process.exit();
