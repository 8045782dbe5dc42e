/**
 * `agentcell reclaim RECORDS_DIR`: the reclaim loop over a records directory, with a report.
 * Each record names the configuration that wrote it (endpoint, profile, namespace, image,
 * users), so the backend of each is made from the record itself: no options needed.
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { createDockerSandboxBackend, type DockerSandboxBackend } from "../docker/backend.ts";
import type { DockerSandboxProfile } from "../docker/profiles.ts";
import type { DockerSandboxRecoveryRecord } from "../docker/recovery/record.ts";
import { reclaimRecords } from "../docker/recovery/reclaim.ts";
import { createFileRecoveryStore } from "../docker/recovery/store.ts";
import { directoryOption, parse, UsageError } from "./_options.ts";

/** Help of `reclaim`. */
export const RECLAIM_HELP = `agentcell reclaim RECORDS_DIR

Remove exactly what the records in RECORDS_DIR name, for every record whose controller is
gone (a program that crashed or was killed), and drop each record whose cleanup completed.
A record whose controller still runs, or that is corrupt, is left alone and reported.
Prints one line per record and a count; exits 0 when every record was reclaimed, 1 otherwise.

  -h, --help   this help`;

/** The backend that wrote `record` (its identity holds the configuration; recovery never spills). */
function backendOf(record: DockerSandboxRecoveryRecord, directory: string): DockerSandboxBackend {
  const identity = record.identity;
  // config.proxyImageDigest: recorded as relayImageDigest whenever configured (the port
  // relay runs it), and as proxyImageDigest too for an allowlist sandbox.
  const helperImage = identity.relayImageDigest ?? identity.proxyImageDigest;
  return createDockerSandboxBackend({
    endpoint: identity.endpoint,
    profile: identity.profile as DockerSandboxProfile,
    namespace: identity.namespace,
    imageDigest: identity.imageDigest,
    ...(identity.userRange === undefined ? { user: identity.user } : { userRange: identity.userRange }),
    keeperUser: identity.keeperUser,
    ...(helperImage === undefined ? {} : { proxyImageDigest: helperImage }),
    spillDirectory: directory,
  });
}

/** Run `reclaim`; resolves with the exit code. */
export async function reclaim(args: readonly string[], out: (line: string) => void): Promise<number> {
  const { positionals } = parse(args, {});
  if (positionals.length !== 1) throw new UsageError("Cannot reclaim: name exactly one records directory, e.g. agentcell reclaim ~/.local/state/agentcell/records");
  const directory = directoryOption(positionals[0]);
  // The store would make a missing directory; a typo must not read as "nothing to reclaim".
  const found = await stat(directory).then((stats) => stats.isDirectory(), () => false);
  if (!found) throw new UsageError(`Cannot reclaim: ${directory} is not a directory; name the records directory the program wrote (its --records, or recordsDirectory)`);
  const store = await createFileRecoveryStore(directory);
  const report = await reclaimRecords(store, (record) => backendOf(record, store.directory));
  for (const outcome of report.outcomes) {
    out(
      outcome.kind === "reclaimed"
        ? `reclaimed ${outcome.reservationId}: removed ${outcome.removed.join(", ") || "nothing (it was gone)"}`
        : `${outcome.kind} ${outcome.reservationId}: ${outcome.code === undefined ? "" : `[${outcome.code}] `}${outcome.reason}`,
    );
  }
  const { reclaimed, pending, refused } = report.counts;
  out(`${reclaimed} reclaimed, ${pending} pending, ${refused} refused`);
  return pending + refused === 0 ? 0 : 1;
}
