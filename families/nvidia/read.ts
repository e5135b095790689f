/** The hot path's reader of an NVIDIA payload's `gpus` (contracts/snapshot-fast-path.ts): the schema's output, by hand. */
import { READING_BOUNDS, SNAPSHOT_LIMITS, plain } from '../../contracts/fields/index.js';

const TEMPERATURE = READING_BOUNDS.temperature;
const POWER = READING_BOUNDS.power;
const PCIE_GENERATION = READING_BOUNDS.pcieGeneration;
const PCIE_WIDTH = READING_BOUNDS.pcieWidth;
const ERROR_COUNT = READING_BOUNDS.errorCount;
const XID = READING_BOUNDS.xid;

export function readGpus(payload: plain.Fields, out: plain.Out): void {
  out.gpus = plain.items(payload.gpus, SNAPSHOT_LIMITS.devices, gpu);
}

function gpu(value: unknown): plain.Out {
  const v = plain.object(value);
  const out: plain.Out = {
    index: plain.count(v.index),
    uuid: v.uuid === undefined || v.uuid === null ? null : plain.string(v.uuid, 0, SNAPSHOT_LIMITS.id),
    bus_id: plain.busId(v.bus_id),
    name: plain.stringOr(v.name, SNAPSHOT_LIMITS.id, ''),
    temperature_gpu: plain.reading(v.temperature_gpu, TEMPERATURE),
    power_draw_w: plain.reading(v.power_draw_w, POWER),
    ecc_corrected_volatile: plain.reading(v.ecc_corrected_volatile, ERROR_COUNT),
    ecc_uncorrected_volatile: plain.reading(v.ecc_uncorrected_volatile, ERROR_COUNT),
    pcie_link_gen: plain.reading(v.pcie_link_gen, PCIE_GENERATION),
    pcie_link_width: plain.reading(v.pcie_link_width, PCIE_WIDTH),
    xid_events:
      v.xid_events === undefined ? [] : plain.items(v.xid_events, SNAPSHOT_LIMITS.xidEvents, xidEvent),
    present: plain.booleanOr(v.present, true),
  };
  if (v.readable !== undefined) out.readable = plain.boolean(v.readable);
  return out;
}

function xidEvent(value: unknown): plain.Out {
  const v = plain.object(value);
  const xid = plain.count(v.xid);
  if (xid < XID.min || xid > XID.max) throw plain.NOT_PLAIN;
  return { xid, at: v.at === undefined || v.at === null ? null : plain.datetime(v.at) };
}
