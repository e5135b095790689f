/**
 * One-shot events of a snapshot the queue drops, carried into a later snapshot of the same
 * node so they are not lost. A metric sample can be dropped safely (the next one says the
 * same, or newer); an event cannot: an NVIDIA XID is reported once, in the snapshot taken
 * when the kernel logged it, and never again. Which data of a payload is one-shot is its
 * family's to say (`oneShotEvents`: a GPU's `xid_events`; a payload-level `canary` is a state,
 * resent every sample: nothing to carry).
 */
import type { SnapshotInput } from '../../contracts/index.js';
import { FAMILIES, MAX_XID_EVENTS, type OneShotEvents } from '../../families/index.js';

/** Most XIDs one GPU may carry (the snapshot schema's bound). */
export { MAX_XID_EVENTS };

type PayloadInput = SnapshotInput['payload'];

/** What a carry did: the snapshot to queue instead of `into`, and the events it could not place. */
export interface CarryResult {
  snapshot: SnapshotInput;
  /** Events whose device the later snapshot does not list (lost, logged by the caller). */
  unplaced: number;
}

/** The one-shot events of the payload's family; undefined when it has none. */
function oneShotEventsOf(payload: PayloadInput): OneShotEvents<PayloadInput> | undefined {
  return FAMILIES.get(payload.family)?.oneShotEvents;
}

/** How many events dropping `snapshot` would lose. */
export function oneShotEventCount(snapshot: SnapshotInput): number {
  return oneShotEventsOf(snapshot.payload)?.count(snapshot.payload) ?? 0;
}

/**
 * `into` with the one-shot events of `dropped` added to the same devices (a GPU's XIDs: matched
 * by bus id, else UUID, else index, de-duplicated by (xid, at), the dropped ones first as they
 * happened first; at most MAX_XID_EVENTS per GPU, keeping the newest). `into` itself is not
 * modified; an `into` of another family takes none of them.
 */
export function carryOneShotEvents(dropped: SnapshotInput, into: SnapshotInput): CarryResult {
  const events = oneShotEventsOf(dropped.payload);
  const count = events?.count(dropped.payload) ?? 0;
  if (events === undefined || count === 0) return { snapshot: into, unplaced: 0 };
  if (into.payload.family !== dropped.payload.family) return { snapshot: into, unplaced: count };
  const carried = events.carry(dropped.payload, into.payload);
  return { snapshot: { ...into, payload: carried.payload }, unplaced: carried.unplaced };
}
