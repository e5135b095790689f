/**
 * Parsers of Ascend `npu-smi` output:
 *
 * - `npu-smi info`: the device table, in every layout seen in the field (910A/910B 8-NPU
 *   tables, 310 Atlas 300 with four chips per card, 310P3 Duo with two, 310B, the A3 layout
 *   with a `Chip Phy-ID` header and two chips per NPU, the 116-column 26.x layout). Cells are
 *   found by the `|` separators rather than by column offsets, because posters and Huawei's
 *   own docs break the alignment (a `Warning` cell wider than its column).
 * - `npu-smi info -t <type> -i <id> [-c <chip>]`: `key : value` blocks (health, ecc, board,
 *   power, usages, common, product) into a typed record the agent merges into the table.
 * - `npu-smi info -m`: the card/chip/logic-id mapping.
 *
 * A number outside what hardware can report (READING_BOUNDS: 65535 printed for a sensor the
 * tool could not read) is read as null and told to the options' `onOutOfRange`.
 */
import type { Card310, Chip310, Npu910 } from '../../contracts/index.js';
import { ParseError, excerpt, quoted } from '../errors.js';
import {
  DEVICE_READINGS,
  NO_UNIT,
  NotSnapshotError,
  ToolError,
  boundDeviceReadings,
  boundReading,
  isNullCell,
  leadingWords,
  requireNumber,
  splitLines,
  words,
  type OnOutOfRange,
  type ReadingOptions,
} from './common.js';

/** A 910B-family payload as the table shows it. */
export interface NpuSmi910Payload {
  family: '910B';
  driver_version?: string;
  npus: Npu910[];
}

/** A 310P-family payload as the table shows it. */
export interface NpuSmi310Payload {
  family: '310P';
  driver_version?: string;
  cards: Card310[];
}

/** What `npu-smi info` yields: a payload (the table carries no timestamp). */
export type NpuSmiTablePayload = NpuSmi910Payload | NpuSmi310Payload;

/** What `parse --from npu-smi` accepts, for error messages. */
export const NPU_SMI_EXPECTED = 'parse --from npu-smi expects the `npu-smi info` device table';

/** One row of a table: its 1-based line number and its cells between the `|` borders. */
interface Row {
  line: number;
  cells: string[];
}

/** The layout read from the two header rows. */
interface Layout {
  family: '910B' | '310P';
  /** Second header cell 0 names a physical id (`Chip  Phy-ID`, A3) or a device id (`Chip Device`, 310). */
  secondId: 'phy' | 'device' | 'none';
  /** Value names of the third cell of the first and second row, e.g. ['Power(W)', 'Temp(C)', ...]. */
  upper: string[];
  lower: string[];
}

/** One NPU/chip entry read from a row pair, before it is shaped into a family payload. */
interface ChipRow {
  npu: number;
  name: string;
  health: string;
  chip: number;
  secondId: number | null;
  busId: string | null;
  values: Map<string, string>;
  line: number;
}

/**
 * Throws a ToolError when the output is npu-smi's own failure message (driver not ready,
 * device held by another container, a card id that is gone) instead of data.
 */
export function checkNpuSmiToolError(lines: readonly string[]): void {
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (
      /^dcmi\b.*\bfail/i.test(line) ||
      /^Invalid (card|chip|device) id/i.test(line) ||
      /^npu-smi: command not found/.test(line)
    ) {
      throw new ToolError(`npu-smi failed: ${excerpt(line)}`, index + 1);
    }
  }
}

/** Splits a bordered row `| a | b | c |` into trimmed cells; a row without its closing border was cut. */
function rowCells(line: string, lineNo: number): string[] {
  if (!line.endsWith('|'))
    throw new ParseError(`table row is cut short (no closing '|'): ${quoted(line.trim())}`, lineNo);
  return line
    .slice(1, -1)
    .split('|')
    .map((cell) => cell.trim());
}

/** Joins `a / b`, `a/ b`, `a /b` into one token so a cell splits into its values on blanks. */
function valueTokens(cell: string): string[] {
  return words(
    cell
      .split('/')
      .map((part) => part.trim())
      .join('/'),
  );
}

