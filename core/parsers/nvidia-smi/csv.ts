/**
 * `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`: columns mapped by header name;
 * without a header, by a field list (DEFAULT_QUERY_FIELDS, the list the agent runs).
 */
import type { Gpu } from '../../../contracts/index.js';
import { ParseError, excerpt, quoted } from '../../errors.js';
import {
  NO_UNIT,
  NotSnapshotError,
  boundReading,
  isNullCell,
  normaliseBusId,
  readNumber,
  requireNumber,
  splitLines,
  type OnOutOfRange,
  type Units,
} from '../common.js';
import {
  NVIDIA_SMI_EXPECTED,
  boundAndMarkUnreadable,
  emptyGpu,
  type NvidiaParseOptions,
  type NvidiaParsed,
} from './parsed.js';
import { checkNvidiaSmiToolError } from './tool-error.js';

/**
 * The `--query-gpu` fields the agent runs (`--format=csv,noheader,nounits`); a noheader file is
 * read with this list unless another is given. `count` (the driver's GPU count, the same on
 * every row) lets a GPU missing from the rows be noticed.
 */
export const DEFAULT_QUERY_FIELDS: readonly string[] = [
  'index',
  'uuid',
  'pci.bus_id',
  'name',
  'temperature.gpu',
  'power.draw',
  'ecc.errors.corrected.volatile.total',
  'ecc.errors.uncorrected.volatile.total',
  'pcie.link.gen.current',
  'pcie.link.width.current',
  'count',
];

/**
 * The agent's query before `count` was added: a noheader file of exactly this many columns,
 * read without a field list, is read with it, so an older agent's saved output still parses.
 */
const DEFAULT_QUERY_FIELDS_BEFORE_COUNT: readonly string[] = DEFAULT_QUERY_FIELDS.filter(
  (field) => field !== 'count',
);

/** Field names with a single word that a header may hold (the rest contain '.' or '_'). */
const SINGLE_WORD_FIELDS = new Set([
  'index',
  'name',
  'uuid',
  'serial',
  'count',
  'pstate',
  'timestamp',
  'hostname',
  'pid',
]);

/** A header cell read: the field name and the unit in brackets (`''` when none). */
interface HeaderCell {
  name: string;
  unit: string;
}

/** Reads a header cell (`power.draw [W]`) as its field name and unit, or null when it is not one. */
function headerCell(cell: string): HeaderCell | null {
  const match = /^([a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)*)(?:\s*\[([^\]]*)\])?$/.exec(cell.trim());
  if (!match?.[1]) return null;
  const name = match[1];
  if (!(name.includes('.') || name.includes('_') || SINGLE_WORD_FIELDS.has(name))) return null;
  return { name, unit: match[2] ?? '' };
}

function headerField(cell: string): string | null {
  return headerCell(cell)?.name ?? null;
}

/**
 * The units nvidia-smi prints for a `--query-gpu` field (`''` for none, as `nounits` prints
 * every value), for the fields whose unit is known; undefined for the rest. A unit is what
 * tells a temperature from a memory size when a field list does not match the columns.
 */
function csvFieldUnits(field: string): Units | undefined {
  if (field.startsWith('temperature.')) return ['', 'C'];
  if (field.startsWith('power.') || field.endsWith('.power.limit')) return ['', 'W'];
  if (field.startsWith('memory.')) return ['', 'MiB'];
  if (field.startsWith('utilization.') || field === 'fan.speed') return ['', '%'];
  if (field.startsWith('clocks.')) return ['', 'MHz'];
  if (field.startsWith('pcie.link.width.')) return ['', 'x'];
  if (field.startsWith('ecc.errors.') || field.startsWith('pcie.link.gen.')) return NO_UNIT;
  if (field === 'index' || field === 'count') return NO_UNIT;
  return undefined;
}

/** Refuses a header whose unit does not belong to its field (`temperature.gpu [MiB]`). */
function checkHeaderUnits(cells: readonly string[], line: number): void {
  for (const cell of cells) {
    const header = headerCell(cell);
    if (header === null || header.unit === '') continue;
    const units = csvFieldUnits(canonicalField(header.name));
    if (units !== undefined && !units.includes(header.unit))
      throw new ParseError(
        `${excerpt(header.name, 60)}: the header gives the unit ${quoted(header.unit)}; expected ${units.filter((u) => u !== '').join(' or ') || 'none'}`,
        line,
      );
  }
}

