/**
 * Parsers of `nvidia-smi` output into the nvidia payload (`gpus[]`):
 *
 * - `--query-gpu=... --format=csv[,noheader][,nounits]`: columns mapped by header name; without
 *   a header, by a field list (DEFAULT_QUERY_FIELDS, the list the agent runs).
 * - `-q` text and `-q -x` XML: both read into one small tree, then the same lookups (with the
 *   two spellings of each key) pick the fields. No XML dependency: the tool's XML is regular.
 * - the default table, old (pre-525) and new layouts, MIG blocks and `ERR!` cells.
 *
 * Tool failures (`GPU is lost`, NVML not loaded) throw ToolError with the lost bus ids.
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
import type { Gpu } from '../../contracts/index.js';
import { ParseError, excerpt, quoted } from '../errors.js';
import {
  DEVICE_READINGS,
  NO_UNIT,
  NotSnapshotError,
  ToolError,
  boundDeviceReadings,
  boundReading,
  ctimeToIso,
  firstContentLine,
  isBlank,
  isNullCell,
  normaliseBusId,
  readNumber,
  requireNumber,
  splitLines,
  words,
  type OnOutOfRange,
  type ReadingOptions,
  type Units,
} from './common.js';

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

/** What `parse --from nvidia-smi` accepts, for error messages. */
export const NVIDIA_SMI_EXPECTED =
  'parse --from nvidia-smi expects `nvidia-smi --query-gpu=... --format=csv`, `nvidia-smi -q` (text or -x XML) or the default `nvidia-smi` table';

/** A GPU with every metric null: the base every layout fills in. */
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

/** Cells that say the tool has no value for a field (not that reading it failed). */
const NOT_AVAILABLE = new Set(['NA', 'N/A', '[N/A]', '[Not Supported]', 'Not Supported', '-', '--']);

/**
 * Reads `gpu`'s out-of-range numbers as null (boundDeviceReadings), then marks it
 * `readable: false` when the tool listed it (it has a uuid or bus id) and every health metric
 * it printed for it (`texts`, at least one) is a plain "not available", the vGPU guest's N/A
 * row, or a number that was no reading (out of range: every metric is then null). Any error
 * spelling or reading among them leaves the GPU as it is.
 */
function boundAndMarkUnreadable(
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

// ---------------------------------------------------------------------------------------------
// Tool errors

/**
 * Throws a ToolError when the output is nvidia-smi's failure message rather than data. Lost
 * GPUs (`Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost`) are all
 * collected so the agent can mark each of them off the bus.
 */
export function checkNvidiaSmiToolError(lines: readonly string[]): void {
  const lost: string[] = [];
  let first: { line: number; text: string } | undefined;
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    const handle = lostHandleBusId(line);
    const fatal =
      handle !== null ||
      /GPU is lost/i.test(line) ||
      /^NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/.test(line) ||
      /^Failed to initialize NVML/.test(line) ||
      /^Unknown Error$/.test(line) ||
      /^No devices were found$/.test(line);
    if (!fatal) continue;
    first ??= { line: index + 1, text: line };
    const bus = handle ? normaliseBusId(handle) : null;
    if (bus !== null) lost.push(bus);
  }
  if (first)
    throw new ToolError(`nvidia-smi failed: ${excerpt(words(first.text).join(' '))}`, first.line, lost);
}

const LOST_HANDLE = 'Unable to determine the device handle for GPU';

/**
 * The bus id of `Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost`
 * (with or without the blank after `GPU`), or null when the line is not that message. Read by
 * scanning: the id is the run of hex digits, colons and dots, up to its last colon.
 */
function lostHandleBusId(line: string): string | null {
  if (!line.startsWith(LOST_HANDLE)) return null;
  const rest = line.slice(LOST_HANDLE.length).trimStart();
  let end = 0;
  while (end < rest.length && /[0-9A-Fa-f:.]/.test(rest[end] ?? '')) end++;
  const colon = rest.lastIndexOf(':', end - 1);
  return colon > 0 ? rest.slice(0, colon) : null;
}

// ---------------------------------------------------------------------------------------------
// CSV (--query-gpu)

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