/** Reads the layout from the header rows at `index` (the `| NPU Name | Health |` row). */
function readLayout(lines: readonly string[], index: number): Layout {
  const first = rowCells(lines[index] ?? '', index + 1);
  const secondLine = lines[index + 1] ?? '';
  if (!/^\|\s*Chip\b/.test(secondLine))
    throw new ParseError("header row 'Chip ... | Bus-Id |' expected after 'NPU Name | Health'", index + 2);
  const second = rowCells(secondLine, index + 2);
  if (first.length < 3 || second.length < 3)
    throw new ParseError('header rows need three cells (NPU/Name, Health, values)', index + 1);
  const head = second[0] ?? '';
  const secondId = /Phy-ID/i.test(head) ? 'phy' : /Device/i.test(head) ? 'device' : 'none';
  const lower = valueTokens(second[2] ?? '');
  // The DDR inference layout names its second id "Device" and has no HBM column.
  const family = secondId === 'device' || !lower.some((name) => /^HBM/i.test(name)) ? '310P' : '910B';
  const upper = valueTokens(first[2] ?? '');
  checkHeaderUnits(upper, index + 1);
  checkHeaderUnits(lower, index + 2);
  return { family, secondId, upper, lower };
}

/** A header name without its unit, lower case: `Temp(C)` is `temp`. */
function headerKey(name: string): string {
  const paren = name.indexOf('(');
  return (paren < 0 ? name : name.slice(0, paren)).toLowerCase();
}

/**
 * The unit a header prints for each value the snapshot reads. npu-smi prints values bare and
 * the unit in the header; a header with another unit is another layout, never read as this one.
 */
const HEADER_UNITS: Readonly<Record<string, string>> = {
  power: 'W',
  temp: 'C',
  aicore: '%',
  'hbm-usage': 'MB',
  'memory-usage': 'MB',
};

/** Refuses a header whose unit for a value the snapshot reads is not the one expected. */
function checkHeaderUnits(names: readonly string[], lineNo: number): void {
  for (const name of names) {
    const expected = HEADER_UNITS[headerKey(name)];
    const paren = name.indexOf('(');
    if (expected === undefined || paren < 0) continue;
    const unit = name.slice(paren + 1, name.endsWith(')') ? -1 : undefined);
    if (unit !== expected)
      throw new ParseError(`header ${quoted(name)} is in ${quoted(unit)}; expected ${expected}`, lineNo);
  }
}

/** Maps a row's value tokens to the header names above them; a count mismatch is an error. */
function mapValues(names: readonly string[], cell: string, lineNo: number, into: Map<string, string>): void {
  const tokens = valueTokens(cell);
  if (tokens.length !== names.length) {
    throw new ParseError(
      `expected ${names.length} values under ${quoted(names.join(' '))}, found ${tokens.length}: ${quoted(cell)}`,
      lineNo,
    );
  }
  names.forEach((name, i) => into.set(headerKey(name), tokens[i] ?? ''));
}

/** How many decimal digits `text` starts with. */
function leadingDigits(text: string): number {
  let n = 0;
  while (n < text.length && (text[n] ?? '') >= '0' && (text[n] ?? '') <= '9') n++;
  return n;
}

/** Reads one NPU/chip from its two rows. */
function readRowPair(layout: Layout, upper: Row, lower: Row): ChipRow {
  const [idName = '', health = '', upperValues = ''] = upper.cells;
  const [chipCell = '', busCell = '', lowerValues = ''] = lower.cells;
  const digits = leadingDigits(idName);
  if (digits === 0)
    throw new ParseError(`expected 'NPU Name' (an NPU id and a name), found ${quoted(idName)}`, upper.line);
  const chipTokens = words(chipCell);
  const chip = Number(chipTokens[0]);
  if (!/^\d+$/.test(chipTokens[0] ?? ''))
    throw new ParseError(`expected a chip id, found ${quoted(chipCell)}`, lower.line);
  const second = chipTokens[1];
  if (layout.secondId !== 'none' && (second === undefined || !/^\d+$/.test(second))) {
    throw new ParseError(
      `expected a chip id and a ${layout.secondId === 'phy' ? 'Phy-ID' : 'device id'}, found ${quoted(chipCell)}`,
      lower.line,
    );
  }
  const values = new Map<string, string>();
  mapValues(layout.upper, upperValues, upper.line, values);
  mapValues(layout.lower, lowerValues, lower.line, values);
  return {
    npu: Number(idName.slice(0, digits)),
    name: idName.slice(digits).trim(),
    health: health || 'UNKNOWN',
    chip,
    secondId: second === undefined ? null : Number(second),
    busId: isNullCell(busCell) ? null : busCell,
    values,
    line: upper.line,
  };
}

