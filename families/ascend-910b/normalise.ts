/** A 910B chip as the engine's observation (CONTRACT §1 table). */
import type { DeviceObservation } from '../../contracts/index.js';
import { NO_XIDS, lowerHealth, sum, unreadable } from '../observation.js';
import type { Npu910, Payload910 } from './schema.js';

export function normaliseNpus(payload: Payload910, out: DeviceObservation[]): void {
  for (const npu of payload.npus) out.push(fromNpu910(npu));
}

function fromNpu910(npu: Npu910): DeviceObservation {
  const device = fromReadableNpu910(npu);
  return npu.readable === false ? unreadable(device) : device;
}

function fromReadableNpu910(npu: Npu910): DeviceObservation {
  const id = npu.chip > 0 ? `npu${npu.npu}-${npu.chip}` : `npu${npu.npu}`;
  const ecc = npu.hbm.ecc;
  return {
    id,
    // A chip beyond the first (A3) carries its chip number, as a 310P chip does, so that two
    // chips behind one PCIe function can never swap identities by the order of their rows.
    key: npu.pcie.bus_id === null ? id : npu.chip > 0 ? `${npu.pcie.bus_id}/${npu.chip}` : npu.pcie.bus_id,
    resource_id: `Ascend910-${npu.phy_id ?? npu.npu}`,
    family: '910B',
    kind: 'npu',
    model: npu.name,
    health: lowerHealth(npu.health),
    temperature_c: npu.temp_c,
    power_w: npu.power_w,
    memory_used_mb: npu.hbm.used_mb,
    memory_total_mb: npu.hbm.total_mb,
    ecc_errors: sum(ecc.single_bit, ecc.double_bit),
    ecc_uncorrectable: ecc.double_bit,
    pcie_link_status: npu.pcie.link,
    error_codes: npu.error_codes,
    xids: NO_XIDS,
    present: npu.present,
  };
}
