/**
 * The 310P family (`family: "310P"`): Ascend 310, 310P and 310B cards. Each chip is one device:
 * display id `npu<device_id>`, state key `<card bus>/<chip>`, resource `Ascend310P-<device_id>`;
 * the card's link and MCU power stand for its chips.
 */
import {
  ASCEND_COLLECTORS,
  ASCEND_DEVICE_NODE,
  ASCEND_VENDOR,
  isAscendAccelerator,
} from '../ascend/index.js';
import { defineFamily } from '../family.js';
import { applyEventToCards } from './events.js';
import { completeCards } from './inventory.js';
import { chipsIn, normaliseCards } from './normalise.js';
import { readCards } from './read.js';
import {
  DEVICE_READINGS_310P,
  READINGS_310P,
  card310Schema,
  chip310Schema,
  payload310Schema,
  type Card310,
  type Chip310,
  type Payload310,
} from './schema.js';
import { SIM_KINDS_310P, simPayload310 } from './sim.js';

export { card310Schema, chip310Schema, payload310Schema, type Card310, type Chip310, type Payload310 };

export const ascend310P = defineFamily({
  id: '310P',
  kind: 'npu',
  payloadSchema: payload310Schema,
  readDevices: readCards,
  readingFields: READINGS_310P,
  deviceReadings: DEVICE_READINGS_310P,
  boundJsonReadings(payload, bound) {
    if (!Array.isArray(payload.cards)) return;
    for (const card of payload.cards as unknown[]) {
      bound(card, DEVICE_READINGS_310P.card310);
      const chips =
        typeof card === 'object' && card !== null ? (card as { chips?: unknown }).chips : undefined;
      if (Array.isArray(chips))
        for (const chip of chips as unknown[]) bound(chip, DEVICE_READINGS_310P.chip310);
    }
  },
  devicesIn: chipsIn,
  normalise: normaliseCards,
  emptyPayload: () => ({ family: '310P' as const, cards: [] }),
  // The 310 shares the family's tools and payload.
  resourceNames: ['huawei.com/Ascend310P', 'huawei.com/Ascend310'],
  inventory: {
    vendor: ASCEND_VENDOR,
    isAccelerator: isAscendAccelerator,
    deviceNode: ASCEND_DEVICE_NODE,
    collectors: ASCEND_COLLECTORS,
    complete: completeCards,
  },
  applyEvent: applyEventToCards,
  sim: {
    kinds: SIM_KINDS_310P,
    payload: simPayload310,
    faults: { linkDown: 'slot', xid: 'is not a GPU node', health: true },
  },
});