/** Reads a `used/total` pair cell; NA on either side is null. */
function usage(row: ChipRow, key: string, lineNo: number): { used: number | null; total: number | null } {
  const text = row.values.get(key);
  if (text === undefined) return { used: null, total: null };
  const [used = '', total = ''] = text.split('/');
  // The header carries the unit (checked there): the values themselves are bare numbers.
  if (!text.includes('/')) return { used: requireNumber(used, key, lineNo, NO_UNIT), total: null };
  return {
    used: requireNumber(used, key, lineNo, NO_UNIT),
    total: requireNumber(total, key, lineNo, NO_UNIT),
  };
}

/** A single numeric value under a header name. */
function value(row: ChipRow, key: string): number | null {
  const text = row.values.get(key);
  return text === undefined ? null : requireNumber(text, key, row.line, NO_UNIT);
}

function toNpu910(row: ChipRow, layout: Layout, onOutOfRange: OnOutOfRange | undefined): Npu910 {
  const hbm = usage(row, 'hbm-usage', row.line + 1);
  const npu: Npu910 = {
    npu: row.npu,
    chip: row.chip,
    name: row.name,
    health: row.health,
    temp_c: value(row, 'temp'),
    power_w: value(row, 'power'),
    aicore_pct: value(row, 'aicore'),
    hbm: {
      used_mb: hbm.used,
      total_mb: hbm.total,
      temp_c: null,
      ecc: { single_bit: null, double_bit: null },
    },
    // The chip is listed, so the host still reaches it over PCIe.
    pcie: { bus_id: row.busId, link: 'up' },
    error_codes: [],
    present: true,
  };
  if (layout.secondId === 'phy') npu.phy_id = row.secondId;
  boundDeviceReadings(npu, DEVICE_READINGS.npu910, onOutOfRange);
  return npu;
}

function toChip310(row: ChipRow, onOutOfRange: OnOutOfRange | undefined): Chip310 {
  const ddr = usage(row, 'memory-usage', row.line + 1);
  const chip: Chip310 = {
    chip: row.chip,
    device_id: row.secondId ?? row.chip,
    health: row.health,
    temperature: value(row, 'temp'),
    power_w: value(row, 'power'),
    ddr: { used_mb: ddr.used, total_mb: ddr.total, ecc_sbe: null, ecc_dbe: null },
    error_codes: [],
    present: true,
  };
  boundDeviceReadings(chip, DEVICE_READINGS.chip310, onOutOfRange);
  return chip;
}

/** Groups 310-family rows into cards by NPU id, in the table's order. */
function toCards(rows: readonly ChipRow[], onOutOfRange: OnOutOfRange | undefined): Card310[] {
  const cards = new Map<number, Card310>();
  for (const row of rows) {
    let card = cards.get(row.npu);
    if (!card) {
      // The table has no card-level power: that needs `npu-smi info -t power` (MCU row).
      card = { card: row.npu, name: row.name, bus_id: row.busId, pcie_link: 1, mcu_power_w: null, chips: [] };
      cards.set(row.npu, card);
    }
    card.bus_id ??= row.busId;
    card.chips.push(toChip310(row, onOutOfRange));
  }
  return [...cards.values()];
}

/** A Bus-Id cell (`0000:C1:00.0`), or one the tool could not read. */
function isBusIdCell(cell: string): boolean {
  return /^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(cell) || isNullCell(cell);
}

