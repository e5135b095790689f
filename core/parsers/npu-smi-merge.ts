/**
 * Completes an `npu-smi info` table with what only the per-device `npu-smi info -t <type>`
 * outputs show: the fault codes and health of `-t health`, the ECC counters of `-t ecc`, the
 * 310P card power of `-t power` / `-t common`. The table alone carries none of them, and
 * without them an npu-smi based agent could see neither an ECC storm nor a fault code.
 *
 * Pure: the agent runs the tools and passes the records in, each with the NPU (`-i`) and chip
 * (`-c`) it asked for, since `-t health` prints neither.
 */
import type { Card310, Chip310, Npu910 } from '../../contracts/index.js';
import { NpuFaultError } from '../errors.js';
import type { NpuSmiInfoRecord, NpuSmiTablePayload } from './npu-smi.js';

/** One `-t` record and the device it was asked for. */
export interface NpuSmiDetail {
  /** The `-i` NPU id. */
  npu: number;
  /** The `-c` chip id (0 when the command named no chip). */
  chip?: number;
  record: NpuSmiInfoRecord;
}

/** A detail that names a device the table does not have. */
export class UnknownDeviceError extends NpuFaultError {
  constructor(npu: number, chip: number, type: string) {
    super('unknown_device', `npu-smi info -t ${type}: NPU ${npu} chip ${chip} is not in the device table`);
  }
}

/** Returns a copy of `payload` with every detail applied; the input is not changed. */
export function mergeNpuSmiDetails(
  payload: NpuSmiTablePayload,
  details: readonly NpuSmiDetail[],
): NpuSmiTablePayload {
  if (payload.family === '910B') {
    const npus = payload.npus.map((npu) => structuredClone(npu));
    for (const detail of details) apply910(find910(npus, detail), detail.record);
    return { ...payload, npus };
  }
  const cards = payload.cards.map((card) => structuredClone(card));
  for (const detail of details) apply310(cards, detail);
  return { ...payload, cards };
}

function find910(npus: Npu910[], detail: NpuSmiDetail): Npu910 {
  const chip = detail.chip ?? 0;
  const found = npus.find((n) => n.npu === detail.npu && n.chip === chip);
  if (!found) throw new UnknownDeviceError(detail.npu, chip, detail.record.type);
  return found;
}

function apply910(npu: Npu910, record: NpuSmiInfoRecord): void {
  if (record.type === 'health') {
    if (record.health !== null) npu.health = record.health;
    npu.error_codes = [...record.errorCodes];
  }
  if (record.ecc) {
    // "Error Count" is since driver load (what §1 means by cumulative); "Aggregate" is lifetime.
    npu.hbm.ecc.single_bit = record.ecc.hbmSingleBit;
    npu.hbm.ecc.double_bit = record.ecc.hbmDoubleBit;
  }
}

function apply310(cards: Card310[], detail: NpuSmiDetail): void {
  const { record } = detail;
  const card = cards.find((c) => c.card === detail.npu);
  if (!card) throw new UnknownDeviceError(detail.npu, detail.chip ?? 0, record.type);
  // Card-level: the MCU's power, whichever output reported it.
  if (record.mcuPowerW !== null) card.mcu_power_w = record.mcuPowerW;
  for (const [chipId, temperature] of Object.entries(record.chipTemperatures)) {
    const chip = card.chips.find((c) => c.chip === Number(chipId));
    if (chip && temperature !== null) chip.temperature = temperature;
  }
  if (record.type !== 'health' && !record.ecc) return;
  const chip = findChip(card, detail);
  if (record.type === 'health') {
    if (record.health !== null) chip.health = record.health;
    chip.error_codes = [...record.errorCodes];
  }
  if (record.ecc) {
    chip.ddr.ecc_sbe = record.ecc.ddrSingleBit;
    chip.ddr.ecc_dbe = record.ecc.ddrDoubleBit;
  }
}

function findChip(card: Card310, detail: NpuSmiDetail): Chip310 {
  const chip = detail.chip ?? 0;
  const found = card.chips.find((c) => c.chip === chip);
  if (!found) throw new UnknownDeviceError(detail.npu, chip, detail.record.type);
  return found;
}