// ---------------------------------------------------------------------------------------------
// -q text and -q -x XML, read into one tree

/** One node of the `-q` tree (a section or a `key : value`), or of the XML document. */
export interface QNode {
  key: string;
  /** `key` as lookups compare it (keyOf), computed once: a key may be a 5 MB line. */
  id: string;
  value: string | null;
  attrs: Record<string, string>;
  line: number;
  children: QNode[];
}

/** Keys compared case- and separator-insensitively, so `GPU Current Temp` ~ `gpu_current_temp`. */
function keyOf(text: string): string {
  return text
    .toLowerCase()
    .split(/[\s_]/)
    .filter((word) => word !== '')
    .join(' ');
}

function child(node: QNode | undefined, ...aliases: string[]): QNode | undefined {
  if (!node) return undefined;
  for (const alias of aliases) {
    const found = node.children.find((c) => c.id === alias);
    if (found) return found;
  }
  return undefined;
}

/** Follows a path of alias lists to a node. */
function nodeAt(node: QNode | undefined, ...path: string[][]): QNode | undefined {
  let current = node;
  for (const aliases of path) current = child(current, ...aliases);
  return current;
}

/** Follows a path of alias lists; returns the node's value or undefined. */
function at(node: QNode | undefined, ...path: string[][]): string | undefined {
  return nodeAt(node, ...path)?.value ?? undefined;
}

/**
 * A numeric value in one of `units`: absent or NA is null; anything else that is not such a
 * number names its line (a decimal comma, a value in another unit).
 */
function numAt(node: QNode | undefined, units: Units, ...path: string[][]): number | null {
  const found = nodeAt(node, ...path);
  return found?.value == null ? null : requireNumber(found.value, found.key, found.line, units);
}

/** Units of the values read from `-q` text and XML: the tool prints them; bare numbers pass. */
const Q_UNITS = {
  temperature: ['', 'C'],
  power: ['', 'W'],
  linkWidth: ['', 'x'],
  count: NO_UNIT,
} as const satisfies Record<string, Units>;

/**
 * `key : value` of one `-q` line (already trimmed): the key ends at the first colon that has a
 * blank before it and a blank or the end after it (`Bus Id : 00000000:19:00.0`); null when
 * there is none (a section title such as `PCI`). Found by scanning the colons, never by a
 * `^(.+?)\s+:` pattern, which backtracks quadratically on a long line of blanks.
 */
function qKeyValue(text: string): { key: string; value: string } | null {
  for (let colon = text.indexOf(':'); colon >= 0; colon = text.indexOf(':', colon + 1)) {
    if (colon < 2 || !isBlank(text[colon - 1] ?? '')) continue;
    const after = text[colon + 1];
    if (after !== undefined && !isBlank(after)) continue;
    const key = text.slice(0, colon).trimEnd();
    if (key !== '') return { key, value: text.slice(colon + 1).trim() };
  }
  return null;
}

/** Reads `nvidia-smi -q` text into a tree by indentation. */
function readQTree(lines: readonly string[]): QNode {
  const root: QNode = { key: '', id: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: Array<{ indent: number; node: QNode }> = [{ indent: -1, node: root }];
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\t/g, '    ');
    if (line.trim() === '' || /^=+NVSMI LOG=+$/.test(line.trim())) continue;
    const indent = line.length - line.trimStart().length;
    const pair = qKeyValue(line.trim());
    const key = pair ? pair.key : line.trim();
    const node: QNode = {
      key,
      id: keyOf(key),
      value: pair ? pair.value : null,
      attrs: {},
      line: index + 1,
      children: [],
    };
    while ((stack[stack.length - 1]?.indent ?? -1) >= indent) stack.pop();
    stack[stack.length - 1]?.node.children.push(node);
    stack.push({ indent, node });
  }
  return root;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeXml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => XML_ENTITIES[name] ?? '');
}

/** A character that may continue an XML element or attribute name (`[\w.-]`). */
function isNameChar(char: string): boolean {
  return /^[\w.-]$/.test(char);
}