/** Collects the data rows after the header, pairing them; stops at the process section. */
function readRows(lines: readonly string[], start: number): Row[][] {
  const pairs: Row[][] = [];
  let pending: Row | undefined;
  for (let i = start; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const trimmed = line.trim();
    if (/Process id/i.test(line) || /^\|\s*No running processes/i.test(line)) break;
    // Border lines; '...' is where Huawei's docs elide NPUs (the real tool never prints it).
    if (trimmed === '' || trimmed.startsWith('+') || trimmed === '...') continue;
    if (!trimmed.startsWith('|'))
      throw new ParseError(`unexpected text inside the device table: ${quoted(trimmed)}`, i + 1);
    const row = { line: i + 1, cells: rowCells(line, i + 1) };
    if (pending) {
      // The second row of a device carries its Bus-Id (or NA); anything else means the row
      // is missing, and the error must point at the device that lacks it, not further down.
      if (!isBusIdCell(row.cells[1] ?? ''))
        throw new ParseError(
          `NPU row ${quoted(pending.cells[0] ?? '')} has no second row (Chip, Bus-Id) after it`,
          pending.line + 1,
        );
      pairs.push([pending, row]);
      pending = undefined;
    } else pending = row;
  }
  if (pending)
    throw new ParseError(
      'the device table ends after the first row of an NPU: its second row (Chip, Bus-Id) is missing',
      pending.line,
    );
  return pairs;
}

/** The driver version from the title row (`| npu-smi 24.1.0   Version: 24.1.0 |`). */
function readVersion(lines: readonly string[]): string | undefined {
  for (const line of lines) {
    const match = /npu-smi\s+\S+\s+Version:\s*(\S+)/.exec(line);
    if (match?.[1]) return match[1];
  }
  return undefined;
}

/** Index of the first header row (`| NPU   Name | Health |`), or -1. */
export function findNpuSmiHeader(lines: readonly string[]): number {
  return lines.findIndex((line) => /^\|\s*NPU\s+Name\s*\|\s*Health\s*\|/.test(line));
}

/**
 * Parses `npu-smi info` (the device table) into a snapshot payload: 910-family layouts give
 * `{family: '910B', npus}` with one entry per chip, 310/310P/310B layouts give
 * `{family: '310P', cards}` grouped by NPU id. Process sections are ignored. A table cut after
 * a complete NPU is parsed up to there (posted fragments and Huawei's doc samples stop there);
 * a row cut mid-way is a ParseError naming its line. The table announces no NPU count, so a
 * cut between two NPUs cannot be seen here: an NPU that the table leaves out is found by the
 * agent's inventory (`/dev/davinci*`, `npu-smi info -m`) and sent as `present: false`.
 * Tool failures (dcmi init errors) throw ToolError. A value out of range reads as null.
 */
export function parseNpuSmiTable(text: string, options: ReadingOptions = {}): NpuSmiTablePayload {
  const lines = splitLines(text);
  checkNpuSmiToolError(lines);
  const header = findNpuSmiHeader(lines);
  if (header < 0) throw unknownNpuSmi(lines);
  const layout = readLayout(lines, header);
  const rows = readRows(lines, header + 2).map(([upper, lower]) =>
    readRowPair(layout, upper as Row, lower as Row),
  );
  if (rows.length === 0) throw new ParseError('the npu-smi table lists no NPU', header + 1);
  const version = readVersion(lines);
  const base = version === undefined ? {} : { driver_version: version };
  const { onOutOfRange } = options;
  if (layout.family === '910B')
    return { family: '910B', ...base, npus: rows.map((row) => toNpu910(row, layout, onOutOfRange)) };
  return { family: '310P', ...base, cards: toCards(rows, onOutOfRange) };
}

