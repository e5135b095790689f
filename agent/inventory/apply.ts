/**
 * Completes a payload with the installed devices the tool did not report: each is sent with
 * `present: false` and every reading unknown, so a device that vanished from the tool's
 * output is seen going off the bus instead of silently leaving the snapshot. Pure.
 *
 * How an installed device is matched to the payload's:
 * - NVIDIA: by PCI bus id (normalised).
 * - 910B family: by bus id when the payload carries bus ids (npu-smi's table does). When it
 *   carries none (an `hdc` build that prints no PCIe field), by `/dev/davinci<N>` with N taken
 *   as the NPU id: the driver numbers its device nodes by logical device id, which equals
 *   npu-smi's NPU id on single-chip-per-NPU nodes (910B, 910). On A3 nodes (two chips per
 *   NPU, davinci numbering per chip) that no longer holds, so the fallback is not used when
 *   the payload has a chip beyond 0.
 * - 310P family: by the card's bus id (one PCI function per card, whatever its chips).
 *   Without bus ids (in the payload, or in `previous` when the payload lists no card) nothing
 *   is added: a 310P card's id is not its device node's number.
 *
 * A device added carries the identity it had in `previous` (the last completed payload, when
 * given: index, uuid, name, NPU and chip numbers, a 310P card's chips), so the controller
 * follows the same device rather than a new one; otherwise it gets numbers that collide with
 * no device reported.
 */
import type { Card310, Chip310, Gpu, Npu910, Payload } from '../../contracts/index.js';
import { emptyGpu, normaliseBusId } from '../../core/parsers/index.js';
import type { Inventory } from './scan.js';

/** A bus id in the form inventories use; unreadable text is kept as it is. */
function busKey(bus: string | null): string | null {
  return bus === null ? null : (normaliseBusId(bus) ?? bus);
}

/** The smallest number not in `taken`, at or above `from`; it is then taken. */
function freeNumber(taken: Set<number>, from: number): number {
  let n = from;
  while (taken.has(n)) n++;
  taken.add(n);
  return n;
}

/** Adds the installed devices the payload lacks, with present:false (pure). */
export function applyInventory(payload: Payload, inventory: Inventory, previous?: Payload | null): Payload {
  const before = previous?.family === payload.family ? previous : null;
  if (payload.family === 'nvidia')
    return addGpus(payload, inventory.nvidia, before?.family === 'nvidia' ? before : null);
  if (payload.family === '910B')
    return addNpus(payload, inventory, before?.family === '910B' ? before : null);
  return addCards(payload, inventory.huawei, before?.family === '310P' ? before : null);
}

type Nvidia = Payload & { family: 'nvidia' };
type Family910 = Payload & { family: '910B' };
type Family310 = Payload & { family: '310P' };

function addGpus(payload: Nvidia, installed: readonly string[], previous: Nvidia | null): Nvidia {
  const reported = new Set(payload.gpus.map((gpu) => busKey(gpu.bus_id)));
  const missing = installed.filter((bus) => !reported.has(bus));
  if (missing.length === 0) return payload;
  const known = new Map(previous?.gpus.map((gpu) => [busKey(gpu.bus_id), gpu]) ?? []);
  const taken = new Set(payload.gpus.map((gpu) => gpu.index));
  const added = missing.map((bus): Gpu => {
    const old = known.get(bus);
    // nvidia-smi numbers GPUs in PCI bus order: the installed list's order is the best guess.
    const index =
      old && !taken.has(old.index) ? freeNumber(taken, old.index) : freeNumber(taken, installed.indexOf(bus));
    return {
      ...emptyGpu(index),
      uuid: old?.uuid ?? null,
      bus_id: bus,
      name: old?.name ?? '',
      present: false,
    };
  });
  return { ...payload, gpus: [...payload.gpus, ...added].sort((a, b) => a.index - b.index) };
}

function offlineNpu(npu: number, chip: number, bus: string | null, old: Npu910 | undefined): Npu910 {
  return {
    npu,
    chip,
    ...(old?.phy_id === undefined ? {} : { phy_id: old.phy_id }),
    name: old?.name ?? '',
    health: 'UNKNOWN',
    temp_c: null,
    power_w: null,
    aicore_pct: null,
    hbm: { used_mb: null, total_mb: null, temp_c: null, ecc: { single_bit: null, double_bit: null } },
    pcie: { bus_id: bus, link: null },
    error_codes: [],
    present: false,
  };
}

function addNpus(payload: Family910, inventory: Inventory, previous: Family910 | null): Family910 {
  const hasBusIds = (npus: readonly Npu910[]): boolean => npus.some((npu) => npu.pcie.bus_id !== null);
  const byBus = hasBusIds(payload.npus) || (payload.npus.length === 0 && hasBusIds(previous?.npus ?? []));
  const added = byBus ? missingByBus(payload, inventory.huawei, previous) : missingByNode(payload, inventory);
  if (added.length === 0) return payload;
  const npus = [...payload.npus, ...added].sort((a, b) => a.npu - b.npu || a.chip - b.chip);
  return { ...payload, npus };
}

function missingByBus(
  payload: Family910,
  installed: readonly string[],
  previous: Family910 | null,
): Npu910[] {
  const reported = new Set(payload.npus.map((npu) => busKey(npu.pcie.bus_id)));
  const known = new Map(previous?.npus.map((npu) => [busKey(npu.pcie.bus_id), npu]) ?? []);
  const taken = new Set(payload.npus.map((npu) => npu.npu));
  const pairs = new Set(payload.npus.map((npu) => `${npu.npu}/${npu.chip}`));
  return installed
    .filter((bus) => !reported.has(bus))
    .map((bus) => {
      const old = known.get(bus);
      if (old && !pairs.has(`${old.npu}/${old.chip}`)) {
        pairs.add(`${old.npu}/${old.chip}`);
        return offlineNpu(old.npu, old.chip, bus, old);
      }
      // The NPU ids follow PCI order on the nodes seen: the installed list's order is the guess.
      return offlineNpu(freeNumber(taken, installed.indexOf(bus)), 0, bus, undefined);
    });
}

function missingByNode(payload: Family910, inventory: Inventory): Npu910[] {
  if (payload.npus.some((npu) => npu.chip > 0)) return [];
  const reported = new Set(payload.npus.map((npu) => npu.npu));
  return inventory.deviceNodes
    .filter((node) => node.startsWith('davinci'))
    .map((node) => Number(node.slice('davinci'.length)))
    .filter((id) => !reported.has(id))
    .map((id) => offlineNpu(id, 0, null, undefined));
}

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

function addCards(payload: Family310, installed: readonly string[], previous: Family310 | null): Family310 {
  const reported = new Set(payload.cards.map((card) => busKey(card.bus_id)));
  const missing = installed.filter((bus) => !reported.has(bus));
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
