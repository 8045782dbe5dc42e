/**
 * `agentcell prepare-image SOURCE TAG`: {@linkcode prepareImage} from the command line.
 *
 * @module
 */
import { prepareImage } from "../docker/prepare_image.ts";
import { parse, UsageError, withEndpoint } from "./_options.ts";

/** Help of `prepare-image`. */
export const PREPARE_IMAGE_HELP = `agentcell prepare-image [--endpoint URL] SOURCE [TAG]

Flatten the local image SOURCE into a new image the sandbox admits (only the fixed guest
environment, no volumes, entrypoint or command), tagged TAG (repo:tag) when given, and print
its sha256: ID: pass it as --image. Nothing is pulled: docker pull or load SOURCE first.

  --endpoint URL   Docker Engine socket, unix:///… (default $AGENTCELL_ENGINE, else unix:///var/run/docker.sock)
  -h, --help       this help`;

/** Run `prepare-image`; resolves with the exit code. */
export async function prepareImageCommand(args: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parse(args, { endpoint: { type: "string" } });
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError("Cannot prepare an image: name SOURCE and optionally TAG, e.g. agentcell prepare-image busybox:latest hello/busybox:1");
  out(await withEndpoint(values, (endpoint) => prepareImage(endpoint, positionals[0], positionals[1])));
  return 0;
}
