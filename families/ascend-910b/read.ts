/** The hot path's reader of a 910B payload's `npus` (contracts/snapshot-fast-path.ts): the schema's output, by hand. */
import { READING_BOUNDS, SNAPSHOT_LIMITS, plain } from '../../contracts/fields/index.js';

const TEMPERATURE = READING_BOUNDS.temperature;
const POWER = READING_BOUNDS.power;
const MEMORY = READING_BOUNDS.memory;
const UTILISATION = READING_BOUNDS.utilisation;
const ERROR_COUNT = READING_BOUNDS.errorCount;

export function readNpus(payload: plain.Fields, out: plain.Out): void {
  out.npus = plain.items(payload.npus, SNAPSHOT_LIMITS.devices, npu910);
}

function npu910(value: unknown): plain.Out {
  const v = plain.object(value);
  const out: plain.Out = { npu: plain.count(v.npu), chip: v.chip === undefined ? 0 : plain.count(v.chip) };
  if (v.phy_id !== undefined) out.phy_id = v.phy_id === null ? null : plain.count(v.phy_id);
  out.name = plain.stringOr(v.name, SNAPSHOT_LIMITS.id, '');
  out.health = plain.stringOr(v.health, SNAPSHOT_LIMITS.health, 'UNKNOWN');
  out.temp_c = plain.reading(v.temp_c, TEMPERATURE);
  out.power_w = plain.reading(v.power_w, POWER);
  out.aicore_pct = plain.reading(v.aicore_pct, UTILISATION);
  const hbm = plain.objectOrEmpty(v.hbm);
  const ecc = plain.objectOrEmpty(hbm.ecc);
  out.hbm = {
    used_mb: plain.reading(hbm.used_mb, MEMORY),
    total_mb: plain.reading(hbm.total_mb, MEMORY),
    temp_c: plain.reading(hbm.temp_c, TEMPERATURE),
    ecc: {
      single_bit: plain.reading(ecc.single_bit, ERROR_COUNT),
      double_bit: plain.reading(ecc.double_bit, ERROR_COUNT),
    },
  };
  const pcie = plain.objectOrEmpty(v.pcie);
  const link = pcie.link;
  if (link !== undefined && link !== null && link !== 'up' && link !== 'down') throw plain.NOT_PLAIN;
  out.pcie = { bus_id: plain.busId(pcie.bus_id), link: link ?? null };
  out.error_codes = plain.errorCodes(v.error_codes);
  out.present = plain.booleanOr(v.present, true);
  if (v.readable !== undefined) out.readable = plain.boolean(v.readable);
  return out;
}
