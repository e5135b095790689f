/**
 * Completes an NVIDIA payload with the installed GPUs the tool did not report (by PCI bus id,
 * normalised), as `present: false` with every reading unknown, keeping the identity (index,
 * uuid, name) a GPU had in `previous`.
 */
import type { BusKey, InstalledDevices } from '../family.js';
import { freeNumber } from '../inventory.js';
import type { Gpu, PayloadNvidia } from './schema.js';

/** A GPU with every reading unknown: what a tool's layout and the inventory fill in. */
export function emptyGpu(index: number): Gpu {
  return {
    index,
    uuid: null,
    bus_id: null,
    name: '',
    temperature_gpu: null,
    power_draw_w: null,
    ecc_corrected_volatile: null,
    ecc_uncorrected_volatile: null,
    pcie_link_gen: null,
    pcie_link_width: null,
    xid_events: [],
    present: true,
  };
}

export function completeGpus(
  payload: PayloadNvidia,
  installed: InstalledDevices,
  previous: PayloadNvidia | null,
  busKey: BusKey,
): PayloadNvidia {
  const reported = new Set(payload.gpus.map((gpu) => busKey(gpu.bus_id)));
  const missing = installed.busIds.filter((bus) => !reported.has(bus));
  if (missing.length === 0) return payload;
  const known = new Map(previous?.gpus.map((gpu) => [busKey(gpu.bus_id), gpu]) ?? []);
  const taken = new Set(payload.gpus.map((gpu) => gpu.index));
  const added = missing.map((bus): Gpu => {
    const old = known.get(bus);
    // nvidia-smi numbers GPUs in PCI bus order: the installed list's order is the best guess.
    const index =
      old && !taken.has(old.index)
        ? freeNumber(taken, old.index)
        : freeNumber(taken, installed.busIds.indexOf(bus));
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