/** The error for an npu-smi output that is not the table: names what it is when it can. */
function unknownNpuSmi(lines: readonly string[]): ParseError {
  const firstIndex = lines.findIndex((line) => line.trim() !== '');
  if (firstIndex < 0) return new ParseError('empty npu-smi output', 1);
  const kind = detectNpuSmiKind(lines);
  if (kind === 'mapping')
    return new NotSnapshotError('`npu-smi info -m` (chip mapping)', NPU_SMI_EXPECTED, firstIndex + 1);
  if (kind !== 'unknown')
    return new NotSnapshotError(`\`npu-smi info -t ${kind}\``, NPU_SMI_EXPECTED, firstIndex + 1);
  return new ParseError(
    `not an npu-smi table (no '| NPU  Name | Health |' header): ${quoted((lines[firstIndex] ?? '').trim())}`,
    firstIndex + 1,
  );
}

// ---------------------------------------------------------------------------------------------
// `npu-smi info -t <type>`: key : value blocks

/** The `-t` types this parser recognises. */
export type NpuSmiInfoType =
  'health' | 'ecc' | 'board' | 'power' | 'usages' | 'common' | 'product' | 'unknown';

/** One blank-line separated block of `key : value` lines (one chip, the card, or the MCU). */
export interface NpuSmiSection {
  /** `Chip ID` of the block, wherever in the block it is printed; null for card-level blocks. */
  chip: number | null;
  /** `Chip Name` of the block (`mcu`/`MCU` marks the card's microcontroller), else null. */
  chipName: string | null;
  /** The block's values by their key as printed (e.g. `Temperature(C)`), NA kept as text. */
  fields: Record<string, string>;
  /** The 1-based line of each key, for errors. */
  lines: Record<string, number>;
}

/** ECC counters of `-t ecc`; null when the tool printed NA or did not print them. */
export interface NpuSmiEcc {
  ddrSingleBit: number | null;
  ddrDoubleBit: number | null;
  hbmSingleBit: number | null;
  hbmDoubleBit: number | null;
}

/** A typed view of one `npu-smi info -t <type>` output. */
export interface NpuSmiInfoRecord {
  type: NpuSmiInfoType;
  /** `NPU ID` when printed (health output does not print it). */
  npu: number | null;
  /** `Chip Count` when printed. */
  chipCount: number | null;
  /** Every block in order; the first one holds the card-level keys (`NPU ID`, `Chip Count`). */
  sections: NpuSmiSection[];
  /** `Health Status` (health). */
  health: string | null;
  /** `Error Code` split into hex codes, [] for NA (health). */
  errorCodes: string[];
  /** `Error Information`, continuation lines joined with '; ' (health). */
  errorInformation: string | null;
  /** Counters of `-t ecc`, null for other types. */
  ecc: NpuSmiEcc | null;
  /** Card power from the MCU: `Power Dissipation(W)` (-t power) or `NPU Real-time Power(W)` (-t common). */
  mcuPowerW: number | null;
  /** Per-chip temperature (-t common), keyed by chip id. */
  chipTemperatures: Record<number, number | null>;
  /** `PCIe Bus Info` (board). */
  busId: string | null;
}

/** Reads one `key : value` line (split at its first colon); an empty key continues the previous value. */
function kvLine(line: string): { key: string; value: string } | null {
  const colon = line.indexOf(':');
  if (colon < 0) return null;
  return { key: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() };
}

/** Splits key : value text into blank-line separated blocks; a line that is neither is an error. */
function readSections(lines: readonly string[]): NpuSmiSection[] {
  const sections: NpuSmiSection[] = [];
  let current: NpuSmiSection | undefined;
  let lastKey: string | undefined;
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') {
      current = undefined;
      continue;
    }
    const kv = kvLine(line);
    if (!kv) throw new ParseError(`expected 'key : value', found ${quoted(line.trim())}`, index + 1);
    if (kv.key === '' && lastKey !== undefined) {
      // Continuation of a multi-line value (health's Error Information); it may follow a blank.
      const owner = current ?? sections[sections.length - 1];
      if (owner) owner.fields[lastKey] = `${owner.fields[lastKey] ?? ''}; ${kv.value}`;
      continue;
    }
    if (!current) {
      current = { chip: null, chipName: null, fields: {}, lines: {} };
      sections.push(current);
    }
    current.fields[kv.key] = kv.value;
    current.lines[kv.key] = index + 1;
    lastKey = kv.key;
    if (kv.key === 'Chip ID') current.chip = requireNumber(kv.value, kv.key, index + 1, NO_UNIT);
    if (kv.key === 'Chip Name') current.chipName = kv.value;
  }
  return sections;
}

