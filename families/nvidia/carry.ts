/**
 * A GPU's XIDs are the one one-shot data of a payload: reported once, in the snapshot taken
 * when the kernel logged them, and never again. When the agent's queue drops a snapshot, they
 * are carried into a later one (agent/push/carry.ts): added to the same GPUs (matched by bus
 * id, else UUID, else index), de-duplicated by (xid, at), the dropped ones first as they
 * happened first; at most MAX_XID_EVENTS per GPU, keeping the newest.
 */
import { SNAPSHOT_LIMITS } from '../../contracts/fields/index.js';
import type { OneShotEvents } from '../family.js';
import type { PayloadNvidiaInput } from './schema.js';

/** Most XIDs one GPU may carry (the snapshot schema's bound). */
export const MAX_XID_EVENTS = SNAPSHOT_LIMITS.xidEvents;

type GpuInput = PayloadNvidiaInput['gpus'][number];
type XidInput = NonNullable<GpuInput['xid_events']>[number];

export const xidEvents: OneShotEvents<PayloadNvidiaInput> = {
  count: (payload) => countXids(payload.gpus),
  carry(dropped, into) {
    const gpus = into.gpus.map((gpu) => ({ ...gpu }));
    let unplaced = 0;
    for (const source of dropped.gpus) {
      const events = source.xid_events ?? [];
      if (events.length === 0) continue;
      const target = gpus.find((gpu) => sameGpu(source, gpu));
      if (!target) {
        unplaced += events.length;
        continue;
      }
      target.xid_events = mergeXids(events, target.xid_events ?? []);
    }
    return { payload: { ...into, gpus }, unplaced };
  },
};

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
