/**
 * Whether a snapshot can be read: its volume exists and carries exactly its record's
 * labels (a snapshot removed, or a volume of that name that is not the snapshot's, is
 * refused before anything is created).
 *
 * @module
 */
import { SandboxStateError } from "../../sandbox/errors.ts";
import type { Volume } from "../../engine/volumes.ts";
import { labelsMatch, resourceLabels } from "../names.ts";
import type { DockerWorkspaceSnapshot } from "./snapshot.ts";

/**
 * Check the inspected volume of `snapshot`.
 *
 * @param snapshot the snapshot
 * @param volume `GET /volumes/{name}` of its volume (`undefined`: 404)
 * @param action the "<action>" of the message ("start sandbox")
 * @throws {SandboxStateError} `invalid_state` when the snapshot was removed or its volume is not its own
 */
export function admitSnapshot(snapshot: DockerWorkspaceSnapshot, volume: Volume | undefined, action: string): void {
  const entry = snapshot.record.resources.volume;
  if (volume === undefined || entry?.state !== "created") {
    throw new SandboxStateError(`Cannot ${action}: snapshot ${snapshot.id} was removed (its volume ${snapshot.volumeName} is gone); take or import another`);
  }
  if (!labelsMatch(volume.Labels, resourceLabels(snapshot.record, "volume"))) {
    throw new SandboxStateError(`Cannot ${action}: volume ${snapshot.volumeName} is not snapshot ${snapshot.id}'s (its labels differ); it is left alone`);
  }
}
