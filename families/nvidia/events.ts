/**
 * A kernel event on an NVIDIA payload, matched to its GPU by bus id (or `/dev/nvidia<N>`, N
 * being the GPU's index): an XID joins the GPU's events (once per XID and time), a removed GPU
 * is sent as `present: false`.
 */
import { deviceNodeIndex } from '../device-nodes.js';
import type { DeviceEvent, SameBus } from '../family.js';
import type { PayloadNvidia } from './schema.js';

/** The NVIDIA device nodes' prefix: `/dev/nvidia<N>`. */
export const NVIDIA_DEVICE_NODE = 'nvidia';

export function applyEventToGpus(payload: PayloadNvidia, event: DeviceEvent, sameBus: SameBus): boolean {
  const index = event.busId === null ? deviceNodeIndex(event.line, NVIDIA_DEVICE_NODE) : null;
  const gpu = payload.gpus.find((g) =>
    event.busId !== null ? sameBus(g.bus_id, event.busId) : g.index === index,
  );
  if (!gpu) return false;
  if (event.kind === 'removed') gpu.present = false;
  else if (event.xid !== undefined && !gpu.xid_events.some((x) => x.xid === event.xid && x.at === event.at))
    gpu.xid_events.push({ xid: event.xid, at: event.at });
  return true;
}