function csvCells(line: string): string[] {
  return line.split(',').map((cell) => cell.trim());
}

/** True when the line looks like a `--query-*` CSV header. */
export function isCsvHeader(line: string): boolean {
  const cells = csvCells(line);
  return (
    cells.length >= 1 &&
    line.includes(',') === cells.length > 1 &&
    cells.every((cell) => headerField(cell) !== null)
  );
}

/** Aliases: `--query-gpu` accepts both spellings, and the header prints the one asked for. */
const FIELD_ALIASES: Record<string, string> = {
  gpu_name: 'name',
  gpu_bus_id: 'pci.bus_id',
  gpu_uuid: 'uuid',
  'temperature.gpu.current': 'temperature.gpu',
  'power.draw.instant': 'power.draw',
  'pcie.link.gen.gpucurrent': 'pcie.link.gen.current',
};

function canonicalField(name: string): string {
  return FIELD_ALIASES[name] ?? name;
}

/**
 * Fills one GPU from a CSV row: `where.order` is its index when the row prints none, and
 * `where.line` names the row in errors.
 */
function gpuFromCsv(
  fields: readonly string[],
  cells: readonly string[],
  where: { order: number; line: number },
  onOutOfRange: OnOutOfRange | undefined,
): Gpu {
  const { order, line } = where;
  const byName = new Map<string, string>();
  fields.forEach((field, i) => {
    const key = canonicalField(field);
    const cell = cells[i] ?? '';
    if (!byName.has(key)) byName.set(key, cell);
    // A number in another unit than its field's means the columns are not the fields they are
    // read as (a wrong --fields list), even in a column the snapshot does not use.
    const units = csvFieldUnits(key);
    if (units !== undefined && readNumber(cell) != null) requireNumber(cell, key, line, units);
  });
  const num = (key: string): number | null => {
    const text = byName.get(key);
    return text === undefined ? null : requireNumber(text, key, line, csvFieldUnits(key) ?? NO_UNIT);
  };
  const text = (key: string): string | null => {
    const value = byName.get(key);
    return value === undefined || isNullCell(value) ? null : value;
  };
  const gpu = emptyGpu(num('index') ?? order);
  gpu.uuid = text('uuid');
  const bus = text('pci.bus_id');
  gpu.bus_id = bus === null ? null : (normaliseBusId(bus) ?? bus);
  gpu.name = text('name') ?? '';
  gpu.temperature_gpu = num('temperature.gpu');
  // An instant draw out of range gives way to the average, when both were queried.
  gpu.power_draw_w =
    boundReading(num('power.draw'), 'power_draw_w', onOutOfRange) ?? num('power.draw.average');
  gpu.ecc_corrected_volatile = num('ecc.errors.corrected.volatile.total');
  gpu.ecc_uncorrected_volatile = num('ecc.errors.uncorrected.volatile.total');
  gpu.pcie_link_gen = num('pcie.link.gen.current');
  gpu.pcie_link_width = num('pcie.link.width.current');
  return boundAndMarkUnreadable(
    gpu,
    HEALTH_FIELDS.map((field) => byName.get(field)),
    onOutOfRange,
  );
}