/** Guesses the `-t` type from the keys present. */
function infoType(keys: ReadonlySet<string>): NpuSmiInfoType {
  const has = (re: RegExp): boolean => [...keys].some((k) => re.test(k));
  if (keys.has('Health Status')) return 'health';
  if (has(/Bit Error Count/)) return 'ecc';
  if (keys.has('Power Dissipation(W)')) return 'power';
  if (keys.has('Product Type')) return 'product';
  if (has(/^Aicore Freq/) || keys.has('NPU Real-time Power(W)')) return 'common';
  if (has(/Capacity\(MB\)$/)) return 'usages';
  if (keys.has('Software Version') || keys.has('Chip Type') || keys.has('Board ID')) return 'board';
  return 'unknown';
}

/** First value of `key` in any section. */
function find(sections: readonly NpuSmiSection[], key: string): string | undefined {
  for (const section of sections) if (key in section.fields) return section.fields[key];
  return undefined;
}

/** A numeric field of a section: NA is null; text or a unit (the key carries it) names the line. */
function sectionNumber(section: NpuSmiSection, key: string): number | null {
  const text = section.fields[key];
  return text === undefined ? null : requireNumber(text, key, section.lines[key] ?? 1, NO_UNIT);
}

/** The first value of a numeric `key` in any section. */
function findNumber(sections: readonly NpuSmiSection[], key: string): number | null {
  const section = sections.find((s) => key in s.fields);
  return section === undefined ? null : sectionNumber(section, key);
}

function readEcc(sections: readonly NpuSmiSection[], onOutOfRange: OnOutOfRange | undefined): NpuSmiEcc {
  return {
    ddrSingleBit: boundReading(
      findNumber(sections, 'DDR Single Bit Error Count'),
      'ddr.ecc_sbe',
      onOutOfRange,
    ),
    ddrDoubleBit: boundReading(
      findNumber(sections, 'DDR Double Bit Error Count'),
      'ddr.ecc_dbe',
      onOutOfRange,
    ),
    hbmSingleBit: boundReading(
      findNumber(sections, 'HBM Single Bit Error Count'),
      'hbm.ecc.single_bit',
      onOutOfRange,
    ),
    hbmDoubleBit: boundReading(
      findNumber(sections, 'HBM Double Bit Error Count'),
      'hbm.ecc.double_bit',
      onOutOfRange,
    ),
  };
}

/**
 * Card power: `-t power` prints it in the MCU block, `-t common` as NPU Real-time Power. One
 * out of range is told and gives way to the other.
 */
function readMcuPower(
  sections: readonly NpuSmiSection[],
  onOutOfRange: OnOutOfRange | undefined,
): number | null {
  const common = boundReading(findNumber(sections, 'NPU Real-time Power(W)'), 'mcu_power_w', onOutOfRange);
  if (common !== null) return common;
  return boundReading(findNumber(sections, 'Power Dissipation(W)'), 'mcu_power_w', onOutOfRange);
}

/** Hex fault codes of `Error Code` (`A4025021 8C03A000`); NA gives []. */
function readErrorCodes(text: string | undefined, line: number): string[] {
  if (text === undefined || isNullCell(text)) return [];
  const codes = text.split(/[\s,]/).filter((c) => c !== '');
  const bad = codes.find((code) => !/^(0x)?[0-9A-Fa-f]{1,16}$/.test(code));
  if (bad !== undefined) throw new ParseError(`Error Code: ${quoted(bad)} is not a hex fault code`, line);
  return codes.map((code) => code.replace(/^0x/i, '').toUpperCase());
}

/**
 * Parses one `npu-smi info -t <type> -i <id> [-c <chip>]` output (TAB- or space-indented
 * `key : value` lines, blocks separated by blank lines, `Chip ID` at the start or the end of
 * its block) into a typed record. The agent merges it into the table's snapshot: health error
 * codes, ECC counters, 310P MCU card power. A reading out of range (ECC counts, power, chip
 * temperatures) reads as null.
 */
