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

/** `davinci3` → 3 for davinci, `nvidia2` → 2 for nvidia; null otherwise. */
function deviceNodeIndex(line: string, prefix: 'davinci' | 'nvidia'): number | null {
  const match = new RegExp(`^${prefix}(\\d{1,4})$`).exec(line);
  return match ? Number(match[1]) : null;
}

/**
 * Applies `events` to a copy of `payload`. A device node's number is the NPU's physical id
 * (910B: `phy_id`, else its npu number), the 310P chip's device id, or the GPU's index,
 * which is how the drivers number them on the machines we know.
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

function applyOne(payload: Payload, event: KernelEventLike): boolean {
  if (payload.family === 'nvidia') {
    const index = event.busId === null ? deviceNodeIndex(event.line, 'nvidia') : null;
    const gpu = payload.gpus.find((g) =>
      event.busId !== null ? sameBus(g.bus_id, event.busId) : g.index === index,
    );
    if (!gpu) return false;
    if (event.kind === 'removed') gpu.present = false;
    else if (event.xid !== undefined && !gpu.xid_events.some((x) => x.xid === event.xid && x.at === event.at))
      gpu.xid_events.push({ xid: event.xid, at: event.at });
    return true;
  }
  if (event.kind !== 'removed') return false;
  if (payload.family === '910B') {
    const index = event.busId === null ? deviceNodeIndex(event.line, 'davinci') : null;
    const chips = payload.npus.filter((n) =>
      event.busId !== null ? sameBus(n.pcie.bus_id, event.busId) : (n.phy_id ?? n.npu) === index,
    );
    for (const chip of chips) chip.present = false;
    return chips.length > 0;
  }
  const index = event.busId === null ? deviceNodeIndex(event.line, 'davinci') : null;
  let matched = false;
  for (const card of payload.cards) {
    const wholeCard = event.busId !== null && sameBus(card.bus_id, event.busId);
    for (const chip of card.chips) {
      if (wholeCard || chip.device_id === index) {
        chip.present = false;
        matched = true;
      }
    }
  }
  return matched;
}
