/**
 * Completes a 310P payload with the installed cards the tool did not report, as `present:
 * false` (agent/inventory): by the card's bus id (one PCI function per card, whatever its
 * chips). Without bus ids (in the payload, or in `previous` when the payload lists no card)
 * nothing is added: a 310P card's id is not its device node's number.
 */
import type { BusKey, InstalledDevices } from '../family.js';
import { freeNumber } from '../inventory.js';
import type { Card310, Chip310, Payload310 } from './schema.js';

function offlineChip(chip: number, deviceId: number): Chip310 {
  return {
    chip,
    device_id: deviceId,
    health: 'UNKNOWN',
    temperature: null,
    power_w: null,
    ddr: { used_mb: null, total_mb: null, ecc_sbe: null, ecc_dbe: null },
    error_codes: [],
    present: false,
  };
}

export function completeCards(
  payload: Payload310,
  installed: InstalledDevices,
  previous: Payload310 | null,
  busKey: BusKey,
): Payload310 {
  const reported = new Set(payload.cards.map((card) => busKey(card.bus_id)));
  const missing = installed.busIds.filter((bus) => !reported.has(bus));
  const hasBusIds = (cards: readonly Card310[]): boolean => cards.some((card) => card.bus_id !== null);
  const byBus = hasBusIds(payload.cards) || (payload.cards.length === 0 && hasBusIds(previous?.cards ?? []));
  if (missing.length === 0 || !byBus) return payload;
  const known = new Map(previous?.cards.map((card) => [busKey(card.bus_id), card]) ?? []);
  const cardIds = new Set(payload.cards.map((card) => card.card));
  const deviceIds = new Set(payload.cards.flatMap((card) => card.chips.map((chip) => chip.device_id)));
  const added = missing.map((bus): Card310 => {
    const old = known.get(bus);
    const card = old && !cardIds.has(old.card) ? freeNumber(cardIds, old.card) : freeNumber(cardIds, 0);
    const chips = old?.chips.length
      ? old.chips.map((chip) => offlineChip(chip.chip, chip.device_id))
      : [offlineChip(0, freeNumber(deviceIds, Math.max(-1, ...deviceIds) + 1))];
    return { card, name: old?.name ?? '', bus_id: bus, pcie_link: null, mcu_power_w: null, chips };
  });
  return { ...payload, cards: [...payload.cards, ...added] };
}