/** `key="value"` pairs of a start tag's attribute text, read by scanning. */
function readAttributes(text: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    if (!isNameChar(text[i] ?? '')) {
      i++;
      continue;
    }
    const start = i;
    while (i < text.length && isNameChar(text[i] ?? '')) i++;
    const name = text.slice(start, i);
    let j = i;
    while (isBlank(text[j] ?? '')) j++;
    if (text[j] !== '=') continue;
    j++;
    while (isBlank(text[j] ?? '')) j++;
    if (text[j] !== '"') continue;
    const close = text.indexOf('"', j + 1);
    if (close < 0) break;
    attrs[name] = decodeXml(text.slice(j + 1, close));
    i = close + 1;
  }
  return attrs;
}

/** One piece of markup: a start, end or empty-element tag, or something skipped (comment, prolog, DOCTYPE). */
interface Markup {
  start: number;
  end: number;
  tag: { name: string; closing: boolean; selfClosing: boolean; attrText: string } | null;
}

/**
 * The next piece of markup at or after `from`, or null when there is none. Scans with indexOf:
 * a `<` that opens nothing (`< 3`, an unterminated tag) is text, and the scan goes on after it.
 * `missing` remembers closers (`-->`, `>`, `?>`) that no longer occur, so that a thousand
 * unterminated `<!--` cost one search, not a thousand.
 */
function nextMarkup(text: string, from: number, missing: Set<string>): Markup | null {
  for (let start = text.indexOf('<', from); start >= 0; start = text.indexOf('<', start + 1)) {
    const skipUntil = (close: string): Markup | null => {
      const at = missing.has(close) ? -1 : text.indexOf(close, start + 2);
      if (at < 0) missing.add(close);
      return at < 0 ? null : { start, end: at + close.length, tag: null };
    };
    if (text.startsWith('<!--', start)) {
      const comment = skipUntil('-->');
      if (comment) return comment;
    }
    if (text.startsWith('<!', start)) {
      const declaration = skipUntil('>');
      if (declaration) return declaration;
      continue;
    }
    if (text.startsWith('<?', start)) {
      const prolog = skipUntil('?>');
      if (prolog) return prolog;
      continue;
    }
    const closing = text[start + 1] === '/';
    const nameStart = start + (closing ? 2 : 1);
    if (!/^[A-Za-z_]$/.test(text[nameStart] ?? '')) continue;
    const gt = text.indexOf('>', nameStart);
    if (gt < 0) return null;
    let nameEnd = nameStart + 1;
    while (nameEnd < gt && isNameChar(text[nameEnd] ?? '')) nameEnd++;
    const selfClosing = text[gt - 1] === '/' && gt - 1 >= nameEnd;
    return {
      start,
      end: gt + 1,
      tag: {
        name: text.slice(nameStart, nameEnd),
        closing,
        selfClosing,
        attrText: text.slice(nameEnd, selfClosing ? gt - 1 : gt),
      },
    };
  }
  return null;
}

/** How many line ends `text` holds between `from` and `to` (only that stretch is read). */
function countLineEnds(text: string, from: number, to: number): number {
  let n = 0;
  for (let at = from; at < to; at++) if (text.charCodeAt(at) === 10) n++;
  return n;
}

/**
 * A tolerant reader of nvidia-smi's XML: elements, attributes and text; the prolog, DOCTYPE
 * and comments are skipped. A mismatched or missing closing tag is a ParseError naming the
 * line, so a truncated document never passes as a shorter one. A hand-written scanner: the
 * one-regex tokenizer it replaces backtracked quadratically on a long unterminated tag.
 */
