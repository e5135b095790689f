/**
 * Test support for the collectors: nvidia-smi `--query-gpu` rows written for whatever field
 * list the collector asks for (so tests follow DEFAULT_QUERY_FIELDS as it grows).
 */

/** The values of one GPU's row by query field; fields not given print `[N/A]`. */
export type GpuRowValues = Record<string, string>;

/** A healthy H100's row values; `overrides` replace any. */
export function gpuRowValues(index: number, overrides: GpuRowValues = {}): GpuRowValues {
  return {
    index: String(index),
    uuid: `GPU-${index}a`,
    'pci.bus_id': `00000000:${(0x19 + index * 0x22).toString(16).toUpperCase().padStart(2, '0')}:00.0`,
    name: 'NVIDIA H100 80GB HBM3',
    'temperature.gpu': String(34 + index),
    'power.draw': '71.20',
    'ecc.errors.corrected.volatile.total': '0',
    'ecc.errors.uncorrected.volatile.total': '0',
    'pcie.link.gen.current': '5',
    'pcie.link.width.current': '16',
    ...overrides,
  };
}

/** One `--format=csv,noheader,nounits` row of `fields`. */
export function nvidiaQueryRow(fields: readonly string[], values: GpuRowValues): string {
  return fields.map((field) => values[field] ?? '[N/A]').join(', ');
}

/** The bus id `gpuRowValues(index)` gives, normalised as the payload carries it. */
export function gpuBusId(index: number): string {
  return `0000:${(0x19 + index * 0x22).toString(16).toUpperCase().padStart(2, '0')}:00.0`;
}

/** nvidia-smi's message for a GPU it cannot reach. */
export function lostGpuLine(busId: string): string {
  return `Unable to determine the device handle for GPU ${busId}: GPU is lost.  Reboot the system to recover this GPU`;
}
