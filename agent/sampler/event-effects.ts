/**
 * What a kernel event means for the next snapshot, decided without I/O: an NVIDIA XID is
 * attached to its GPU (by PCI bus id), a removed device (by bus id, or by its device node
 * `davinciN` / `nvidiaN`) is sent as `present: false`. PCIe AER messages change nothing by
 * themselves; they only make the agent sample at once (the tool then says what is left).
 * An XID number no driver prints (outside READING_BOUNDS.xid) is not attached: the snapshot
 * would be refused whole for it.
 */
import { withinReadingBounds, type Payload } from '../../contracts/index.js';
import { normaliseBusId } from '../../core/parsers/index.js';
import { FAMILIES } from '../../families/index.js';

/** A kernel-log or device-node event, as agent/events reports it. */
export interface KernelEventLike {
  kind: 'xid' | 'aer' | 'removed';
  busId: string | null;
  xid?: number | undefined;
  at: string;
  line: string;
}

/** The payload with the events applied, the events that matched no device, and those refused. */
export interface AppliedEvents {
  payload: Payload;
  unmatched: KernelEventLike[];
  /** XID events whose number is outside READING_BOUNDS.xid (a misread line), not attached. */
  impossible: KernelEventLike[];
}

/** True when `xid` is a whole number within READING_BOUNDS.xid. */
function isPossibleXid(xid: number): boolean {
  return Number.isInteger(xid) && withinReadingBounds('xid', xid);
}

const sameBus = (a: string | null | undefined, b: string | null): boolean =>
  a != null && b !== null && normaliseBusId(a) === normaliseBusId(b);

/**
 * Applies `events` to a copy of `payload`, each as the payload's family says. A device node's
 * number is the NPU's physical id (910B: `phy_id`, else its npu number), the 310P chip's
 * device id, or the GPU's index, which is how the drivers number them on the machines we know.
 */
export function applyKernelEvents(payload: Payload, events: readonly KernelEventLike[]): AppliedEvents {
  const out = structuredClone(payload);
  const unmatched: KernelEventLike[] = [];
  const impossible: KernelEventLike[] = [];
  for (const event of events) {
    if (event.kind === 'aer') continue;
    if (event.xid !== undefined && !isPossibleXid(event.xid)) impossible.push(event);
    else if (!applyOne(out, event)) unmatched.push(event);
  }
  return { payload: out, unmatched, impossible };
}

/** The event applied by the payload's family (families/<id>/events.ts); false when it names no device. */
function applyOne(payload: Payload, event: KernelEventLike): boolean {
  if (event.kind === 'aer') return false;
  const family = FAMILIES.get(payload.family);
  return family !== undefined && family.applyEvent(payload, { ...event, kind: event.kind }, sameBus);
}
