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
 */
import type { Gpu } from '../../contracts/snapshot.js';
import { ParseError } from '../errors.js';
import {
  NotSnapshotError,
  ToolError,
  asCounter,
  ctimeToIso,
  isNullCell,
  normaliseBusId,
  readNumber,
  requireNumber,
  splitLines,
} from './common.js';

/** The nvidia payload plus the time the output says it was taken (ISO), when it says one. */
export interface NvidiaParsed {
  payload: { family: 'nvidia'; driver_version?: string; gpus: Gpu[] };
  timestamp: string | null;
}

/**
 * The `--query-gpu` fields the agent runs (`--format=csv,noheader,nounits`); a noheader file is
 * read with this list unless another is given.
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
];

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
    const handle = /^Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+):\s*(.*)$/.exec(line);
    const fatal =
      handle !== null ||
      /GPU is lost/i.test(line) ||
      /^NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/.test(line) ||
      /^Failed to initialize NVML/.test(line) ||
      /^Unknown Error$/.test(line) ||
      /^No devices were found$/.test(line);
    if (!fatal) continue;
    first ??= { line: index + 1, text: line };
    const bus = handle?.[1] ? normaliseBusId(handle[1]) : null;
    if (bus !== null) lost.push(bus);
  }
  if (first) throw new ToolError(`nvidia-smi failed: ${first.text.replace(/\s+/g, ' ')}`, first.line, lost);
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

/** Reads a header cell (`power.draw [W]`) as its field name, or null when it is not one. */
function headerField(cell: string): string | null {
  const match = /^([a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)*)(?:\s*\[[^\]]*\])?$/.exec(cell.trim());
  if (!match?.[1]) return null;
  const name = match[1];
  return name.includes('.') || name.includes('_') || SINGLE_WORD_FIELDS.has(name) ? name : null;
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

/** Fills one GPU from a CSV row; `line` names the row in errors. */
function gpuFromCsv(fields: readonly string[], cells: readonly string[], order: number, line: number): Gpu {
  const byName = new Map<string, string>();
  fields.forEach((field, i) => {
    const key = canonicalField(field);
    if (!byName.has(key)) byName.set(key, cells[i] ?? '');
  });
  const num = (key: string): number | null => {
    const text = byName.get(key);
    if (text === undefined) return null;
    const value = readNumber(text);
    if (value === undefined) throw new ParseError(`${key}: expected a number or N/A, found '${text}'`, line);
    return value;
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
  gpu.power_draw_w = num('power.draw') ?? num('power.draw.average');
  gpu.ecc_corrected_volatile = asCounter(num('ecc.errors.corrected.volatile.total'));
  gpu.ecc_uncorrected_volatile = asCounter(num('ecc.errors.uncorrected.volatile.total'));
  gpu.pcie_link_gen = num('pcie.link.gen.current');
  gpu.pcie_link_width = num('pcie.link.width.current');
  return gpu;
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
 * Parses `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`. With a header the
 * columns are mapped by name (units such as ` [W]`, ` %`, ` MiB` stripped; `[N/A]`, `N/A`,
 * `[Not Supported]`, `ERR!` read as null); without one, by `fields` (default
 * DEFAULT_QUERY_FIELDS). A row whose column count differs is a ParseError naming its line.
 */
export function parseNvidiaCsv(text: string, fields: readonly string[] = DEFAULT_QUERY_FIELDS): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const start = lines.findIndex((line) => line.trim() !== '');
  if (start < 0) throw new ParseError('empty nvidia-smi output', 1);
  const first = lines[start] ?? '';
  const hasHeader = isCsvHeader(first);
  const names = hasHeader ? csvCells(first).map((cell) => headerField(cell) ?? cell) : [...fields];
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
      const source = hasHeader ? 'the header' : `the field list (${names.join(',')})`;
      throw new ParseError(`row has ${cells.length} columns but ${source} has ${names.length}`, i + 1);
    }
    gpus.push(gpuFromCsv(names, cells, gpus.length, i + 1));
    timestamp ??= csvTimestamp(cells[names.indexOf('timestamp')]);
    const version = cells[names.indexOf('driver_version')];
    if (names.includes('driver_version') && version && !isNullCell(version)) driver ??= version;
  }
  if (gpus.length === 0) throw new ParseError('the CSV has a header but no GPU rows', start + 1);
  return {
    payload: { family: 'nvidia', ...(driver === undefined ? {} : { driver_version: driver }), gpus },
    timestamp,
  };
}

