/**
 * One-shot events of a snapshot the queue drops, carried into a later snapshot of the same
 * node so they are not lost. A metric sample can be dropped safely (the next one says the
 * same, or newer); an event cannot: an NVIDIA XID is reported once, in the snapshot taken
 * when the kernel logged it, and never again. The only one-shot data in hdc.health/v1 is a
 * GPU's `xid_events` (a payload-level `canary` is a state, resent every sample: nothing to carry).
 */
import type { SnapshotInput } from '../../contracts/index.js';

/** Most XIDs one GPU may carry (the snapshot schema's bound). */
export const MAX_XID_EVENTS = 1024;

type GpuInput = Extract<SnapshotInput['payload'], { family: 'nvidia' }>['gpus'][number];
type XidInput = NonNullable<GpuInput['xid_events']>[number];

/** What a carry did: the snapshot to queue instead of `into`, and the events it could not place. */
export interface CarryResult {
  snapshot: SnapshotInput;
  /** XIDs whose GPU the later snapshot does not list (lost, logged by the caller). */
  unplaced: number;
}

/** How many events dropping `snapshot` would lose. */
export function oneShotEventCount(snapshot: SnapshotInput): number {
  const { payload } = snapshot;
  return payload.family === 'nvidia' ? countXids(payload.gpus) : 0;
}

/**
 * `into` with the XIDs of `dropped` added to its GPUs (matched by bus id, else UUID, else
 * index), de-duplicated by (xid, at), the dropped ones first as they happened first; at most
 * MAX_XID_EVENTS per GPU, keeping the newest. `into` itself is not modified.
 */
export function carryOneShotEvents(dropped: SnapshotInput, into: SnapshotInput): CarryResult {
  if (dropped.payload.family !== 'nvidia' || oneShotEventCount(dropped) === 0)
    return { snapshot: into, unplaced: 0 };
  if (into.payload.family !== 'nvidia') return { snapshot: into, unplaced: oneShotEventCount(dropped) };
  const gpus = into.payload.gpus.map((gpu) => ({ ...gpu }));
  let unplaced = 0;
  for (const source of dropped.payload.gpus) {
    const events = source.xid_events ?? [];
    if (events.length === 0) continue;
    const target = gpus.find((gpu) => sameGpu(source, gpu));
    if (!target) {
      unplaced += events.length;
      continue;
    }
    target.xid_events = mergeXids(events, target.xid_events ?? []);
  }
  return { snapshot: { ...into, payload: { ...into.payload, gpus } }, unplaced };
}

/** The same physical GPU in two snapshots of one node. */
function sameGpu(a: GpuInput, b: GpuInput): boolean {
  if (a.bus_id && b.bus_id) return a.bus_id.toLowerCase() === b.bus_id.toLowerCase();
  if (a.uuid && b.uuid) return a.uuid === b.uuid;
  return a.index === b.index;
}

function mergeXids(earlier: readonly XidInput[], later: readonly XidInput[]): XidInput[] {
  const seen = new Set<string>();
  const merged: XidInput[] = [];
  for (const event of [...earlier, ...later]) {
    const key = `${event.xid}@${event.at ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    merged.push(event);
  }
  return merged.slice(-MAX_XID_EVENTS);
}

function countXids(gpus: readonly GpuInput[]): number {
  return gpus.reduce((sum, gpu) => sum + (gpu.xid_events?.length ?? 0), 0);
}
