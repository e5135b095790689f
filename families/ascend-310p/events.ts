/**
 * A kernel event on a 310P payload: a removed card (by bus id: all its chips) or chip (by
 * `/dev/davinci<N>`, N being the chip's device id) is sent as `present: false`.
 */
import { ASCEND_DEVICE_NODE } from '../ascend/index.js';
import { deviceNodeIndex } from '../device-nodes.js';
import type { DeviceEvent, SameBus } from '../family.js';
import type { Payload310 } from './schema.js';

export function applyEventToCards(payload: Payload310, event: DeviceEvent, sameBus: SameBus): boolean {
  if (event.kind !== 'removed') return false;
  const index = event.busId === null ? deviceNodeIndex(event.line, ASCEND_DEVICE_NODE) : null;
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