// ---------------------------------------------------------------------------------------------
// -q text and -q -x XML, read into one tree

/** One node of the `-q` tree (a section or a `key : value`), or of the XML document. */
export interface QNode {
  key: string;
  value: string | null;
  attrs: Record<string, string>;
  line: number;
  children: QNode[];
}

/** Keys compared case- and separator-insensitively, so `GPU Current Temp` ~ `gpu_current_temp`. */
function keyOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\s_]+/g, ' ')
    .trim();
}

function child(node: QNode | undefined, ...aliases: string[]): QNode | undefined {
  if (!node) return undefined;
  for (const alias of aliases) {
    const found = node.children.find((c) => keyOf(c.key) === alias);
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

/** A numeric value: absent or NA is null; anything else that is not a number names its line. */
function numAt(node: QNode | undefined, ...path: string[][]): number | null {
  const found = nodeAt(node, ...path);
  return found?.value == null ? null : requireNumber(found.value, found.key, found.line);
}

/** Reads `nvidia-smi -q` text into a tree by indentation. */
function readQTree(lines: readonly string[]): QNode {
  const root: QNode = { key: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: Array<{ indent: number; node: QNode }> = [{ indent: -1, node: root }];
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\t/g, '    ');
    if (line.trim() === '' || /^=+NVSMI LOG=+$/.test(line.trim())) continue;
    const indent = line.length - line.trimStart().length;
    const match = /^(.+?)\s+:(?:\s(.*))?$/.exec(line.trim());
    const node: QNode = {
      key: match ? (match[1] ?? '') : line.trim(),
      value: match ? (match[2] ?? '').trim() : null,
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

/**
 * A tolerant reader of nvidia-smi's XML: elements, attributes and text; the prolog, DOCTYPE
 * and comments are skipped. A mismatched or missing closing tag is a ParseError naming the
 * line, so a truncated document never passes as a shorter one.
 */
export function readXmlTree(text: string): QNode {
  const root: QNode = { key: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: QNode[] = [root];
  const tag = /<(\/?)([A-Za-z_][\w.-]*)([^>]*?)(\/?)>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<![^>]*>/g;
  let line = 1;
  let last = 0;
  for (let match = tag.exec(text); match !== null; match = tag.exec(text)) {
    const between = text.slice(last, match.index);
    line += (between.match(/\n/g) ?? []).length;
    const top = stack[stack.length - 1] as QNode;
    if (between.trim() !== '' && top !== root) top.value = decodeXml(between.trim());
    last = match.index + match[0].length;
    const [, closing, name, attrText = '', selfClosing] = match;
    if (name !== undefined) {
      if (closing) {
        if (top.key !== name) throw new ParseError(`XML: </${name}> closes <${top.key || 'nothing'}>`, line);
        stack.pop();
      } else {
        const attrs: Record<string, string> = {};
        for (const a of attrText.matchAll(/([\w.-]+)\s*=\s*"([^"]*)"/g))
          attrs[a[1] ?? ''] = decodeXml(a[2] ?? '');
        const node: QNode = { key: name, value: null, attrs, line, children: [] };
        top.children.push(node);
        if (!selfClosing) stack.push(node);
      }
    }
    line += (match[0].match(/\n/g) ?? []).length;
  }
  const open = stack[stack.length - 1];
  if (open && open !== root)
    throw new ParseError(
      `XML ends inside <${open.key}> opened at line ${open.line}: the output is truncated`,
      line,
    );
  return root;
}

/** Sums the volatile ECC counters matching `pattern`; null when none of them has a value. */
function sumCounters(volatile: QNode | undefined, pattern: RegExp): number | null {
  let total: number | null = null;
  for (const node of volatile?.children ?? []) {
    if (!pattern.test(keyOf(node.key))) continue;
    const value = node.value === null ? null : requireNumber(node.value, node.key, node.line);
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
      corrected: asCounter(numAt(single, ['total'])),
      uncorrected: asCounter(numAt(child(volatile, 'double bit'), ['total'])),
    };
  }
  return {
    corrected: sumCounters(volatile, /^(sram|dram) correctable$/),
    uncorrected: sumCounters(volatile, /^(sram|dram) uncorrectable/),
  };
}

function readPower(gpu: QNode): number | null {
  const section = child(gpu, 'gpu power readings', 'power readings');
  for (const key of ['power draw', 'instantaneous power draw', 'instant power draw', 'average power draw']) {
    const value = numAt(section, [key]);
    if (value !== null) return value;
  }
  return null;
}

/** One GPU from its `-q` block or `<gpu>` element. */
function gpuFromTree(node: QNode, index: number, busText: string): Gpu {
  const gpu = emptyGpu(index);
  const uuid = at(node, ['gpu uuid', 'uuid']);
  gpu.uuid = uuid === undefined || isNullCell(uuid) ? null : uuid;
  gpu.bus_id = normaliseBusId(busText) ?? at(node, ['pci'], ['bus id', 'pci bus id']) ?? null;
  gpu.name = at(node, ['product name']) ?? '';
  gpu.temperature_gpu = numAt(node, ['temperature'], ['gpu current temp', 'gpu temp']);
  gpu.power_draw_w = readPower(node);
  const ecc = readEcc(node);
  gpu.ecc_corrected_volatile = ecc.corrected;
  gpu.ecc_uncorrected_volatile = ecc.uncorrected;
  const link = child(child(node, 'pci'), 'gpu link info', 'pci gpu link info');
  gpu.pcie_link_gen = numAt(link, ['pcie generation', 'pcie gen'], ['current', 'current link gen']);
  gpu.pcie_link_width = numAt(link, ['link width', 'link widths'], ['current', 'current link width']);
  return gpu;
}

function withDriver(gpus: Gpu[], driver: string | undefined, timestamp: string | undefined): NvidiaParsed {
  const base = driver === undefined || isNullCell(driver) ? {} : { driver_version: driver };
  return {
    payload: { family: 'nvidia', ...base, gpus },
    timestamp: timestamp === undefined ? null : ctimeToIso(timestamp),
  };
}

/**
 * Parses `nvidia-smi -q` text. GPUs are indexed in the order printed. The last GPU block must
 * reach its `Processes` entry, which every complete output prints: an output cut short is a
 * ParseError naming the last line, not a GPU with silently missing fields.
 */
export function parseNvidiaQuery(text: string): NvidiaParsed {
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
      `the output ends inside the block of GPU ${last.key.slice(4)} (line ${last.line}) before its 'Processes' entry: it is truncated`,
      lastLine,
    );
  }
  const gpus = blocks.map((block, i) => gpuFromTree(block, i, block.key.slice(4)));
  return withDriver(gpus, at(root, ['driver version']), at(root, ['timestamp']));
}

/** Parses `nvidia-smi -q -x` XML (any nvsmi_device DTD version). */
export function parseNvidiaXml(text: string): NvidiaParsed {
  checkNvidiaSmiToolError(splitLines(text));
  const log = child(readXmlTree(text), 'nvidia smi log');
  if (!log) throw new ParseError('XML without an <nvidia_smi_log> element', 1);
  const blocks = log.children.filter((node) => node.key === 'gpu');
  if (blocks.length === 0) throw new ParseError('no <gpu> element in the nvidia-smi XML', log.line);
  const gpus = blocks.map((block, i) =>
    gpuFromTree(block, i, block.attrs['id'] ?? at(block, ['pci'], ['pci bus id']) ?? ''),
  );
  return withDriver(gpus, at(log, ['driver version']), at(log, ['timestamp']));
}

// ---------------------------------------------------------------------------------------------
// The default table

/** First row of a GPU block: `|   0  NVIDIA A100-SXM4-80GB   On  |   00000000:27:00.0 Off |  0 |`. */
const TABLE_GPU_ROW =
  /^\|\s*(\d+)\s+(.+?)\s+(On|Off|TCC|WDDM)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+\S+\s*\|\s*(.*?)\s*\|$/;
/** Second row: `| N/A   49C    P0   114W /  400W |   72297MiB /  81920MiB |  11%  Default |`. */
const TABLE_METRIC_ROW = /^\|\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*\/\s*(\S+)\s*\|/;

/**
 * Parses the default `nvidia-smi` table: for each GPU its index, name (as abbreviated by the
 * table), bus id, temperature, power draw and `Volatile Uncorr. ECC` (null when it reads
 * `Off`/`On`/`N/A`: ECC disabled or MIG mode). MIG and process blocks are skipped. Fragments
 * cut by a poster parse as far as whole GPU blocks go.
 */
export function parseNvidiaTable(text: string): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const gpus: Gpu[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^\|\s*(MIG devices:|Processes:)/.test(line)) break;
    const row = TABLE_GPU_ROW.exec(line);
    if (!row) continue;
    const metrics = TABLE_METRIC_ROW.exec(lines[i + 1] ?? '');
    if (!metrics)
      throw new ParseError(`GPU ${row[1]}: the row 'Fan Temp Perf Pwr:Usage/Cap' is missing or cut`, i + 2);
    const gpu = emptyGpu(Number(row[1]));
    gpu.name = row[2] ?? '';
    gpu.bus_id = normaliseBusId(row[4] ?? '');
    gpu.ecc_uncorrected_volatile = asCounter(readNumber(row[5] ?? '') ?? null);
    gpu.temperature_gpu = requireNumber(metrics[2] ?? '', 'temperature', i + 2);
    gpu.power_draw_w = requireNumber(metrics[4] ?? '', 'power draw', i + 2);
    gpus.push(gpu);
    i++;
  }
  if (gpus.length === 0)
    throw new ParseError(
      "no GPU row ('| <index>  <name>  On|Off | <bus id> ... |') in the nvidia-smi table",
      firstLineOf(lines),
    );
  const driver = lines.map((l) => /Driver Version:\s*(\S+)/.exec(l)?.[1]).find((v) => v !== undefined);
  const date = lines.find((l) => ctimeToIso(l) !== null);
  return {
    payload: { family: 'nvidia', ...(driver === undefined ? {} : { driver_version: driver }), gpus },
    timestamp: date === undefined ? null : ctimeToIso(date),
  };
}

