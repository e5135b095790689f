/**
 * What every nvidia-smi layout's parser returns, and the GPU each of them fills in.
 *
 * A GPU the tool lists but reads nothing of (every health metric a plain "not available":
 * `N/A`, `[N/A]`, `[Not Supported]`, as nvidia-smi prints in some vGPU guests) comes back with
 * `readable: false`, so it is not taken for a GPU off the bus. A GPU whose cells are error
 * spellings (`ERR!`, `[Unknown Error]`) keeps null metrics without the flag: that is how a GPU
 * in trouble reads, and the contract's off-the-bus rule applies to it.
 *
 * A number outside what hardware can report (READING_BOUNDS: a temperature of 4294967295) is
 * read as null and told to `onOutOfRange`; a GPU whose every number was such, the rest plain
 * "not available", is `readable: false` too: nothing of it could be read.
 */
import type { Gpu } from '../../../contracts/index.js';
import { emptyGpu } from '../../../families/index.js';
import {
  DEVICE_READINGS,
  NO_UNIT,
  boundDeviceReadings,
  readNumber,
  type OnOutOfRange,
  type ReadingOptions,
  type Units,
} from '../common.js';

/** The nvidia payload plus the time the output says it was taken (ISO), when it says one. */
export interface NvidiaParsed {
  payload: { family: 'nvidia'; driver_version?: string; gpus: Gpu[] };
  timestamp: string | null;
  /**
   * How many GPUs the driver has, as the output says (the CSV `count` field, `-q`'s
   * `Attached GPUs`); null when it does not say (the table, a CSV without `count`). More than
   * `payload.gpus.length` only with `allowMissingGpus`: GPUs the driver has that no row lists.
   */
  driverCount: number | null;
}

/** How strictly the parsers read, and where numbers out of range are told. */
export interface NvidiaParseOptions extends ReadingOptions {
  /**
   * When the driver's count says more GPUs than the output lists, return the GPUs listed
   * (with `driverCount`) instead of refusing the output as cut short. For the agent, which
   * tells the missing GPUs by its inventory; `parse` of a saved file keeps refusing.
   */
  allowMissingGpus?: boolean;
}

/** What `parse --from nvidia-smi` accepts, for error messages. */
export const NVIDIA_SMI_EXPECTED =
  'parse --from nvidia-smi expects `nvidia-smi --query-gpu=... --format=csv`, `nvidia-smi -q` (text or -x XML) or the default `nvidia-smi` table';

/** A GPU with every metric null: the base every layout fills in (the family's own). */
export { emptyGpu };

/** Cells that say the tool has no value for a field (not that reading it failed). */
const NOT_AVAILABLE = new Set(['NA', 'N/A', '[N/A]', '[Not Supported]', 'Not Supported', '-', '--']);

/**
 * Reads `gpu`'s out-of-range numbers as null (boundDeviceReadings), then marks it
 * `readable: false` when the tool listed it (it has a uuid or bus id) and every health metric
 * it printed for it (`texts`, at least one) is a plain "not available", the vGPU guest's N/A
 * row, or a number that was no reading (out of range: every metric is then null). Any error
 * spelling or reading among them leaves the GPU as it is.
 */
export function boundAndMarkUnreadable(
  gpu: Gpu,
  texts: ReadonlyArray<string | null | undefined>,
  onOutOfRange: OnOutOfRange | undefined,
): Gpu {
  boundDeviceReadings(gpu, DEVICE_READINGS.gpu, onOutOfRange);
  const printed = texts.filter((text): text is string => text !== null && text !== undefined);
  const listed = gpu.uuid !== null || gpu.bus_id !== null;
  const nothingRead = DEVICE_READINGS.gpu.every((field) => gpu[field] === null);
  const unread = (text: string): boolean =>
    NOT_AVAILABLE.has(text.trim()) || (nothingRead && typeof readNumber(text) === 'number');
  if (listed && printed.length > 0 && printed.every(unread)) gpu.readable = false;
  return gpu;
}

/** Units nvidia-smi prints after the values of `-q`, `-q -x` and the table; bare numbers pass. */
export const PRINTED_UNITS = {
  temperature: ['', 'C'],
  power: ['', 'W'],
  linkWidth: ['', 'x'],
  count: NO_UNIT,
} as const satisfies Record<string, Units>;
