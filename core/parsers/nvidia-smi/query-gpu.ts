/**
 * One GPU read from its `-q` block or `<gpu>` element (both forms give the same tree), and the
 * driver's `Attached GPUs` count every complete output must match.
 */
import type { Gpu } from '../../../contracts/index.js';
import { ParseError } from '../../errors.js';
import {
  NO_UNIT,
  boundReading,
  ctimeToIso,
  isNullCell,
  normaliseBusId,
  requireNumber,
  type OnOutOfRange,
} from '../common.js';
import { PRINTED_UNITS, boundAndMarkUnreadable, emptyGpu, type NvidiaParsed } from './parsed.js';
import { at, child, numAt, type QNode } from './query-tree.js';

/** Sums the volatile ECC counters matching `pattern`; null when none of them has a value. */
function sumCounters(volatile: QNode | undefined, pattern: RegExp): number | null {
  let total: number | null = null;
  for (const node of volatile?.children ?? []) {
    if (!pattern.test(node.id)) continue;
    const value = node.value === null ? null : requireNumber(node.value, node.key, node.line, NO_UNIT);
    if (value !== null && value >= 0) total = (total ?? 0) + value;
  }
  return total;
}

/** Volatile ECC totals: `Single Bit/Double Bit > Total` (pre-Ampere) or SRAM/DRAM counters. */
function readEcc(gpu: QNode): { corrected: number | null; uncorrected: number | null } {
  const volatile = child(child(gpu, 'ecc errors'), 'volatile');
  const single = child(volatile, 'single bit');
  if (single) {
    return {
      corrected: numAt(single, PRINTED_UNITS.count, ['total']),
      uncorrected: numAt(child(volatile, 'double bit'), PRINTED_UNITS.count, ['total']),
    };
  }
  return {
    corrected: sumCounters(volatile, /^(sram|dram) correctable$/),
    uncorrected: sumCounters(volatile, /^(sram|dram) uncorrectable/),
  };
}

/** The power keys of `-q`, newest spelling first (the first with a value is the draw). */
const POWER_KEYS = ['power draw', 'instantaneous power draw', 'instant power draw', 'average power draw'];

/** The first power reading within bounds; one out of range is told and gives way to the next. */
function readPower(gpu: QNode, onOutOfRange: OnOutOfRange | undefined): number | null {
  const section = child(gpu, 'gpu power readings', 'power readings');
  for (const key of POWER_KEYS) {
    const value = boundReading(numAt(section, PRINTED_UNITS.power, [key]), 'power_draw_w', onOutOfRange);
    if (value !== null) return value;
  }
  return null;
}

/** One GPU from its `-q` block or `<gpu>` element. */
export function gpuFromTree(
  node: QNode,
  index: number,
  busText: string,
  onOutOfRange: OnOutOfRange | undefined,
): Gpu {
  const gpu = emptyGpu(index);
  const uuid = at(node, ['gpu uuid', 'uuid']);
  gpu.uuid = uuid === undefined || isNullCell(uuid) ? null : uuid;
  gpu.bus_id = normaliseBusId(busText) ?? at(node, ['pci'], ['bus id', 'pci bus id']) ?? null;
  gpu.name = at(node, ['product name']) ?? '';
  gpu.temperature_gpu = numAt(
    node,
    PRINTED_UNITS.temperature,
    ['temperature'],
    ['gpu current temp', 'gpu temp'],
  );
  gpu.power_draw_w = readPower(node, onOutOfRange);
  const ecc = readEcc(node);
  gpu.ecc_corrected_volatile = ecc.corrected;
  gpu.ecc_uncorrected_volatile = ecc.uncorrected;
  const link = child(child(node, 'pci'), 'gpu link info', 'pci gpu link info');
  gpu.pcie_link_gen = numAt(link, NO_UNIT, ['pcie generation', 'pcie gen'], ['current', 'current link gen']);
  gpu.pcie_link_width = numAt(
    link,
    PRINTED_UNITS.linkWidth,
    ['link width', 'link widths'],
    ['current', 'current link width'],
  );
  return boundAndMarkUnreadable(gpu, metricTexts(node, link), onOutOfRange);
}

/** The texts `-q` printed for the health metrics of one GPU (those it printed at all). */
function metricTexts(gpu: QNode, link: QNode | undefined): Array<string | null | undefined> {
  const power = child(gpu, 'gpu power readings', 'power readings');
  const volatile = child(child(gpu, 'ecc errors'), 'volatile');
  return [
    at(gpu, ['temperature'], ['gpu current temp', 'gpu temp']),
    ...POWER_KEYS.map((key) => at(power, [key])),
    ...(volatile?.children ?? []).flatMap((node) => [node.value, ...node.children.map((c) => c.value)]),
    at(link, ['pcie generation', 'pcie gen'], ['current', 'current link gen']),
    at(link, ['link width', 'link widths'], ['current', 'current link width']),
  ];
}

export function withDriver(
  gpus: Gpu[],
  driver: string | undefined,
  timestamp: string | undefined,
  driverCount: number | null,
): NvidiaParsed {
  const base = driver === undefined || isNullCell(driver) ? {} : { driver_version: driver };
  return {
    payload: { family: 'nvidia', ...base, gpus },
    timestamp: timestamp === undefined ? null : ctimeToIso(timestamp),
    driverCount,
  };
}

/**
 * Refuses an output whose `Attached GPUs` count (the driver's device count, printed by `-q`
 * and `-q -x` before the GPU blocks) differs from the GPU blocks found. A missing GPU is the
 * fault this detector exists to catch, and the blocks that are missing cannot be told apart
 * (no bus id, no uuid), so they cannot be sent as `present: false` either: the whole output
 * is refused, and the agent reports a failed collection instead of a smaller healthy node.
 * This also refuses `-q -i <id>` outputs, which print the full count and one GPU: the agent
 * never queries one GPU, and a snapshot must hold every GPU of its node. With `allowMissing`
 * fewer blocks than the count pass (the caller compares the count returned with its
 * inventory); more never do. Returns the count, or null when it reads N/A.
 */
export function checkAttachedGpus(
  count: QNode | undefined,
  found: { blocks: number; what: string; fallbackLine: number },
  allowMissing: boolean,
): number | null {
  const { blocks, what } = found;
  if (count === undefined)
    throw new ParseError(
      `no 'Attached GPUs' count before the GPU ${what}s: a GPU missing from this output could not be noticed`,
      found.fallbackLine,
    );
  const attached = count.value === null ? null : requireNumber(count.value, count.key, count.line, NO_UNIT);
  if (attached === null || attached === blocks || (allowMissing && attached > blocks)) return attached;
  throw new ParseError(
    `Attached GPUs says ${attached} but ${blocks} GPU ${what}${blocks === 1 ? '' : 's'} found: the output is cut short or was taken with -i, and a snapshot must hold every GPU`,
    count.line,
  );
}