/** `2026/07/03 22:22:27.377` (the `timestamp` field) as ISO, read as UTC like every tool time. */
function csvTimestamp(text: string | undefined): string | null {
  const match = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?$/.exec(text?.trim() ?? '');
  if (!match) return null;
  const [, y, mo, d, h, mi, s, frac = ''] = match;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}Z`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** CSV fields that carry a health metric of the snapshot (at least one must be queried). */
const HEALTH_FIELDS: readonly string[] = [
  'temperature.gpu',
  'power.draw',
  'power.draw.average',
  'ecc.errors.corrected.volatile.total',
  'ecc.errors.uncorrected.volatile.total',
  'pcie.link.gen.current',
  'pcie.link.width.current',
];

/**
 * When the `count` field was queried, every row says how many GPUs the driver has: fewer rows
 * means the output was cut at a row boundary (or a GPU is missing from it), and the missing
 * GPUs must not pass unnoticed: refused, unless `allowMissing` (the caller checks the count
 * returned). More rows than the count is never a valid output. Returns the count, or null.
 */
function checkCsvCount(
  lines: readonly string[],
  names: readonly string[],
  rows: { count: number; from: number },
  allowMissing: boolean,
): number | null {
  const column = names.indexOf('count');
  if (column < 0) return null;
  for (let i = rows.from; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '') continue;
    const count = requireNumber(csvCells(line)[column] ?? '', 'count', i + 1, NO_UNIT);
    if (count !== null && (count < rows.count || (count > rows.count && !allowMissing))) {
      const why = count < rows.count ? 'the rows are not one per GPU' : 'the output is cut short';
      throw new ParseError(
        `count says ${count} GPUs but ${rows.count} GPU row${rows.count === 1 ? '' : 's'} found: ${why}`,
        i + 1,
      );
    }
    return count;
  }
  return null;
}

/**
 * Parses `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`. With a header the
 * columns are mapped by name (units such as ` [W]`, ` %`, ` MiB` stripped; `[N/A]`, `N/A`,
 * `[Not Supported]`, `ERR!` read as null); without one, by `fields` (default
 * DEFAULT_QUERY_FIELDS). A row whose column count differs is a ParseError naming its line.
 * Printed units are checked against their field, in the header and in every value
 * (`81920 MiB` under `temperature.gpu` is a wrong field list, not a hot GPU), and when the
 * `count` field is queried the rows must number as many GPUs as it says (fewer only with
 * `allowMissingGpus`). Without a field list, a noheader file one column short of
 * DEFAULT_QUERY_FIELDS is read as the older agent query without `count`.
 */
export function parseNvidiaCsv(
  text: string,
  fields?: readonly string[],
  options: NvidiaParseOptions = {},
): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const start = lines.findIndex((line) => line.trim() !== '');
  if (start < 0) throw new ParseError('empty nvidia-smi output', 1);
  const first = lines[start] ?? '';
  const hasHeader = isCsvHeader(first);
  if (hasHeader) checkHeaderUnits(csvCells(first), start + 1);
  const names = hasHeader
    ? csvCells(first).map((cell) => headerField(cell) ?? cell)
    : [...(fields ?? defaultFields(first))];
  if (hasHeader && names.includes('pid')) {
    throw new NotSnapshotError(
      '`nvidia-smi --query-compute-apps` (per-process memory)',
      NVIDIA_SMI_EXPECTED,
      start + 1,
    );
  }
  if (!names.some((name) => HEALTH_FIELDS.includes(name))) {
    // Without one health column every GPU would read as null metrics, which CONTRACT §1
    // defines as fallen off the bus: refuse rather than report a healthy node as failed.
    throw new ParseError(
      'the CSV has no health field (temperature.gpu, power.draw, ecc.errors.*.volatile.total, pcie.link.*.current): every GPU would read as off the bus',
      start + 1,
    );
  }
  const gpus: Gpu[] = [];
  let timestamp: string | null = null;
  let driver: string | undefined;
  for (let i = hasHeader ? start + 1 : start; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '') continue;
    const cells = csvCells(line);
    if (cells.length !== names.length) {
      const source = hasHeader ? 'the header' : `the field list (${excerpt(names.join(','), 200)})`;
      throw new ParseError(`row has ${cells.length} columns but ${source} has ${names.length}`, i + 1);
    }
    gpus.push(gpuFromCsv(names, cells, { order: gpus.length, line: i + 1 }, options.onOutOfRange));
    timestamp ??= csvTimestamp(cells[names.indexOf('timestamp')]);
    const version = cells[names.indexOf('driver_version')];
    if (names.includes('driver_version') && version && !isNullCell(version)) driver ??= version;
  }
  if (gpus.length === 0) throw new ParseError('the CSV has a header but no GPU rows', start + 1);
  const rows = { count: gpus.length, from: hasHeader ? start + 1 : start };
  const driverCount = checkCsvCount(lines, names, rows, options.allowMissingGpus === true);
  return {
    payload: { family: 'nvidia', ...(driver === undefined ? {} : { driver_version: driver }), gpus },
    timestamp,
    driverCount,
  };
}

/** The field list of a noheader file given none: the agent's, or its older list by column count. */
function defaultFields(firstRow: string): readonly string[] {
  return csvCells(firstRow).length === DEFAULT_QUERY_FIELDS_BEFORE_COUNT.length
    ? DEFAULT_QUERY_FIELDS_BEFORE_COUNT
    : DEFAULT_QUERY_FIELDS;
}