export function parseNpuSmiInfo(text: string, options: ReadingOptions = {}): NpuSmiInfoRecord {
  const { onOutOfRange } = options;
  const lines = splitLines(text);
  checkNpuSmiToolError(lines);
  const sections = readSections(lines);
  if (sections.length === 0) throw new ParseError('empty npu-smi output', 1);
  const keys = new Set(sections.flatMap((s) => Object.keys(s.fields)));
  const type = infoType(keys);
  const errorLine = lines.findIndex((line) => /^\s*Error Code\s*:/.test(line)) + 1;
  const temps: Record<number, number | null> = {};
  for (const s of sections)
    if (s.chip !== null && 'Temperature(C)' in s.fields)
      temps[s.chip] = boundReading(sectionNumber(s, 'Temperature(C)'), 'temperature', onOutOfRange);
  const info = find(sections, 'Error Information');
  const bus = find(sections, 'PCIe Bus Info');
  return {
    type,
    npu: findNumber(sections, 'NPU ID'),
    chipCount: findNumber(sections, 'Chip Count'),
    sections,
    health: find(sections, 'Health Status') ?? null,
    errorCodes: readErrorCodes(find(sections, 'Error Code'), errorLine),
    errorInformation: info === undefined || isNullCell(info) ? null : info,
    ecc: type === 'ecc' ? readEcc(sections, onOutOfRange) : null,
    mcuPowerW: readMcuPower(sections, onOutOfRange),
    chipTemperatures: temps,
    busId: bus === undefined || isNullCell(bus) ? null : bus,
  };
}

// ---------------------------------------------------------------------------------------------
// `npu-smi info -m`

/** One row of `npu-smi info -m`. */
export interface NpuSmiMapping {
  npu: number;
  chip: number;
  /** Chip Logic ID (the device id that /dev/davinci<N> uses); null for the MCU row ('-'). */
  logicId: number | null;
  name: string;
}

const MAPPING_HEADER = /^\s*NPU ID\s+Chip ID\s+Chip Logic ID\s+Chip Name\s*$/;

/** Parses `npu-smi info -m` into its rows; a row that is not `npu chip logic name` is an error. */
export function parseNpuSmiMapping(text: string): NpuSmiMapping[] {
  const lines = splitLines(text);
  checkNpuSmiToolError(lines);
  const header = lines.findIndex((line) => MAPPING_HEADER.test(line));
  if (header < 0)
    throw new ParseError(
      "not `npu-smi info -m` output (no 'NPU ID  Chip ID  Chip Logic ID  Chip Name' header)",
      1,
    );
  const rows: NpuSmiMapping[] = [];
  for (let i = header + 1; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '') continue;
    const {
      words: [npu = '', chip = '', logic = ''],
      rest: name,
    } = leadingWords(line, 3);
    if (!/^\d+$/.test(npu) || !/^\d+$/.test(chip) || !/^(?:\d+|-)$/.test(logic) || name === '')
      throw new ParseError(`expected 'NPU-ID Chip-ID Logic-ID Name', found ${quoted(line)}`, i + 1);
    rows.push({ npu: Number(npu), chip: Number(chip), logicId: logic === '-' ? null : Number(logic), name });
  }
  return rows;
}

/** Which npu-smi output this is: the table, `-m`, one of the `-t` types, or unknown. */
export function detectNpuSmiKind(lines: readonly string[]): 'table' | 'mapping' | NpuSmiInfoType {
  if (findNpuSmiHeader(lines) >= 0) return 'table';
  if (lines.some((line) => MAPPING_HEADER.test(line))) return 'mapping';
  const keys = new Set<string>();
  for (const line of lines) {
    const kv = line.trim() === '' ? null : kvLine(line);
    if (kv === null && line.trim() !== '') return 'unknown';
    if (kv?.key) keys.add(kv.key);
  }
  return keys.size === 0 ? 'unknown' : infoType(keys);
}
