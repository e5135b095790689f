/**
 * The 910B family (`family: "910B"`): Ascend 910B, 910/910A and the A3 Ascend910 (two chips per
 * NPU). Each chip is one device: display id `npu<N>` (`npu<N>-<chip>` beyond the first chip),
 * state key its bus id (`<bus>/<chip>` beyond the first chip), resource `Ascend910-<phy_id>`.
 */
import {
  ASCEND_COLLECTORS,
  ASCEND_DEVICE_NODE,
  ASCEND_VENDOR,
  isAscendAccelerator,
} from '../ascend/index.js';
import { defineFamily } from '../family.js';
import { applyEventToNpus } from './events.js';
import { completeNpus } from './inventory.js';
import { normaliseNpus } from './normalise.js';
import { readNpus } from './read.js';
import {
  DEVICE_READINGS_910B,
  READINGS_910B,
  npu910Schema,
  payload910Schema,
  type Npu910,
  type Payload910,
} from './schema.js';
import { SIM_KINDS_910B, simPayload910 } from './sim.js';

export { npu910Schema, payload910Schema, type Npu910, type Payload910 };

export const ascend910B = defineFamily({
  id: '910B',
  kind: 'npu',
  payloadSchema: payload910Schema,
  readDevices: readNpus,
  readingFields: READINGS_910B,
  deviceReadings: DEVICE_READINGS_910B,
  boundJsonReadings(payload, bound) {
    if (!Array.isArray(payload.npus)) return;
    for (const npu of payload.npus as unknown[]) bound(npu, DEVICE_READINGS_910B.npu910);
  },
  devicesIn: (payload) => payload.npus.length,
  normalise: normaliseNpus,
  emptyPayload: () => ({ family: '910B' as const, npus: [] }),
  resourceNames: ['huawei.com/Ascend910'],
  inventory: {
    vendor: ASCEND_VENDOR,
    isAccelerator: isAscendAccelerator,
    deviceNode: ASCEND_DEVICE_NODE,
    collectors: ASCEND_COLLECTORS,
    complete: completeNpus,
  },
  applyEvent: applyEventToNpus,
  sim: {
    kinds: SIM_KINDS_910B,
    payload: simPayload910,
    faults: { linkDown: 'device', xid: 'is not a GPU node', health: true },
  },
});