function firstLineOf(lines: readonly string[]): number {
  const index = lines.findIndex((line) => line.trim() !== '');
  return index < 0 ? 1 : index + 1;
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
  if (lines.some((line) => TABLE_GPU_ROW.test(line) || /^\|\s*NVIDIA-SMI\s/.test(line))) return 'table';
  // A one-column query has no comma: its header is a field name, its rows single values.
  if (first.includes(',') || isCsvHeader(first) || readNumber(first) !== undefined) return 'csv';
  return 'unknown';
}

/**
 * Parses any nvidia-smi output this module knows, detecting its sub-format. `fields` is the
 * field list of a noheader CSV (default DEFAULT_QUERY_FIELDS).
 */
export function parseNvidiaSmi(text: string, fields?: readonly string[]): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const kind = detectNvidiaSmiKind(text);
  if (kind === 'xml') return parseNvidiaXml(text);
  if (kind === 'query') return parseNvidiaQuery(text);
  if (kind === 'table') return parseNvidiaTable(text);
  if (kind === 'csv') return parseNvidiaCsv(text, fields);
  const line = firstLineOf(lines);
  if (lines.every((l) => l.trim() === '')) throw new ParseError('empty nvidia-smi output', 1);
  throw new ParseError(
    `not a known nvidia-smi output: '${(lines[line - 1] ?? '').trim().slice(0, 80)}'; ${NVIDIA_SMI_EXPECTED}`,
    line,
  );
}
