/**
 * A 310P chip as the engine's observation (CONTRACT §1 table). A chip the tool cannot read
 * keeps its card's link and MCU power share: those are the card's readings, not the chip's.
 */
import type { DeviceObservation } from '../../contracts/index.js';
import { NO_XIDS, lowerHealth, sum, unreadable } from '../observation.js';
import type { Card310, Chip310, Payload310 } from './schema.js';

export function normaliseCards(payload: Payload310, out: DeviceObservation[]): void {
  for (const card of payload.cards) {
    for (const chip of card.chips) out.push(fromChip310(card, chip));
  }
}

/** A card counts its chips. */
export function chipsIn(payload: Payload310): number {
  let chips = 0;
  for (const card of payload.cards) chips += card.chips.length;
  return chips;
}

function fromChip310(card: Card310, chip: Chip310): DeviceObservation {
  const device = fromReadableChip310(card, chip);
  if (chip.readable !== false) return device;
  // The link and the MCU power are the card's readings, not the chip's: they stand.
  const { pcie_link_status: link } = device;
  unreadable(device);
  device.pcie_link_status = link;
  device.power_w = cardPowerShare(card);
  return device;
}

/** The card's MCU power divided among its chips; null when unknown. */
function cardPowerShare(card: Card310): number | null {
  return card.mcu_power_w === null || card.chips.length === 0 ? null : card.mcu_power_w / card.chips.length;
}

function fromReadableChip310(card: Card310, chip: Chip310): DeviceObservation {
  const id = `npu${chip.device_id}`;
  const cardPower = cardPowerShare(card);
  return {
    id,
    key: card.bus_id === null ? id : `${card.bus_id}/${chip.chip}`,
    resource_id: `Ascend310P-${chip.device_id}`,
    family: '310P',
    kind: 'npu',
    model: card.name,
    health: lowerHealth(chip.health),
    temperature_c: chip.temperature,
    power_w: chip.power_w ?? cardPower,
    memory_used_mb: chip.ddr.used_mb,
    memory_total_mb: chip.ddr.total_mb,
    ecc_errors: sum(chip.ddr.ecc_sbe, chip.ddr.ecc_dbe),
    ecc_uncorrectable: chip.ddr.ecc_dbe,
    pcie_link_status: card.pcie_link === null ? null : card.pcie_link === 1 ? 'up' : 'down',
    error_codes: chip.error_codes,
    xids: NO_XIDS,
    present: chip.present,
  };
}