export function readXmlTree(text: string): QNode {
  const root: QNode = { key: '', id: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: QNode[] = [root];
  const missing = new Set<string>();
  let line = 1;
  let last = 0;
  for (let markup = nextMarkup(text, 0, missing); markup !== null; markup = nextMarkup(text, last, missing)) {
    line += countLineEnds(text, last, markup.start);
    const top = stack[stack.length - 1] as QNode;
    const between = text.slice(last, markup.start).trim();
    if (between !== '' && top !== root) top.value = decodeXml(between);
    last = markup.end;
    const tag = markup.tag;
    if (tag?.closing) {
      if (top.key !== tag.name)
        throw new ParseError(`XML: </${excerpt(tag.name)}> closes <${excerpt(top.key) || 'nothing'}>`, line);
      stack.pop();
    } else if (tag) {
      const node: QNode = {
        key: tag.name,
        id: keyOf(tag.name),
        value: null,
        attrs: readAttributes(tag.attrText),
        line,
        children: [],
      };
      top.children.push(node);
      if (!tag.selfClosing) stack.push(node);
    }
    line += countLineEnds(text, markup.start, markup.end);
  }
  const open = stack[stack.length - 1];
  if (open && open !== root)
    throw new ParseError(
      `XML ends inside <${excerpt(open.key)}> opened at line ${open.line}: the output is truncated`,
      line,
    );
  return root;
}

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
      corrected: numAt(single, Q_UNITS.count, ['total']),
      uncorrected: numAt(child(volatile, 'double bit'), Q_UNITS.count, ['total']),
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
    const value = boundReading(numAt(section, Q_UNITS.power, [key]), 'power_draw_w', onOutOfRange);
    if (value !== null) return value;
  }
  return null;
}

