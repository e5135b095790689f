/**
 * Snapshot admission per node (CONTRACT §1): dedup by (node, boot_id, seq).
 *
 * - same boot, seq equal to the newest accepted: `duplicate`;
 * - same boot, seq lower: `out-of-order` (within a boot only newer samples are applied);
 * - a boot_id this node already replaced: `old-boot` (a late straggler of the previous
 *   agent process must not flip the node back to it);
 * - any other boot_id: a new boot, which replaces the old one (seq restarts).
 *
 * Only the last few replaced boot ids are remembered (RETIRED_BOOTS), which bounds memory.
 */
import type { DropReason } from './api.js';

/** How many replaced boot ids each node remembers. */
export const RETIRED_BOOTS = 4;

/** Per-node admission state. */
export interface BootTrack {
  /** The current boot id; null before the first snapshot. */
  bootId: string | null;
  /** Newest accepted seq of the current boot. */
  lastSeq: number;
  /** Replaced boot ids, newest last. */
  retired: string[];
}

/** A fresh admission state. */
export function newBootTrack(): BootTrack {
  return { bootId: null, lastSeq: -1, retired: [] };
}

/** Decides and records: `next` (same boot), `new-boot`, or why the snapshot is dropped. */
export function admit(track: BootTrack, bootId: string, seq: number): 'next' | 'new-boot' | DropReason {
  if (track.bootId === bootId) {
    if (seq === track.lastSeq) return 'duplicate';
    if (seq < track.lastSeq) return 'out-of-order';
    track.lastSeq = seq;
    return 'next';
  }
  if (track.retired.includes(bootId)) return 'old-boot';
  const first = track.bootId === null;
  if (track.bootId !== null) {
    track.retired.push(track.bootId);
    if (track.retired.length > RETIRED_BOOTS) track.retired.shift();
  }
  track.bootId = bootId;
  track.lastSeq = seq;
  return first ? 'next' : 'new-boot';
}
