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
 *
 * **A jump is not trusted blindly.** One snapshot with a `seq` far ahead would otherwise drop
 * every later snapshot of the real agent as `out-of-order` until it restarts: what a stolen
 * function token, which names any `boot_id` the agent's /v1/health shows, could do to silence
 * a node. So after a jump of more than MAX_SEQ_JUMP the sequence it left keeps going: a
 * snapshot between the seq the first jump started from and the newest is accepted
 * (`behind-jump`) when it is newer than the last one accepted there and at most MAX_SEQ_JUMP
 * past it, so the lane cannot itself be pushed ahead by a forged snapshot. A forger can thus
 * hold the agent back by at most MAX_SEQ_JUMP snapshots (about a minute at one a second) per
 * forged snapshot, and must keep sending to do more, which shows as `out-of-order` in the
 * controllers' metrics (docs/security.md). The agent's own sequence has no reason to jump: it
 * sends in order and its queue drops the oldest; if it ever did, nothing is lost, since its
 * snapshots after the jump are accepted in order.
 */
import type { DropReason } from './api.js';

/** How many replaced boot ids each node remembers. */
export const RETIRED_BOOTS = 4;
/** A seq more than this past the newest accepted opens a second lane below it (see above). */
export const MAX_SEQ_JUMP = 64;

/** Per-node admission state. */
export interface BootTrack {
  /** The current boot id; null before the first snapshot. */
  bootId: string | null;
  /** Newest accepted seq of the current boot. */
  lastSeq: number;
  /** Replaced boot ids, newest last. */
  retired: string[];
  /**
   * After a jump of more than MAX_SEQ_JUMP in this boot: the newest seq accepted in the lane
   * the jump left (it may go on up to lastSeq); null when this boot never jumped.
   */
  belowJump: number | null;
}

/** A fresh admission state. */
export function newBootTrack(): BootTrack {
  return { bootId: null, lastSeq: -1, retired: [], belowJump: null };
}

/** An accepted snapshot: of the boot's sequence, of a new boot, or of the lane a jump left. */
export type Admitted = 'next' | 'new-boot' | 'behind-jump';

/** Whether `verdict` admits the snapshot. */
export function admitted(verdict: Admitted | DropReason): verdict is Admitted {
  return verdict === 'next' || verdict === 'new-boot' || verdict === 'behind-jump';
}

/** Decides and records: accepted (`Admitted`), or why the snapshot is dropped. */
export function admit(track: BootTrack, bootId: string, seq: number): Admitted | DropReason {
  if (track.bootId === bootId) {
    if (seq === track.lastSeq || seq === track.belowJump) return 'duplicate';
    if (seq < track.lastSeq) {
      if (track.belowJump === null || seq < track.belowJump || seq - track.belowJump > MAX_SEQ_JUMP)
        return 'out-of-order';
      track.belowJump = seq;
      return 'behind-jump';
    }
    // A second jump keeps the first lane: two forged jumps must not make the forger's lane the one kept.
    if (seq - track.lastSeq > MAX_SEQ_JUMP) track.belowJump ??= track.lastSeq;
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
  track.belowJump = null;
  return first ? 'next' : 'new-boot';
}