/** One GPU from its `-q` block or `<gpu>` element. */
function gpuFromTree(
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
  gpu.temperature_gpu = numAt(node, Q_UNITS.temperature, ['temperature'], ['gpu current temp', 'gpu temp']);
  gpu.power_draw_w = readPower(node, onOutOfRange);
  const ecc = readEcc(node);
  gpu.ecc_corrected_volatile = ecc.corrected;
  gpu.ecc_uncorrected_volatile = ecc.uncorrected;
  const link = child(child(node, 'pci'), 'gpu link info', 'pci gpu link info');
  gpu.pcie_link_gen = numAt(link, NO_UNIT, ['pcie generation', 'pcie gen'], ['current', 'current link gen']);
  gpu.pcie_link_width = numAt(
    link,
    Q_UNITS.linkWidth,
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

function withDriver(
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
function checkAttachedGpus(
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

/**
 * Parses `nvidia-smi -q` text. GPUs are indexed in the order printed. The last GPU block must
 * reach its `Processes` entry, which every complete output prints: an output cut short is a
 * ParseError naming the last line, not a GPU with silently missing fields. An output cut
 * between two GPU blocks is caught by the header's `Attached GPUs` count (checkAttachedGpus).
 */
export function parseNvidiaQuery(text: string, options: NvidiaParseOptions = {}): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const root = readQTree(lines);
  const blocks = root.children.filter((node) =>
    /^GPU [0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(node.key),
  );
  if (blocks.length === 0)
    throw new ParseError("no 'GPU <bus id>' block in the nvidia-smi -q output", root.children[0]?.line ?? 1);
  const last = blocks[blocks.length - 1] as QNode;
  if (!child(last, 'processes')) {
    const lastLine = lines.length - [...lines].reverse().findIndex((l) => l.trim() !== '');
    throw new ParseError(
      `the output ends inside the block of GPU ${excerpt(last.key.slice(4), 20)} (line ${last.line}) before its 'Processes' entry: it is truncated`,
      lastLine,
    );
  }
  const driverCount = checkAttachedGpus(
    child(root, 'attached gpus'),
    { blocks: blocks.length, what: 'block', fallbackLine: blocks[0]?.line ?? 1 },
    options.allowMissingGpus === true,
  );
  const gpus = blocks.map((block, i) => gpuFromTree(block, i, block.key.slice(4), options.onOutOfRange));
  return withDriver(gpus, at(root, ['driver version']), at(root, ['timestamp']), driverCount);
}

/**
 * Parses `nvidia-smi -q -x` XML (any nvsmi_device DTD version). A document cut short fails on
 * its unclosed elements; a complete one must hold as many `<gpu>` as `<attached_gpus>` says.
 */
export function parseNvidiaXml(text: string, options: NvidiaParseOptions = {}): NvidiaParsed {
  checkNvidiaSmiToolError(splitLines(text));
  const log = child(readXmlTree(text), 'nvidia smi log');
  if (!log) throw new ParseError('XML without an <nvidia_smi_log> element', 1);
  const blocks = log.children.filter((node) => node.key === 'gpu');
  if (blocks.length === 0) throw new ParseError('no <gpu> element in the nvidia-smi XML', log.line);
  const driverCount = checkAttachedGpus(
    child(log, 'attached gpus'),
    { blocks: blocks.length, what: 'element', fallbackLine: log.line },
    options.allowMissingGpus === true,
  );
  const gpus = blocks.map((block, i) =>
    gpuFromTree(
      block,
      i,
      block.attrs['id'] ?? at(block, ['pci'], ['pci bus id']) ?? '',
      options.onOutOfRange,
    ),
  );
  return withDriver(gpus, at(log, ['driver version']), at(log, ['timestamp']), driverCount);
}

// ---------------------------------------------------------------------------------------------
// The default table

/** The persistence-mode (Linux) and driver-model (Windows) words that end a GPU row's first cell. */
const GPU_ROW_MODES = new Set(['On', 'Off', 'TCC', 'WDDM']);
const TABLE_BUS_ID = /^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/;

/** What the first row of a GPU block gives. */
interface TableGpuRow {
  index: string;
  name: string;
  busId: string;
  /** The `Volatile Uncorr. ECC` cell. */
  ecc: string;
}

/**
 * First row of a GPU block: `|   0  NVIDIA A100-SXM4-80GB   On  |   00000000:27:00.0 Off |  0 |`:
 * cells split at `|`, then words, never one long pattern (the old one backtracked for seconds
 * on a line of blanks).
 */
function tableGpuRow(line: string): TableGpuRow | null {
  if (line.length < 2 || !line.startsWith('|') || !line.endsWith('|')) return null;
  const [first = '', second = '', ...rest] = line.slice(1, -1).split('|');
  if (rest.length === 0) return null;
  const head = words(first);
  const index = head[0] ?? '';
  const mode = head[head.length - 1] ?? '';
  if (head.length < 3 || !/^\d+$/.test(index) || !GPU_ROW_MODES.has(mode)) return null;
  const bus = words(second);
  if (bus.length !== 2 || !TABLE_BUS_ID.test(bus[0] ?? '')) return null;
  const trimmed = first.trim();
  const name = trimmed.slice(index.length, trimmed.length - mode.length).trim();
  return { index, name, busId: bus[0] ?? '', ecc: rest.join('|').trim() };
}

/**
 * Second row: `| N/A   49C    P0   114W /  400W |   72297MiB /  81920MiB |  11%  Default |`: the
 * first cell's words are fan, temperature, performance state and `usage/cap`, either side of
 * which may be `N/A` (a vGPU guest prints `N/A   N/A    P8    N/A /  N/A`). Null when the row is
 * not of that shape.
 */
function tableMetricRow(line: string): { temperature: string; power: string } | null {
  const end = line.indexOf('|', 1);
  if (!line.startsWith('|') || end < 0) return null;
  const cell = line
    .slice(1, end)
    .split('/')
    .map((part) => part.trim())
    .join('/');
  const [, temperature = '', , usageCap = '', ...extra] = words(cell);
  const usage = usageCap.startsWith('N/A/') ? 'N/A' : (usageCap.split('/')[0] ?? '');
  const cap = usageCap.slice(usage.length + 1);
  const capOk = cap !== '' && (!cap.includes('/') || cap === 'N/A');
  if (extra.length > 0 || usage === '' || !capOk || temperature === '') return null;
  return { temperature, power: usage };
}

/**
 * Parses the default `nvidia-smi` table: for each GPU its index, name (as abbreviated by the
 * table), bus id, temperature, power draw and `Volatile Uncorr. ECC` (null when it reads
 * `Off`/`On`/`N/A`: ECC disabled or MIG mode). MIG and process blocks are skipped. Fragments
 * cut by a poster parse as far as whole GPU blocks go: the table prints no GPU count, so a cut
 * between two GPU blocks cannot be seen here. The agent queries CSV (with `count`) or `-q`,
 * which can; a GPU that no output lists is the agent's inventory check (`present: false`).
 */
export function parseNvidiaTable(text: string, options: ReadingOptions = {}): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const gpus: Gpu[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^\|\s*(MIG devices:|Processes:)/.test(line)) break;
    const row = tableGpuRow(line);
    if (!row) continue;
    const metrics = tableMetricRow(lines[i + 1] ?? '');
    if (!metrics)
      throw new ParseError(
        `GPU ${row.index}: the row 'Fan Temp Perf Pwr:Usage/Cap' is missing or cut`,
        i + 2,
      );
    const gpu = emptyGpu(Number(row.index));
    gpu.name = row.name;
    gpu.bus_id = normaliseBusId(row.busId);
    // `Off`/`On`/`N/A`: ECC disabled or MIG mode, no count.
    gpu.ecc_uncorrected_volatile = readNumber(row.ecc) ?? null;
    gpu.temperature_gpu = requireNumber(metrics.temperature, 'temperature', i + 2, Q_UNITS.temperature);
    gpu.power_draw_w = requireNumber(metrics.power, 'power draw', i + 2, Q_UNITS.power);
    // `Off`/`On` (ECC disabled) is a setting, not a reading: only a count or N/A speaks.
    const ecc = row.ecc === 'Off' || row.ecc === 'On' ? null : row.ecc;
    gpus.push(boundAndMarkUnreadable(gpu, [metrics.temperature, metrics.power, ecc], options.onOutOfRange));
    i++;
  }
  if (gpus.length === 0)
    throw new ParseError(
      "no GPU row ('| <index>  <name>  On|Off | <bus id> ... |') in the nvidia-smi table",
      firstContentLine(lines),
    );
  const driver = lines.map((l) => /Driver Version:\s*(\S+)/.exec(l)?.[1]).find((v) => v !== undefined);
  const date = lines.find((l) => ctimeToIso(l) !== null);
  return {
    payload: { family: 'nvidia', ...(driver === undefined ? {} : { driver_version: driver }), gpus },
    timestamp: date === undefined ? null : ctimeToIso(date),
    driverCount: null,
  };
}

// ---------------------------------------------------------------------------------------------
// Detection

/** The sub-formats of nvidia-smi output. */
export type NvidiaSmiKind = 'csv' | 'query' | 'xml' | 'table' | 'unknown';

/** Tells the sub-format from the first lines. */
export function detectNvidiaSmiKind(text: string): NvidiaSmiKind {
  const lines = splitLines(text).filter((line) => line.trim() !== '');
  const first = (lines[0] ?? '').trim();
  if (first.startsWith('<?xml') || first.startsWith('<nvidia_smi_log')) return 'xml';
  if (
    lines.some(
      (line) =>
        /^=+NVSMI LOG=+$/.test(line.trim()) ||
        /^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(line.trim()),
    )
  )
    return 'query';
  if (lines.some((line) => tableGpuRow(line) !== null || /^\|\s*NVIDIA-SMI\s/.test(line))) return 'table';
  // A one-column query has no comma: its header is a field name, its rows single values.
  if (first.includes(',') || isCsvHeader(first) || readNumber(first) !== undefined) return 'csv';
  return 'unknown';
}

/**
 * Parses any nvidia-smi output this module knows, detecting its sub-format. `fields` is the
 * field list of a noheader CSV (default DEFAULT_QUERY_FIELDS).
 */
export function parseNvidiaSmi(
  text: string,
  fields?: readonly string[],
  options: NvidiaParseOptions = {},
): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const kind = detectNvidiaSmiKind(text);
  if (kind === 'xml') return parseNvidiaXml(text, options);
  if (kind === 'query') return parseNvidiaQuery(text, options);
  if (kind === 'table') return parseNvidiaTable(text, options);
  if (kind === 'csv') return parseNvidiaCsv(text, fields, options);
  const line = firstContentLine(lines);
  if (lines.every((l) => l.trim() === '')) throw new ParseError('empty nvidia-smi output', 1);
  throw new ParseError(
    `not a known nvidia-smi output: ${quoted((lines[line - 1] ?? '').trim())}; ${NVIDIA_SMI_EXPECTED}`,
    line,
  );
}
