/** The hot path's reader of a 310P payload's `cards` (contracts/snapshot-fast-path.ts): the schema's output, by hand. */
import { READING_BOUNDS, SNAPSHOT_LIMITS, plain } from '../../contracts/fields/index.js';

const TEMPERATURE = READING_BOUNDS.temperature;
const POWER = READING_BOUNDS.power;
const MEMORY = READING_BOUNDS.memory;
const ERROR_COUNT = READING_BOUNDS.errorCount;

export function readCards(payload: plain.Fields, out: plain.Out): void {
  out.cards = plain.items(payload.cards, SNAPSHOT_LIMITS.devices, card310);
}

function card310(value: unknown): plain.Out {
  const v = plain.object(value);
  const link = v.pcie_link;
  if (link !== undefined && link !== null && link !== 0 && link !== 1) throw plain.NOT_PLAIN;
  return {
    card: plain.count(v.card),
    name: plain.stringOr(v.name, SNAPSHOT_LIMITS.id, ''),
    bus_id: plain.busId(v.bus_id),
    pcie_link: link ?? null,
    mcu_power_w: plain.reading(v.mcu_power_w, POWER),
    chips: plain.items(v.chips, SNAPSHOT_LIMITS.chips, chip310),
  };
}

function chip310(value: unknown): plain.Out {
  const v = plain.object(value);
  const ddr = plain.objectOrEmpty(v.ddr);
  const out: plain.Out = {
    chip: plain.count(v.chip),
    device_id: plain.count(v.device_id),
    health: plain.stringOr(v.health, SNAPSHOT_LIMITS.health, 'UNKNOWN'),
    temperature: plain.reading(v.temperature, TEMPERATURE),
    power_w: plain.reading(v.power_w, POWER),
    ddr: {
      used_mb: plain.reading(ddr.used_mb, MEMORY),
      total_mb: plain.reading(ddr.total_mb, MEMORY),
      ecc_sbe: plain.reading(ddr.ecc_sbe, ERROR_COUNT),
      ecc_dbe: plain.reading(ddr.ecc_dbe, ERROR_COUNT),
    },
    error_codes: plain.errorCodes(v.error_codes),
    present: plain.booleanOr(v.present, true),
  };
  if (v.readable !== undefined) out.readable = plain.boolean(v.readable);
  return out;
}
