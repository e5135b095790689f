/**
 * A kernel event on a 910B payload: a removed device (by bus id, or by `/dev/davinci<N>`, N
 * being the chip's physical id, else its NPU number) is sent as `present: false`.
 */
import { ASCEND_DEVICE_NODE } from '../ascend/index.js';
import { deviceNodeIndex } from '../device-nodes.js';
import type { DeviceEvent, SameBus } from '../family.js';
import type { Payload910 } from './schema.js';

export function applyEventToNpus(payload: Payload910, event: DeviceEvent, sameBus: SameBus): boolean {
  if (event.kind !== 'removed') return false;
  const index = event.busId === null ? deviceNodeIndex(event.line, ASCEND_DEVICE_NODE) : null;
  const chips = payload.npus.filter((n) =>
    event.busId !== null ? sameBus(n.pcie.bus_id, event.busId) : (n.phy_id ?? n.npu) === index,
  );
  for (const chip of chips) chip.present = false;
  return chips.length > 0;
}
